"""`driftrag eval run`: every (question, method, repeat) once, one JSONL row each, resumable.

Rows already recorded in the results folder are skipped on a rerun, so an interrupted run continues
where it stopped; rows that recorded an error are run again unless `retry_errors` is off (the newest
row of a key is the one that counts). A rerun must use the same kb, question set and model mode; it
may add methods or repeats.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from driftrag.errors import KnowledgeBaseNotFoundError
from driftrag.eval.bounds import write_corpus
from driftrag.eval.jsonl import JsonlLog, ResultsFileError, read_rows
from driftrag.eval.methods import Method, MethodOutput, run_method
from driftrag.eval.questions import (
    QuestionItem,
    SplitChoice,
    dump_questions,
    load_questions,
    questions_digest,
    select_split,
)
from driftrag.eval.records import (
    CORPUS,
    MANIFEST,
    QUESTIONS,
    ROWS,
    SUMMARY,
    RunManifest,
    RunRow,
    latest_rows,
    now,
    write_json,
)
from driftrag.eval.summary import RunSummary, summarize
from driftrag.models.search import Source
from driftrag.models.storage import KbStorage
from driftrag.search.deps import QueryDeps

MethodRunner = Callable[[QueryDeps, str, Method, str], Awaitable[MethodOutput]]
CorpusReader = Callable[[], Awaitable[list[Source]]]


def parse_budgets(text: str) -> list[int]:
    """`2000,4000,8000` → [2000, 4000, 8000]: positive, distinct, sorted."""
    try:
        budgets = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise ValueError(f"budgets must be whole numbers of tokens, such as 2000,4000: {text!r}") from None
    if not budgets or budgets[0] < 1:
        raise ValueError(f"budgets must be at least 1 token: {text!r}")
    return budgets


def _prepare(
    out_dir: Path,
    kb: str,
    questions_file: Path,
    questions: Sequence[QuestionItem],
    methods: Sequence[Method],
    repeats: int,
    mode: str,
    mode_description: str,
    split: SplitChoice = "all",
    budgets: Sequence[int] = (),
    run_budget: int | None = None,
) -> RunManifest:
    """Create the results folder, or check that the existing run is the same experiment."""
    digest = questions_digest(questions)
    manifest_path = out_dir / MANIFEST
    if manifest_path.is_file():
        old = RunManifest.model_validate_json(manifest_path.read_text(encoding="utf-8"))
        checks = (
            ("kb", old.kb, kb),
            ("question set", old.questions_sha256, digest),
            ("split", old.split, split),
            ("mode", old.mode, mode),
            ("context budgets", old.budgets, list(budgets)),
            ("run budget", old.run_budget, run_budget),
        )
        clashes = [f"{name} {there!r} there, {here!r} here" for name, there, here in checks if there != here]
        if clashes:
            raise ResultsFileError(f"{out_dir} holds another run ({'; '.join(clashes)}): choose another --out")
        merged = [*old.methods, *(m for m in methods if m not in old.methods)]
        manifest = old.model_copy(update={"methods": merged, "repeats": max(old.repeats, repeats)})
    else:
        out_dir.mkdir(parents=True, exist_ok=True)
        manifest = RunManifest(
            kb=kb,
            questions_file=str(questions_file),
            questions_sha256=digest,
            split=split,
            mode=mode,
            mode_description=mode_description,
            methods=list(methods),
            repeats=repeats,
            started_at=now(),
            budgets=list(budgets),
            run_budget=run_budget,
        )
        (out_dir / QUESTIONS).write_text(dump_questions(questions), encoding="utf-8")
    write_json(manifest_path, manifest)
    return manifest


def _row(question: QuestionItem, kb: str, repeat: int, output: MethodOutput) -> RunRow:
    return RunRow(
        question_id=question.id,
        question_type=question.type,
        question=question.question,
        method=output.method,
        repeat=repeat,
        kb=kb,
        answer=output.answer,
        sources=output.sources,
        cited_ids=output.cited_ids,
        llm_calls=output.llm_calls,
        prompt_tokens=output.prompt_tokens,
        completion_tokens=output.completion_tokens,
        embedding_requests=output.embedding_requests,
        seconds=output.seconds,
        extractive=output.extractive,
        degraded=output.degraded,
        error=output.error,
        recorded_at=now(),
    )


ProgressSink = Callable[[RunRow, int, int], None]


async def run_eval(
    deps: QueryDeps,
    kb: str,
    questions_file: Path,
    methods: Sequence[Method],
    out_dir: Path,
    *,
    repeats: int = 1,
    mode: str,
    mode_description: str = "",
    budgets: Sequence[int] | None = None,
    retry_errors: bool = True,
    split: SplitChoice = "all",
    run: MethodRunner = run_method,
    progress: ProgressSink | None = None,
    corpus: CorpusReader | None = None,
) -> RunSummary:
    """Run what is missing from `out_dir`, one row at a time, then write and return the summary.

    `budgets` are the context budgets the report compares the methods at (default
    `local_context_tokens`); the methods run at the deps' `local_context_tokens`, which should be the
    largest so that each method fills every budget (the CLI builds its engine so, and the engine fits
    it to the model's window: a budget above what the methods ran at is flagged by the report, not
    hidden), and the report cuts their ranked sources to each. `split` runs one fixed half of
    the question set (`tune` or `report`) or all of it; the results folder keeps only the questions that
    were run, and the manifest and summary say which half. `corpus` reads the kb's chunks, kept once in
    the folder for the report's floor and ceiling.

    Questions run one after another so wall times are not inflated by each other. `run` replaces
    the method adapter (tests use it to simulate a kill)."""
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    run_budget = deps.settings.local_context_tokens
    budgets = sorted(set(budgets or [run_budget]))
    # File work runs in worker threads: nothing blocks the event loop the queries run on.
    questions = select_split(await asyncio.to_thread(load_questions, questions_file), split)
    manifest = await asyncio.to_thread(
        _prepare,
        out_dir,
        kb,
        questions_file,
        questions,
        methods,
        repeats,
        mode,
        mode_description,
        split,
        budgets,
        run_budget,
    )
    if corpus is not None and not (out_dir / CORPUS).is_file():
        await asyncio.to_thread(write_corpus, out_dir / CORPUS, await corpus())
    log = JsonlLog(out_dir / ROWS, RunRow)
    with log:
        existing = await asyncio.to_thread(log.open)
        done = {row.key for row in latest_rows(existing) if not (retry_errors and row.error)}
        todo = [
            (question, method, repeat)
            for repeat in range(repeats)
            for question in questions
            for method in methods
            if (question.id, method, repeat) not in done
        ]
        for n, (question, method, repeat) in enumerate(todo, start=1):
            output = await run(deps, kb, method, question.question)
            row = _row(question, kb, repeat, output)
            await asyncio.to_thread(log.append, row)
            if progress is not None:
                progress(row, n, len(todo))
    return await asyncio.to_thread(_write_summary, out_dir, manifest, questions, budgets[-1])


def _write_summary(out_dir: Path, manifest: RunManifest, questions: Sequence[QuestionItem], budget: int) -> RunSummary:
    summary = summarize(manifest, questions, latest_rows(read_rows(out_dir / ROWS, RunRow)), budget)
    write_json(out_dir / SUMMARY, summary)
    return summary


async def ensure_kb_has_chunks(kbs: KbStorage, kb: str) -> None:
    """Refuse to start a run on an empty or unknown kb: every row would record the same failure."""
    counts = await kbs.counts(kb)
    if counts.chunks == 0:
        raise KnowledgeBaseNotFoundError(f"kb {kb} holds no chunks: ingest the corpus first (`driftrag ingest`)")


def summary_lines(summary: RunSummary, out_dir: Path) -> list[str]:
    """The terminal view of a run: rows, errors, and recall and cost per method."""
    metrics = summary.metrics
    lines = [
        f"kb {summary.kb} ({summary.mode}), {summary.questions} questions of split {summary.split}: "
        f"{summary.rows}/{summary.expected_rows} rows, {summary.errors} errors; results in {out_dir}",
        f"evidence recall at {metrics.budget_tokens} context tokens (exact / fuzzy), calls and wall time per question:",
    ]
    for method, aggregate in metrics.by_method.items():
        cost = summary.cost[method]
        recall = "–" if aggregate.recall is None else f"{100 * aggregate.recall:.1f}%"
        fuzzy = "–" if aggregate.fuzzy_recall is None else f"{100 * aggregate.fuzzy_recall:.1f}%"
        lines.append(
            f"  {method:<7} {recall:>6} / {fuzzy:>6}   {cost.llm_calls:g} calls   {cost.seconds_mean:.2f} s   "
            f"{cost.errors} errors   {cost.degraded} degraded   {cost.ungrounded} ungrounded"
        )
    lines.append("`driftrag eval report --results DIR` writes the full report")
    return lines
