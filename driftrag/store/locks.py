"""A write lock per knowledge base, held in Neo4j, so processes that write one kb take turns.

Two modes:

- **exclusive** (the default): deletes, and the kb-wide rebuild of the derived layers (entities,
  communities, reports, their vectors). Two rebuilds side by side could each clear the kb's `stale`
  flag while the other's chunks were not yet in its merge, and a delete must not race an ingestion.
- **shared**: the per-document part of an ingestion (load, chunk, extract, checkpoint, embed chunks).
  Its writes are idempotent MERGEs keyed by content hashes, so any number of processes may run it at
  once on different documents of one kb; none may run while an exclusive holder works, and an
  exclusive acquisition waits until every shared holder is done. While it waits, no new shared holder
  is let in (writer preference), so a stream of ingestion workers cannot starve the kb-wide step.

    async with KbLock(store, "alice", ttl_s=60):               # delete, rebuild
        ...
    async with KbLock(store, "alice", ttl_s=60, shared=True):  # documents of one ingestion worker
        ...

The exclusive lock is the owner and expiry of a `__KbLock__` node (unique per kb); each shared holder
has a `__KbLease__` node with its own expiry; both expiries are on the server's clock, renewed every
third of the TTL while held, and cleared on release. A holder that dies stops renewing, so its hold
expires after at most `ttl_s` and the others go on. The nodes of a kb that does not exist (deleted, or
never created because its ingestion was refused) are removed on release, once nobody holds or waits.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import socket
import time
from collections.abc import Callable
from datetime import UTC, datetime
from types import TracebackType

from driftrag.errors import BackendUnavailableError
from driftrag.models.identifiers import lock_owner, validate_kb_id
from driftrag.store.cypher import locks as cy
from driftrag.store.neo4j_store import Neo4jStore

log = logging.getLogger(__name__)

DEFAULT_POLL_S = 1.0


# A `lock_owner` id, alone or inside the description of a shared holder or waiter.
_OWNER = re.compile(r"(?P<host>[^\s:()]+):(?P<pid>\d+):[0-9a-f]{8}\b")


def wait_message(kb: str, holder: str, expires_in_ms: int, *, now: float | None = None) -> str:
    """What a writer that has to wait says at once: who holds the kb (its owner as stored: host, pid and
    a random part), when that hold expires (seconds left, and the time), and whether it is a process of
    this host that is not running any more, whose hold nobody renews."""
    seconds = max(expires_in_ms, 0) / 1000
    at = datetime.fromtimestamp((time.time() if now is None else now) + seconds, UTC)
    message = (
        f"knowledge base {kb!r} is being written by another process ({holder}); waiting for it to finish (its "
        f"lock expires in {seconds:.0f} s, at {at:%H:%M:%S} UTC, unless renewed)"
    )
    dead = _dead_local_pid(holder)
    if dead is not None:
        message += f"; process {dead} of this host holding it is not running: the wait ends when it expires"
    return message


def _dead_local_pid(holder: str) -> int | None:
    """The pid in a `lock_owner` id within `holder` when it is of this host and no such process runs."""
    found = _OWNER.search(holder)
    if found is None or found["host"] != socket.gethostname():
        return None
    pid = int(found["pid"])
    try:
        os.kill(pid, 0)  # signal 0: only whether the process exists
    except ProcessLookupError:
        return pid
    except OSError:  # it exists, of another user
        return None
    return None


class KbLock:
    """`async with KbLock(store, kb, ttl_s=…)`: exclusive writing of one kb across processes."""

    def __init__(
        self,
        store: Neo4jStore,
        kb: str,
        *,
        ttl_s: float,
        poll_s: float = DEFAULT_POLL_S,
        on_wait: Callable[[str], None] | None = None,
        owner: str | None = None,
        shared: bool = False,
    ) -> None:
        self.store = store
        self.kb = validate_kb_id(kb)
        self.ttl_ms = max(int(ttl_s * 1000), 1)
        self.poll_s = poll_s
        self.owner = owner or lock_owner()
        self.waited = False
        self.shared = shared
        self._on_wait = on_wait or log.warning
        self._renewer: asyncio.Task[None] | None = None

    async def try_acquire(self) -> tuple[bool, str, int]:
        """(acquired, current owner, ms until it expires)."""
        statement = cy.ACQUIRE_KB_LEASE if self.shared else cy.ACQUIRE_KB_LOCK
        rows = await self.store.write(statement, kb=self.kb, owner=self.owner, ttl_ms=self.ttl_ms)
        return rows[0]["acquired"], rows[0]["owner"], rows[0]["expires_in_ms"]

    async def acquire(self) -> None:
        await self.store.create_schema_object(cy.CREATE_KB_LOCK_CONSTRAINT)
        try:
            while True:
                acquired, holder, expires_in_ms = await self.try_acquire()
                if acquired:
                    break
                if not self.waited:
                    self.waited = True
                    self._on_wait(wait_message(self.kb, holder, expires_in_ms))
                await asyncio.sleep(self.poll_s)
        except BaseException:
            if self.waited and not self.shared:
                with contextlib.suppress(BackendUnavailableError):
                    await asyncio.shield(self.store.write(cy.WITHDRAW_KB_WAITER, kb=self.kb, owner=self.owner))
            raise
        self._renewer = asyncio.create_task(self._renew(), name=f"kb-lock-{self.kb}")

    async def _renew(self) -> None:
        while True:
            await asyncio.sleep(self.ttl_ms / 3000)
            try:
                statement = cy.RENEW_KB_LEASE if self.shared else cy.RENEW_KB_LOCK
                rows = await self.store.write(statement, kb=self.kb, owner=self.owner, ttl_ms=self.ttl_ms)
            except BackendUnavailableError:
                continue  # the write itself will fail and say so; the lock expires if this run dies
            if not rows[0]["renewed"]:
                log.warning("the write lock of knowledge base %r was lost (expired or deleted)", self.kb)
                return

    async def release(self) -> None:
        if self._renewer is not None:
            self._renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._renewer
            self._renewer = None
        try:
            await self.store.write(
                cy.RELEASE_KB_LEASE if self.shared else cy.RELEASE_KB_LOCK, kb=self.kb, owner=self.owner
            )
            # A kb that does not exist (a refused ingestion, a delete) keeps no lock nodes.
            await self.store.write(cy.DISCARD_ORPHAN_KB_LOCK, kb=self.kb)
        except BackendUnavailableError as exc:  # the lock expires by itself
            log.info("could not release the write lock of %r: %s", self.kb, exc)

    async def __aenter__(self) -> KbLock:
        await self.acquire()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.release()


class KbLocks:
    """The lock role of the Neo4j store: `hold(kb, ttl_s=…, shared=…)` gives one kb's `KbLock`."""

    def __init__(self, store: Neo4jStore) -> None:
        self.store = store

    def hold(
        self, kb: str, *, ttl_s: float, on_wait: Callable[[str], None] | None = None, shared: bool = False
    ) -> KbLock:
        return KbLock(self.store, kb, ttl_s=ttl_s, on_wait=on_wait, shared=shared)

    async def discard(self, kb: str) -> None:
        """Remove a deleted kb's lock node and its expired leases and waiters, unless someone holds it."""
        await self.store.write(cy.DISCARD_KB_LOCK, kb=validate_kb_id(kb))
