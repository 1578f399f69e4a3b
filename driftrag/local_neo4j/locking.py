"""An exclusive lock file shared by processes (fcntl.flock), with a bounded wait."""

from __future__ import annotations

import fcntl
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from driftrag.errors import LocalNeo4jError

_POLL_S = 0.2


@contextmanager
def exclusive_lock(path: Path, *, timeout_s: float, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold `path` locked for the block; wait at most `timeout_s` for another holder.

    The kernel drops the lock when its holder exits, so a crashed process never leaves it stuck.
    `on_wait` runs once, when the lock is found busy (to tell the user why nothing happens).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        deadline = time.monotonic() + timeout_s
        told = False
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not told and on_wait is not None:
                    on_wait()
                    told = True
                if time.monotonic() >= deadline:
                    raise LocalNeo4jError(
                        f"{path} is still locked by another driftrag process after {timeout_s:.0f} s"
                    ) from None
                time.sleep(_POLL_S)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
