"""The e5 engine on several cores: a batch split into single texts, run by the threads of a pool.

All threads share one `E5Engine` (read-only arrays). While a pool runs, BLAS is held at one thread per
call: each pool thread then keeps one core busy with its own text, where two threads each asking BLAS
for both cores made them wait on each other (Alice's chunks on 2 cores: 0.43 ms of wall per token with
one BLAS thread per call, 0.82 with two, 0.59 for one text at a time over two BLAS threads). A text's
vector does not depend on the rest of its batch, so the split changes no vector, and the parts are put
back in input order.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from threadpoolctl import threadpool_limits

from driftrag.providers.e5_engine import E5Engine

# One text per part: the threads finish together (18 report texts over 2 threads are 9 texts each).
PART_SIZE = 1


def split_parts(texts: list[str], part_size: int = PART_SIZE) -> list[list[str]]:
    return [texts[start : start + part_size] for start in range(0, len(texts), part_size)]


class _OneBlasThread:
    """BLAS at one thread from the first active pool call to the end of the last, then as it was.

    BLAS's thread count belongs to the process, so the count of active calls is the process's too:
    with a count per pool, one pool ending would give back the cores another is still running on.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active = 0
        self._limits: threadpool_limits | None = None

    def __enter__(self) -> None:
        with self._lock:
            if self._active == 0:
                self._limits = threadpool_limits(limits=1, user_api="blas")
            self._active += 1

    def __exit__(self, *_exc: object) -> None:
        with self._lock:
            self._active -= 1
            if self._active == 0 and self._limits is not None:
                self._limits.restore_original_limits()
                self._limits = None


ONE_BLAS_THREAD = _OneBlasThread()


class EnginePool:
    """`workers` threads sharing one engine (built on first use by `engine_factory`)."""

    def __init__(self, workers: int, engine_factory: Callable[[], E5Engine] = E5Engine) -> None:
        if workers < 1:
            raise ValueError(f"e5 engine workers must be at least 1, got {workers}")
        self.workers = workers
        self._engine_factory = engine_factory
        self._engine: E5Engine | None = None
        self._engine_lock = threading.Lock()
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="e5")

    def engine(self) -> E5Engine:
        with self._engine_lock:
            if self._engine is None:
                self._engine = self._engine_factory()
            return self._engine

    def _run(self, texts: list[str], is_query: bool) -> np.ndarray:
        return self.engine().encode(texts, is_query=is_query)

    def encode(self, texts: list[str], *, is_query: bool) -> np.ndarray:
        """(len(texts), 384) vectors in input order; blocks the calling thread until every part is done."""
        if self.workers == 1 or len(texts) == 1:
            # In the calling thread, and BLAS may spread each product over the cores.
            return self._run(texts, is_query)
        with ONE_BLAS_THREAD:
            futures = [self._executor.submit(self._run, part, is_query) for part in split_parts(texts)]
            return np.vstack([future.result() for future in futures])

    def close(self) -> None:
        self._executor.shutdown(wait=True)
