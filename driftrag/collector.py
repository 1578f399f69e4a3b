"""Pausing Python's cyclic garbage collector around bulk work that makes no reference cycles."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic collector for a synchronous stretch of bulk work.

    Work that builds many containers which all live until it ends (a million-relationship graph, a
    2,000-row answer) triggers collections that walk them all and free nothing, since no cycle is
    made: on such work they cost as much as the work itself. Reference counting still frees
    everything; the collector runs again afterwards. Use it only around code without `await`, so no
    other task's work runs inside the pause.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
