"""Offline query latency per mode on Alice, in one warm process: p50 / p95 / max per mode.

Ingests Alice in the offline extractive mode into a benchmark kb (or reuses that kb when it already
holds chunks), then asks every question of a question set with each mode, through the same adapter
the evaluation harness uses (`driftrag.eval.methods.run_method`), and prints per mode the median,
95th percentile (nearest rank), maximum and mean wall time, and the errors. One untimed question per
mode comes first so the measured ones find the process warm (language data parsed, embedder loaded).
Questions are interleaved across modes so machine noise spreads over all of them.

The corpus is `--corpus PATH`, else the pinned copy of `driftrag data fetch alice` under
`<DRIFTRAG_HOME>/corpora` (fetched if missing). Neo4j is `NEO4J_URI` or the local one on
`DRIFTRAG_NEO4J_PORT`.

    .venv/bin/python benchmarks/query_latency.py --corpus alice_in_wonderland.txt [--kb bench-latency-alice]
        [--questions data/questions/alice.jsonl] [--modes basic,local,entity,drift] [--reingest]
        [--record]   # replace the "Offline query latency" table of docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import statistics
import sys
import time
from pathlib import Path

from driftrag.corpora import default_dest, fetch
from driftrag.eval.methods import Method, parse_methods, run_method
from driftrag.eval.questions import load_questions
from driftrag.facade import DriftRAG
from driftrag.settings import Settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for benchmarks.record

from benchmarks.record import add_record_option, record

REPO = Path(__file__).resolve().parents[1]
DEFAULT_QUESTIONS = REPO / "data" / "questions" / "alice.jsonl"


def percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile: the smallest value with at least `share` of the values at or below it."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def corpus_path(args: argparse.Namespace, settings: Settings) -> Path:
    if args.corpus is not None:
        if not args.corpus.is_file():
            raise SystemExit(f"--corpus {args.corpus}: no such file")
        return args.corpus
    return fetch("alice", dest=default_dest(settings.home)).path


async def ensure_ingested(rag: DriftRAG, args: argparse.Namespace) -> None:
    if args.reingest:
        await rag.delete_kb(args.kb)
    counts = await rag.stats(args.kb)
    if counts.chunks:
        print(f"reusing kb {args.kb}: {counts}")
        return
    corpus = corpus_path(args, rag.settings)
    started = time.monotonic()
    await rag.ingest(args.kb, paths=[corpus])
    seconds = time.monotonic() - started
    print(f"ingested {corpus.name} into kb {args.kb} in {seconds:.1f} s: {await rag.stats(args.kb)}")


async def run(args: argparse.Namespace) -> None:
    questions = [item.question for item in load_questions(args.questions)]
    if args.limit:
        questions = questions[: args.limit]
    modes: list[Method] = parse_methods(args.modes)
    async with DriftRAG(Settings(llm_provider="offline")) as rag:
        await ensure_ingested(rag, args)
        deps = rag.query_deps()
        for mode in modes:  # warm-up, not timed
            await run_method(deps, args.kb, mode, questions[0])
        seconds: dict[Method, list[float]] = {mode: [] for mode in modes}
        errors: dict[Method, list[str]] = {mode: [] for mode in modes}
        for question in questions:
            for mode in modes:
                output = await run_method(deps, args.kb, mode, question)
                seconds[mode].append(output.seconds)
                if output.error:
                    errors[mode].append(output.error)
        described = rag.describe()
    print(
        f"{described}; {len(questions)} questions from {args.questions.name}; "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end"
    )
    print(f"{'mode':<8}{'p50 s':>8}{'p95 s':>8}{'max s':>8}{'mean s':>8}  errors")
    for mode in modes:
        values = seconds[mode]
        print(
            f"{mode:<8}{statistics.median(values):>8.2f}{percentile(values, 0.95):>8.2f}"
            f"{max(values):>8.2f}{statistics.fmean(values):>8.2f}  {len(errors[mode])}"
        )
        for error in sorted(set(errors[mode])):
            print(f"        error: {error}")
    if args.record:
        rows = [
            [
                mode,
                f"{statistics.median(seconds[mode]):.2f} / {percentile(seconds[mode], 0.95):.2f} s",
                f"{max(seconds[mode]):.2f} s",
                str(len(errors[mode])),
            ]
            for mode in modes
        ]
        note = f"{described}; {len(questions)} questions from `{args.questions.name}`, kb `{args.kb}`, warm process."
        record("query-latency", "Offline query latency", ["mode", "p50 / p95", "max", "errors"], rows, note=note)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, help="Alice's text (default: `driftrag data fetch alice`).")
    parser.add_argument("--kb", default="bench-latency-alice", help="Benchmark kb, reused when it holds chunks.")
    parser.add_argument("--questions", type=Path, default=DEFAULT_QUESTIONS, help="Question set (JSONL).")
    parser.add_argument("--modes", default="basic,local,entity,drift", help="Comma-separated query modes.")
    parser.add_argument("--limit", type=int, default=0, help="Only the first N questions (0: all).")
    parser.add_argument("--reingest", action="store_true", help="Delete the kb and ingest the corpus again.")
    add_record_option(parser)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
