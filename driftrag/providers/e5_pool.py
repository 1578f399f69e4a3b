"""The e5 engine on several cores: a batch split into single texts, run by the threads of a pool.

All threads share one `E5Engine` (read-only arrays). Every encode runs on a pool thread, and sets the
process's OpenBLAS to one thread first, for good (numpy's OpenBLAS, built on pthreads, has no per-thread
count: its "local" setter changes the process's count too):
- a product split over two BLAS threads has other low bits (5e-8 here) than one thread, and a vector
  must depend on its text alone, not on what the process or another thread set;
- each pool thread keeps one core busy with its own text (Alice's chunks on 2 cores: 0.43 ms of wall
  per token with two threads, against 0.59 for one text at a time over two BLAS threads, and 0.82 for
  two threads each asking BLAS for both cores);
- the count is not given back after a batch: raising it again woke OpenBLAS's own threads, whose busy
  waits took the cores from the engine (an offline ingestion of Alice went from 34 s to 199 s).
So a process that embeds offline runs its other BLAS products on one thread too; the embedder uses the
cores through its own threads. A text's vector does not depend on the rest of its batch, so the split
changes no vector, and the parts are put back in input order.
"""

from __future__ import annotations

import ctypes
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from threadpoolctl import threadpool_info

from driftrag.providers.e5_engine import E5Engine

log = logging.getLogger(__name__)

# One text per part: the threads finish together (18 report texts over 2 threads are 9 texts each).
PART_SIZE = 1


def split_parts(texts: list[str], part_size: int = PART_SIZE) -> list[list[str]]:
    return [texts[start : start + part_size] for start in range(0, len(texts), part_size)]


def openblas_thread_setters() -> list[Callable[[int], int]]:
    """`openblas_set_num_threads_local` of each OpenBLAS loaded (from any thread; returns the previous count)."""
    setters = []
    for library in threadpool_info():
        if library.get("internal_api") != "openblas":
            continue
        try:
            setter = ctypes.CDLL(library["filepath"]).openblas_set_num_threads_local
        except (OSError, AttributeError):
            continue
        setter.argtypes, setter.restype = [ctypes.c_int], ctypes.c_int
        setters.append(setter)
    if not setters:
        log.debug("e5 engine: no OpenBLAS found; its products keep the process's BLAS threads")
    return setters


class EnginePool:
    """`workers` threads sharing one engine (built on first use by `engine_factory`)."""

    def __init__(self, workers: int, engine_factory: Callable[[], E5Engine] = E5Engine) -> None:
        if workers < 1:
            raise ValueError(f"e5 engine workers must be at least 1, got {workers}")
        self.workers = workers
        self._engine_factory = engine_factory
        self._engine: E5Engine | None = None
        self._engine_lock = threading.Lock()
        self._blas_setters: list[Callable[[int], int]] | None = None
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="e5")

    def engine(self) -> E5Engine:
        with self._engine_lock:
            if self._engine is None:
                self._engine = self._engine_factory()
                self._blas_setters = openblas_thread_setters()
            return self._engine

    def _run(self, texts: list[str], is_query: bool) -> np.ndarray:
        engine = self.engine()
        for setter in self._blas_setters or ():
            setter(1)  # again per part: someone may have raised it since
        return engine.encode(texts, is_query=is_query)

    def encode(self, texts: list[str], *, is_query: bool) -> np.ndarray:
        """(len(texts), 384) vectors in input order; blocks the calling thread until every part is done."""
        futures = [self._executor.submit(self._run, part, is_query) for part in split_parts(texts)]
        return np.vstack([future.result() for future in futures])

    def close(self) -> None:
        self._executor.shutdown(wait=True)
