"""Regenerate the evaluation table of docs/benchmarks.md: every method at equal context, with intervals.

For each question set: ingests its corpus into a kb (or reuses the kb when it already holds chunks), runs
the evaluation harness (`driftrag.eval.runner.run_eval`) with drift, global, local, basic and entity at
the context budgets into a fresh results folder, writes its report (`driftrag.eval.report.build_report`,
with the floor, the ceiling and the paired differences), and prints per set and method exact evidence
recall and answer-token recall at each budget and the median context after the cut; then the difference
of each method with basic, overall, with its bootstrap 95 % interval. With `--record` both replace the
evaluation table of docs/benchmarks.md (`benchmarks/record.py`). The model mode is the active one
(offline without OPENAI_API_KEY). Neo4j is `NEO4J_URI` or the local one on `DRIFTRAG_NEO4J_PORT`.

    .venv/bin/python benchmarks/eval_table.py [--sets alice,verne,fairytaleqa] [--set NAME QUESTIONS CORPUS]...
        [--corpus alice_in_wonderland.txt] [--split report] [--budget 2000,4000,8000]
        [--out results/eval-table] [--record]

`--sets` names the shipped sets (alice: `data/questions/alice.jsonl` on `driftrag data fetch alice`;
verne: `data/questions/verne.jsonl` on the shipped French text; fairytaleqa: the imported FairytaleQA
questions on their stories, `data/imported/fairytaleqa/`, written by others). `--set NAME QUESTIONS CORPUS` adds any
other set in the harness's format (data/README.md) with its corpus file or folder, such as one written
by an importer; its kb is `eval-NAME`. `--split` runs one fixed half of each set (`report`, the default for
the published table: never tuned on; `tune`; or `all`).

`make eval-table CORPUS=path/to/alice_in_wonderland.txt` runs it with `--record`.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from driftrag.corpora import default_dest, fetch
from driftrag.eval.bounds import CEILING, FLOOR, kb_chunks
from driftrag.eval.compare import ALL
from driftrag.eval.methods import parse_methods
from driftrag.eval.questions import SPLIT_CHOICES
from driftrag.eval.records import METRICS
from driftrag.eval.report import ReportData, build_report
from driftrag.eval.report_sections import BOUND_LABELS, verdict
from driftrag.eval.runner import parse_budgets, run_eval
from driftrag.facade import DriftRAG
from driftrag.settings import Settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for benchmarks.record

from benchmarks.record import add_record_option, record

REPO = Path(__file__).resolve().parents[1]
NAME, TITLE = "eval-table", "Evaluation at equal context"
METHODS = "drift,global,local,basic,entity"
# The shipped sets: the project's own (their corpus fetched by name), and imported ones written by others
# (`driftrag eval import`, data/README.md) with their corpus folder.
OWN_SETS: dict[str, tuple[Path, Path | None]] = {
    "alice": (REPO / "data" / "questions" / "alice.jsonl", None),
    "verne": (REPO / "data" / "questions" / "verne.jsonl", None),
    "fairytaleqa": (
        REPO / "data" / "imported" / "fairytaleqa" / "questions.jsonl",
        REPO / "data" / "imported" / "fairytaleqa" / "corpus",
    ),
}


@dataclass(frozen=True)
class QuestionSet:
    name: str
    questions: Path
    corpus: Path | None  # None: fetched by name (`driftrag data fetch NAME`)

    @property
    def kb(self) -> str:
        return f"eval-{self.name}"


def sets_of(args: argparse.Namespace) -> list[QuestionSet]:
    chosen = [name.strip() for name in args.sets.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in OWN_SETS]
    if unknown:
        raise SystemExit(f"--sets {','.join(unknown)}: unknown; the project's sets are {', '.join(OWN_SETS)}")
    sets = [QuestionSet(n, OWN_SETS[n][0], args.corpus if n == "alice" else OWN_SETS[n][1]) for n in chosen]
    for name, questions, corpus in args.set or []:
        if not Path(questions).is_file() or not Path(corpus).exists():
            raise SystemExit(f"--set {name}: {questions} or {corpus} does not exist")
        sets.append(QuestionSet(name, Path(questions), Path(corpus)))
    return sets


async def run_set(rag: DriftRAG, item: QuestionSet, args: argparse.Namespace, budgets: list[int]) -> str:
    """Ingest (when the kb is empty) and run one set; return the kb's description."""
    counts = await rag.stats(item.kb)
    if not counts.chunks:
        corpus = item.corpus or fetch(item.name, dest=default_dest(rag.settings.home)).path
        started = time.monotonic()
        await rag.ingest(item.kb, paths=[corpus])
        print(f"ingested {corpus.name} into kb {item.kb} in {time.monotonic() - started:.1f} s")
        counts = await rag.stats(item.kb)
    out = args.out / item.name
    if out.exists():
        shutil.rmtree(out)
    started = time.monotonic()
    await run_eval(
        rag.query_deps(),
        item.kb,
        item.questions,
        parse_methods(METHODS),
        out,
        mode=rag.mode,
        mode_description=rag.describe(),
        budgets=budgets,
        split=args.split,
        corpus=lambda: kb_chunks(rag.stores.listing, item.kb),
    )
    print(f"{item.name}: ran in {time.monotonic() - started:.0f} s")
    return f"kb `{item.kb}` ({counts.chunks} chunks, {counts.entities} entities)"


