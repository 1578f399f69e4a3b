"""What a store knows about its Neo4j: up, or down since a failure, so a lost server is reported at once.

Without this, every query of a run (and every HTTP request) that meets a dead server waits for the
driver's own retries before failing, and a run with many queries in flight fails slowly and noisily.
After a failure that a fresh connection confirms, the server is *known down*: calls fail at once with
`BackendUnavailableError`, and at most once every `probe_interval_s` one call goes through as the
probe; its success clears the state. A dropped connection to a live server is only a transient error.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from driftrag.errors import BackendUnavailableError

log = logging.getLogger(__name__)


class BackendHealth:
    """Known-down state of one Neo4j, shared by everything that uses one store."""

    def __init__(self, probe_interval_s: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.probe_interval_s = probe_interval_s
        self._clock = clock
        self._lock = threading.Lock()
        self._down_since: float | None = None
        self._last_probe = 0.0
        self._reason = ""

    @property
    def known_down(self) -> bool:
        return self._down_since is not None

    def check(self) -> None:
        """Raise at once while the server is known down, except for one probe per interval."""
        with self._lock:
            if self._down_since is None:
                return
            now = self._clock()
            if now - self._last_probe >= self.probe_interval_s:
                self._last_probe = now  # this call is the probe
                return
            down_for = now - self._down_since
            next_probe = self.probe_interval_s - (now - self._last_probe)
        raise BackendUnavailableError(
            f"Neo4j is unreachable (down for {down_for:.0f} s; next check in {next_probe:.0f} s): {self._reason}"
        )

    def failed(self, reason: str) -> None:
        with self._lock:
            newly_down = self._down_since is None
            if newly_down:
                self._down_since = self._clock()
            self._last_probe = self._clock()
            self._reason = reason
        if newly_down:  # once per outage, not once per failed call
            log.warning(
                "Neo4j is unreachable; calls fail at once, checking again every %g s: %s", self.probe_interval_s, reason
            )

    def succeeded(self) -> None:
        with self._lock:
            was_down = self._down_since is not None
            self._down_since = None
            self._reason = ""
        if was_down:
            log.warning("Neo4j is reachable again")
