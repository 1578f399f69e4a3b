"""A fault injector around the real Neo4j driver: the next statements fail as a lost server, or stall.

    flaky = FlakyDriver(Neo4jStore.from_settings(settings).driver)
    store = Neo4jStore(settings, flaky)          # the real store, over the real driver, through the injector
    flaky.fail_next(1)                           # the next query raises neo4j's ServiceUnavailable
    flaky.fail_next(1, transient=True)           # ... or a TransientError (retryable, the server still up)
    flaky.fail_next(1, refused=True)             # ... or an AuthError (the server refuses the credentials)
    flaky.stall_next(1, seconds=3.0)             # the next query waits before it runs
    flaky.break_stream_after(1)                  # the next auto-commit read is lost after its first record

Both ways the store runs statements are covered: managed ones (`execute_query`) and auto-commit ones
(a session's `run`, the store's reads). Every other call goes to the real driver unchanged, so the
store's own translation of driver errors (ServiceUnavailable -> BackendUnavailableError) and everything
above it run for real. The counters are guarded by a lock: tests arm them from their thread while an
API server's loop runs in another.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import neo4j
from neo4j.exceptions import AuthError, ServiceUnavailable, TransientError


class FlakyDriver:
    def __init__(self, driver: neo4j.AsyncDriver) -> None:
        self._driver = driver
        self._lock = threading.Lock()
        self._failures = 0
        self._transient = False
        self._refused = False
        self._stalls = 0
        self._stall_s = 0.0
        self._break_after: int | None = None
        self.injected = 0

    def fail_next(self, count: int, *, transient: bool = False, refused: bool = False) -> None:
        with self._lock:
            self._failures, self._transient, self._refused = count, transient, refused

    def stall_next(self, count: int, *, seconds: float) -> None:
        with self._lock:
            self._stalls, self._stall_s = count, seconds

    def break_stream_after(self, records: int) -> None:
        """The next auto-commit statement hands over `records` records, then its connection is lost."""
        with self._lock:
            self._break_after = records

    def _take_break(self) -> int | None:
        with self._lock:
            records, self._break_after = self._break_after, None
            if records is not None:
                self.injected += 1
            return records

    async def _inject(self) -> None:
        """Raise or stall here if armed: called before each statement reaches the real driver."""
        with self._lock:
            fail = self._failures > 0
            stall = self._stalls > 0
            if fail:
                self._failures -= 1
                self.injected += 1
            if stall:
                self._stalls -= 1
        if fail and self._transient:
            raise TransientError("injected: a transient failure, the server still up")
        if fail and self._refused:
            raise AuthError("injected: the client is unauthorized due to authentication failure")
        if fail:
            raise ServiceUnavailable("injected: the connection to Neo4j was lost")
        if stall:
            await asyncio.sleep(self._stall_s)

    async def execute_query(self, *args: Any, **kwargs: Any) -> Any:
        await self._inject()
        return await self._driver.execute_query(*args, **kwargs)

    def session(self, **kwargs: Any) -> _FlakySession:
        """A real session whose statements (the store's auto-commit reads) go through the injector."""
        return _FlakySession(self, self._driver.session(**kwargs))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._driver, name)


class _FlakySession:
    def __init__(self, flaky: FlakyDriver, session: neo4j.AsyncSession) -> None:
        self._flaky = flaky
        self._session = session

    async def __aenter__(self) -> _FlakySession:
        await self._session.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self._session.__aexit__(*exc_info)

    async def run(self, *args: Any, **kwargs: Any) -> Any:
        await self._flaky._inject()
        result = await self._session.run(*args, **kwargs)
        records = self._flaky._take_break()
        return result if records is None else _BreakingResult(result, records)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)


class _BreakingResult:
    """A real result whose stream is lost (ServiceUnavailable) after its first `records` records, or at its
    end when it has no more."""

    def __init__(self, result: neo4j.AsyncResult, records: int) -> None:
        self._result = result
        self._records = records

    async def __aiter__(self) -> Any:
        handed = 0
        async for record in self._result:
            if handed == self._records:
                raise ServiceUnavailable("injected: the connection to Neo4j was lost mid-stream")
            handed += 1
            yield record
        raise ServiceUnavailable("injected: the connection to Neo4j was lost at the end of the stream")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._result, name)