def load_report(results: Path) -> ReportData:
    return ReportData.model_validate_json((results / METRICS).read_text(encoding="utf-8"))


def recall_rows(name: str, data: ReportData) -> list[list[str]]:
    """Per method (then floor and ceiling): exact and answer-token recall per budget, context kept."""
    rows = []
    for method in data.tables[0].by_method:
        cells = [
            *(_pct(t.by_method[method].recall) for t in data.tables),
            *(_pct(t.by_method[method].answer_recall) for t in data.tables),
        ]
        kept = [t.by_method[method].median_kept_tokens / t.budget_tokens for t in data.tables]
        fill = "–" if method in (FLOOR, CEILING) else f"{100 * min(kept):.0f} %"
        rows.append([name, BOUND_LABELS.get(method, method), *cells, fill])
    return rows


def difference_lines(name: str, data: ReportData) -> list[str]:
    """Each method minus basic over all questions, per budget: exact and answer-token recall."""
    lines = []
    for comparison in data.comparisons:
        for metric in ("exact evidence recall", "answer-token recall"):
            cells = []
            for method, groups in comparison.differences[metric].items():
                d = groups[ALL]
                call = verdict(method, comparison.baseline, d)
                cells.append(
                    f"{method} {100 * d.mean:+.1f} [{100 * d.ci_low:+.1f}, {100 * d.ci_high:+.1f}]"
                    + ("" if call == "no detectable difference" else f" ({call})")
                )
            lines.append(f"| {name} | {comparison.budget_tokens} | {metric} | " + "; ".join(cells) + " |")
    return lines


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


async def run(args: argparse.Namespace) -> None:
    budgets = parse_budgets(args.budget)
    sets = sets_of(args)
    described: dict[str, str] = {}
    # The methods run at the largest budget, so that each fills every one.
    async with DriftRAG(Settings().model_copy(update={"local_context_tokens": budgets[-1]})) as rag:
        for item in sets:
            described[item.name] = await run_set(rag, item, args, budgets)
        mode = f"{rag.mode} mode"
    columns = [
        "set",
        "method",
        *(f"exact recall, {b}" for b in budgets),
        *(f"answer-token recall, {b}" for b in budgets),
        "context filled (lowest median)",
    ]
    rows: list[list[str]] = []
    differences = [
        "| set | budget | metric | each method minus basic, all questions: mean [95 % interval], points |",
        "|---|---|---|---|",
    ]
    summaries, ran_at = [], set()
    for item in sets:
        started = time.monotonic()
        build_report(args.out / item.name, budgets[-1], budgets)
        data = load_report(args.out / item.name)
        ran_at.add(data.run_budget)
        rows += recall_rows(item.name, data)
        differences += difference_lines(item.name, data)
        seconds = {m: c.seconds_median for m, c in data.summary.cost.items()}
        summaries.append(
            f"{item.name}: {data.summary.questions} questions of `{item.questions.name}` (split "
            f"{data.summary.split}, {data.language}) on {described[item.name]}; report in "
            f"{time.monotonic() - started:.0f} s; median seconds per question: "
            + ", ".join(f"{m} {s:.2f}" for m, s in seconds.items())
        )
    note = "\n".join(
        [
            f"Every method's ranked sources cut to each budget (cl100k tokens, sources charged as rendered); "
            f"the methods ran at {', '.join(map(str, sorted(ran_at)))}; {mode}. Floor: the kb's chunks in a "
            "random order (seeded); ceiling: every chunk, uncut. " + " ".join(s + "." for s in summaries),
            "",
            "Paired differences with basic per question (bootstrap 95 % interval over questions, seeded); "
            "a method is said above or below basic only where the interval excludes 0:",
            "",
            *differences,
        ]
    )
    print(" | ".join(columns))
    for row in rows:
        print(" | ".join(row))
    print(note)
    if args.record:
        record(NAME, TITLE, columns, rows, note=note)
    print("full reports: " + ", ".join(str(args.out / item.name / "report.md") for item in sets))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", default="alice,verne,fairytaleqa", help="The shipped sets to run (comma-separated).")
    parser.add_argument(
        "--set",
        nargs=3,
        action="append",
        metavar=("NAME", "QUESTIONS", "CORPUS"),
        help="Another set: its name (kb eval-NAME), its questions (JSONL) and its corpus file or folder.",
    )
    parser.add_argument("--corpus", type=Path, help="Alice's text (default: `driftrag data fetch alice`).")
    parser.add_argument("--split", choices=SPLIT_CHOICES, default="report", help="Half of each set to run.")
    parser.add_argument("--budget", default="2000,4000,8000", help="Context budgets every method is cut to.")
    parser.add_argument("--out", type=Path, default=REPO / "results" / "eval-table", help="Results (replaced).")
    add_record_option(parser)
    args = parser.parse_args()
    if args.corpus is not None and not args.corpus.is_file():
        raise SystemExit(f"--corpus {args.corpus}: no such file")
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
