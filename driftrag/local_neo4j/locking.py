"""An exclusive lock file shared by processes, with a bounded wait and a word to the user while waiting."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from driftrag.errors import DriftRAGError, LocalNeo4jError


@contextmanager
def exclusive_lock(
    path: Path,
    *,
    timeout_s: float,
    on_wait: Callable[[], None] | None = None,
    error: type[DriftRAGError] = LocalNeo4jError,
) -> Iterator[None]:
    """Hold `path` locked for the block; wait at most `timeout_s` for another holder (else `error`).

    The operating system drops the lock when its holder exits, so a crashed process never leaves it stuck.
    `on_wait` runs once, when the lock is found busy (to tell the user why nothing happens).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(path)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        if on_wait is not None:
            on_wait()
        try:
            lock.acquire(timeout=timeout_s)
        except Timeout:
            raise error(f"{path} is still locked by another driftrag process after {timeout_s:.0f} s") from None
    try:
        yield
    finally:
        lock.release()
