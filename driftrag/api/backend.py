"""`Backend`: the DriftRAG behind the API, whether Neo4j answered and the schema is in place, the per-kb
write locks and the ingestion jobs. One per app (`create_app`), on `app.state.backend`."""

from __future__ import annotations

import asyncio
import logging
import time

from driftrag.api.errors import RETRY_AFTER_UNAVAILABLE_S
from driftrag.api.jobs import IngestJobs
from driftrag.errors import BackendUnavailableError, UnsupportedServerError
from driftrag.facade import DriftRAG
from driftrag.models.server import ServerInfo, check_server_version

log = logging.getLogger("driftrag.api")

# /system answers within this, reachable or not.
_PROBE_TIMEOUT_S = 3.0


class Backend:
    """The DriftRAG behind the API, whether its schema is in place, the per-kb write locks and the
    ingestion jobs."""

    def __init__(self, rag: DriftRAG) -> None:
        self.rag = rag
        self._ready = False
        self._lock = asyncio.Lock()
        self._last_failure = float("-inf")
        self._write_locks: dict[str, asyncio.Lock] = {}
        self.jobs = IngestJobs(rag, write_lock=self.write_lock, max_pending=rag.settings.api_max_pending_jobs)

    async def start(self) -> None:
        """Connect (with the configured retries, starting the local Neo4j if NEO4J_URI is unset).

        An unreachable Neo4j does not stop the server: calls answer 503 until it is back. A server that
        answers but cannot be used (too old, another embedding dimension) does.
        """
        try:
            info = await self.rag.connect()
        except BackendUnavailableError as exc:
            self._last_failure = time.monotonic()
            log.error("Neo4j is unreachable at start-up; graph calls answer 503 until it is back: %s", exc)
            return
        self._ready = True
        log.info("connected to Neo4j %s (%s); model mode %s", info.version, info.edition, self.rag.mode)

    async def ready(self) -> None:
        """Make sure the server answered once and the schema exists; one quick try at most every few seconds."""
        if self._ready:
            return
        async with self._lock:
            if self._ready:
                return
            if time.monotonic() - self._last_failure < RETRY_AFTER_UNAVAILABLE_S:
                raise BackendUnavailableError("Neo4j was unreachable moments ago")
            try:
                await self.rag.connect(start_local=False, wait=False)
            except BackendUnavailableError:
                self._last_failure = time.monotonic()
                raise
            self._ready = True

    async def probe(self) -> ServerInfo | None:
        """The server's version now, or None when it cannot be reached or used."""
        try:
            info = await asyncio.wait_for(self.rag.server_info(), _PROBE_TIMEOUT_S)
            check_server_version(info.version)
            return info
        except (TimeoutError, BackendUnavailableError, UnsupportedServerError) as exc:
            log.info("Neo4j probe failed: %s", exc)
            return None
        except Exception as exc:  # the driver's own errors (auth, protocol): not reachable in any useful way
            log.warning("Neo4j probe failed: %r", exc)
            return None

    def write_lock(self, kb: str) -> asyncio.Lock:
        """One writer per kb: two ingestions (or an ingestion and a delete) would rebuild the same layers."""
        return self._write_locks.setdefault(kb, asyncio.Lock())
