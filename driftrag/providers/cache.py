"""On-disk cache of successful model responses, keyed by the whole request."""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

log = logging.getLogger(__name__)

_ENTRY_SUFFIX = ".json"
_TEMP_SUFFIX = ".tmp"


class CachedResponse(BaseModel):
    """What a cache entry holds: the assistant text and the token usage of the original call."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    prompt_tokens: int
    completion_tokens: int


def cache_key(
    *,
    provider: str,
    model: str,
    messages: Sequence[Mapping[str, str]],
    params: Mapping[str, Any],
) -> str:
    """sha256 of canonical JSON, so equal requests map to one entry whatever the dict order."""
    request = {
        "provider": provider,
        "model": model,
        "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
        "params": dict(params),
    }
    canonical = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class ResponseCache:
    """Entries live in `<directory>/<ab>/<key>.json`; nothing touches the disk until the first call."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        # Entries handed to a writer thread (`put_soon`) and not on disk yet: this cache reads them here.
        self._unwritten: dict[str, CachedResponse] = {}
        self._writes: set[asyncio.Future[None]] = set()

    def path_for(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}{_ENTRY_SUFFIX}"

    def get(self, key: str) -> CachedResponse | None:
        """The entry, or None when missing, unreadable or corrupt (a bad entry is only a miss)."""
        try:
            raw = self.path_for(key).read_bytes()
            return CachedResponse.model_validate_json(raw)
        except (OSError, ValidationError, ValueError):
            return None

    def put(self, key: str, value: CachedResponse) -> None:
        """Write to a temporary file in the same folder, then rename: readers never see a partial entry.

        Not fsynced: a killed process leaves the rename complete or not done, and what an OS crash could
        leave (an empty or cut entry) reads as a miss. An fsync per model call waited for the disk
        before the caller got its answer (several ms each, tens while the disk is busy)."""
        target = self.path_for(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, temp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{key[:8]}-", suffix=_TEMP_SUFFIX)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(value.model_dump_json().encode("utf-8"))
            os.replace(temp_name, target)
        except BaseException:
            Path(temp_name).unlink(missing_ok=True)
            raise

    async def aget(self, key: str) -> CachedResponse | None:
        unwritten = self._unwritten.get(key)
        if unwritten is not None:
            return unwritten
        # A miss, the common case of a first run, is one stat answered here: through the thread pool, the
        # lookups of a run's first chunks (all at once, before their calls wait for a slot) queued behind
        # each other for 40-50 ms, and the first requests left that much later. A hit is read in a thread.
        if not self.path_for(key).is_file():
            return None
        return await asyncio.to_thread(self.get, key)

    def put_soon(self, key: str, value: CachedResponse) -> None:
        """Write the entry in a thread without waiting for it: a model answer never waits for the disk
        (awaited, the thread hop and the write cost each call 2-5 ms on a busy event loop, on the path of
        every call that follows it). This cache reads the entry at once; other caches of the directory
        once it is written, about a millisecond later. `drain` waits for the writes; the event loop's
        shutdown and the interpreter's exit wait for them too. A write that fails is logged: the entry
        is then a miss, and the answer the caller got is not lost."""
        self._unwritten[key] = value
        write = asyncio.get_running_loop().run_in_executor(None, self.put, key, value)
        self._writes.add(write)
        write.add_done_callback(functools.partial(self._written, key))

    def _written(self, key: str, write: asyncio.Future[None]) -> None:
        self._writes.discard(write)
        self._unwritten.pop(key, None)  # on disk now (or failed: a miss, as an unreadable entry is)
        if not write.cancelled() and write.exception() is not None:
            log.warning("a model answer could not be written to the cache in %s: %s", self.directory, write.exception())

    async def drain(self) -> None:
        """Wait until every entry handed to `put_soon` so far is written (or failed)."""
        while self._writes:
            await asyncio.gather(*self._writes, return_exceptions=True)
