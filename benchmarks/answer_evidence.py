"""The offline extractive answerer alone: time per answer call and gold evidence found in the answer.

Replays the contexts an evaluation run recorded (`driftrag eval run`, its `runs.jsonl`): for every
row of the chosen methods, the recorded sources become the context again and the offline answerer
of this checkout answers the row's question over them. No Neo4j is needed, and every answerer
version sees exactly the same contexts, so two checkouts can be compared on one results folder.

Prints, per method and per question type, the share of gold evidence strings found in the answer
text (exact after whitespace normalisation, and fuzzy: a window holding >= 90 % of the evidence's
word tokens, as the retrieval metrics do), the median and 95th percentile of the answer call's wall
time, and the same evidence share of the answers recorded in the run for reference.

    .venv/bin/python benchmarks/answer_evidence.py --results results/alice [--methods basic,local,entity]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import statistics
import time
from collections import defaultdict
from pathlib import Path

from driftrag.eval.jsonl import read_rows
from driftrag.eval.metrics import fuzzy_contains, words
from driftrag.eval.questions import load_questions, normalise
from driftrag.eval.records import QUESTIONS, ROWS, RunRow, latest_rows
from driftrag.offline.nlp import LanguageResources
from driftrag.offline.query.tasks import offline_query_tasks
from driftrag.search.models import SearchContext
from driftrag.settings import Settings


def evidence_found(answer: str, evidence: list[str]) -> tuple[int, int]:
    """(exact, fuzzy) counts of the evidence strings found in the answer text."""
    text = normalise(answer)
    text_words = words(text)
    exact = [normalise(item) in text for item in evidence]
    fuzzy = [hit or fuzzy_contains(text_words, words(item)) for item, hit in zip(evidence, exact, strict=True)]
    return sum(exact), sum(fuzzy)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


async def run(args: argparse.Namespace) -> None:
    questions = {q.id: q for q in load_questions(args.results / QUESTIONS)}
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    rows = [r for r in latest_rows(read_rows(args.results / ROWS, RunRow)) if r.method in methods and not r.error]
    tasks = offline_query_tasks(Settings(llm_provider="offline"), LanguageResources())
    await tasks.answerer.answer("warm up", SearchContext(text="", n_tokens=0, budget_tokens=1, sources=rows[0].sources))
    found: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])  # exact, fuzzy, recorded x2, n
    seconds: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        evidence = questions[row.question_id].evidence
        if not evidence:
            continue
        context = SearchContext(text="", n_tokens=0, budget_tokens=0, sources=row.sources)
        started = time.perf_counter()
        payload = await tasks.answerer.answer(row.question, context)
        seconds[row.method].append(time.perf_counter() - started)
        exact, fuzzy = evidence_found(payload.answer, evidence)
        old_exact, old_fuzzy = evidence_found(row.answer, evidence)
        for key in ((row.method, "all"), (row.method, row.question_type)):
            counts = found[key]
            for i, value in enumerate((exact, fuzzy, old_exact, old_fuzzy, len(evidence))):
                counts[i] += value
    print(f"{len(rows)} rows of {args.results}; evidence in the answer (exact / fuzzy), this checkout vs recorded")
    print(f"{'method':<8}{'type':<11}{'exact':>8}{'fuzzy':>8}{'rec.ex':>8}{'rec.fz':>8}{'p50 ms':>9}{'p95 ms':>9}")
    for (method, kind), (exact, fuzzy, old_exact, old_fuzzy, n) in sorted(found.items()):
        times = seconds[method]
        timing = (
            f"{1000 * statistics.median(times):>9.0f}{1000 * percentile(times, 0.95):>9.0f}" if kind == "all" else ""
        )
        print(
            f"{method:<8}{kind:<11}{100 * exact / n:>7.1f}%{100 * fuzzy / n:>7.1f}%"
            f"{100 * old_exact / n:>7.1f}%{100 * old_fuzzy / n:>7.1f}%{timing}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=Path, required=True, help="Results folder of `driftrag eval run`.")
    parser.add_argument("--methods", default="basic,local,entity", help="Methods whose contexts are replayed.")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
