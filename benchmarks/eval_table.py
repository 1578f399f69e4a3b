"""Regenerate the evaluation table of docs/benchmarks.md: ingest, run the five methods, print the table.

Ingests the corpus into a kb (or reuses it when it already holds chunks), runs the evaluation harness
(`driftrag.eval.runner.run_eval`) with drift, global, local, basic and entity on a question set into a
fresh results folder, writes its report (`driftrag.eval.report.build_report`), and prints the exact
evidence recall by method and question type at the budget, and each method's median seconds; with
`--record` that table replaces the evaluation table of docs/benchmarks.md (`benchmarks/record.py`).
The model mode is the active one (offline without OPENAI_API_KEY). Neo4j is `NEO4J_URI` or the
local one on `DRIFTRAG_NEO4J_PORT`.

    .venv/bin/python benchmarks/eval_table.py --corpus alice_in_wonderland.txt [--kb eval-alice]
        [--questions data/questions/alice.jsonl] [--split report] [--budget 4000] [--out results/eval-table]
        [--record]

`--split` runs one fixed half of the question set (`tune`: choose settings on it; `report`, the default
for the published table: never tuned on) or `all`; the table says which.

`make eval-table CORPUS=path/to/alice_in_wonderland.txt` runs it with `--record`.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import time
from pathlib import Path

from driftrag.corpora import default_dest, fetch
from driftrag.eval.methods import parse_methods
from driftrag.eval.questions import SPLIT_CHOICES
from driftrag.eval.records import load_run
from driftrag.eval.report import build_report, recall_cells
from driftrag.eval.runner import run_eval
from driftrag.eval.summary import summarize
from driftrag.facade import DriftRAG
from driftrag.settings import Settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for benchmarks.record

from benchmarks.record import add_record_option, record

REPO = Path(__file__).resolve().parents[1]
NAME, TITLE = "eval-table", "Evaluation: exact evidence recall"
METHODS = "drift,global,local,basic,entity"


def eval_table(results: Path, budget: int, described: str, corpus: str) -> tuple[list[str], list[list[str]], str]:
    """The recall table's columns and rows, and the note that says what it measured."""
    manifest, questions, rows = load_run(results)
    summary = summarize(manifest, questions, rows, budget)
    seconds = {method: cost.seconds_median for method, cost in summary.cost.items()}
    columns, table = recall_cells(summary.metrics)
    note = (
        f"Exact evidence recall at {budget} context tokens, {len(questions)} questions of "
        f"`{Path(manifest.questions_file).name}` (split {manifest.split}) on {corpus}; {described}. "
        "Median seconds per question: " + ", ".join(f"{m} {s:.2f} s" for m, s in seconds.items()) + "."
    )
    return columns, table, note


async def run(args: argparse.Namespace) -> None:
    async with DriftRAG(Settings()) as rag:
        counts = await rag.stats(args.kb)
        if not counts.chunks:
            corpus = args.corpus or fetch("alice", dest=default_dest(rag.settings.home)).path
            started = time.monotonic()
            await rag.ingest(args.kb, paths=[corpus])
            print(f"ingested {corpus.name} into kb {args.kb} in {time.monotonic() - started:.1f} s")
        counts = await rag.stats(args.kb)
        if args.out.exists():
            shutil.rmtree(args.out)
        await run_eval(
            rag.query_deps(),
            args.kb,
            args.questions,
            parse_methods(METHODS),
            args.out,
            mode=rag.mode,
            mode_description=rag.describe(),
            budget_tokens=args.budget,
            split=args.split,
        )
        described = f"{rag.mode} mode"
    build_report(args.out, args.budget)
    corpus = f"kb `{args.kb}` ({counts.chunks} chunks, {counts.entities} entities)"
    columns, table, note = eval_table(args.out, args.budget, described, corpus)
    print(note)
    for row in [columns, *table]:
        print(" | ".join(row))
    if args.record:
        record(NAME, TITLE, columns, table, note=note)
    print(f"full report: {args.out / 'report.md'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, help="The corpus file (default: `driftrag data fetch alice`).")
    parser.add_argument("--kb", default="eval-alice", help="Kb to evaluate, ingested when it holds no chunks.")
    parser.add_argument("--questions", type=Path, default=REPO / "data" / "questions" / "alice.jsonl")
    parser.add_argument("--split", choices=SPLIT_CHOICES, default="report", help="Half of the set to run.")
    parser.add_argument("--budget", type=int, default=4000, help="Context tokens every method is cut to.")
    parser.add_argument("--out", type=Path, default=REPO / "results" / "eval-table", help="Results folder (replaced).")
    add_record_option(parser)
    args = parser.parse_args()
    if args.corpus is not None and not args.corpus.is_file():
        raise SystemExit(f"--corpus {args.corpus}: no such file")
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
