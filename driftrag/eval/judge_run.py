"""Judging a results folder: plan the counterbalanced trials, run those not yet recorded, summarise.

Judgments go to `judgments.jsonl` one trial per row as they complete (so an interrupted judging
resumes), the statistics to `judge.json`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path

from driftrag.eval.jsonl import JsonlLog
from driftrag.eval.judge import Judgment, PairwiseJudge, TrialSpec, plan_trials
from driftrag.eval.judge_stats import JudgeSummary, summarize_judgments
from driftrag.eval.records import JUDGE_SUMMARY, JUDGMENTS, RunRow, load_run, write_json
from driftrag.prompts.registry import PromptRegistry
from driftrag.providers.chat import ChatModel

JudgeProgress = Callable[[Judgment, int, int], None]


async def run_trials(
    judge: PairwiseJudge,
    rows: Sequence[RunRow],
    specs: Sequence[TrialSpec],
    log: JsonlLog[Judgment],
    *,
    concurrency: int,
    retry_errors: bool = True,
    progress: JudgeProgress | None = None,
) -> list[Judgment]:
    """Judge the trials `log` does not hold yet, `concurrency` at a time; each is appended when done."""
    existing = await asyncio.to_thread(log.open)
    latest = {j.key: j for j in existing}
    todo = [s for s in specs if s.key not in latest or (retry_errors and latest[s.key].error)]
    answers = {(row.question_id, row.method, row.repeat): row for row in rows}
    limit = asyncio.Semaphore(concurrency)
    done = 0

    async def one(spec: TrialSpec) -> None:
        nonlocal done
        a = answers[(spec.question_id, spec.method_a, spec.repeat_a)]
        b = answers[(spec.question_id, spec.method_b, spec.repeat_b)]
        async with limit:
            judgment = await judge.judge(spec, a.question, a.answer, b.answer)
        await asyncio.to_thread(log.append, judgment)
        latest[judgment.key] = judgment
        done += 1
        if progress is not None:
            progress(judgment, done, len(todo))

    tasks = [asyncio.ensure_future(one(spec)) for spec in todo]
    try:
        await asyncio.gather(*tasks)
    finally:
        # On a failure or an interruption, stop the other trials before the caller closes the log.
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return [latest[spec.key] for spec in specs if spec.key in latest]


async def judge_results(
    chat: ChatModel | None,
    out_dir: Path,
    *,
    max_tokens: int,
    concurrency: int,
    methods: Sequence[str] | None = None,
    trials: int = 2,
    aa_methods: Sequence[str] | None = None,
    prompts: PromptRegistry | None = None,
    retry_errors: bool = True,
    progress: JudgeProgress | None = None,
) -> JudgeSummary:
    """Judge every pair of `methods` (default: the run's) and the A/A pairs of `aa_methods` (default: the
    first method). Refuses to start without a model."""
    judge = PairwiseJudge(chat, prompts or PromptRegistry.load(), max_tokens=max_tokens)
    manifest, _, rows = await asyncio.to_thread(load_run, out_dir)
    methods = list(methods) if methods else list(manifest.methods)
    unknown = sorted(set(methods) - set(manifest.methods))
    if unknown:
        raise ValueError(f"methods {unknown} are not in this run ({', '.join(manifest.methods)})")
    aa = list(aa_methods) if aa_methods is not None else methods[:1]
    specs = plan_trials(rows, methods, trials, aa)
    with JsonlLog(out_dir / JUDGMENTS, Judgment) as log:
        judgments = await run_trials(
            judge, rows, specs, log, concurrency=concurrency, retry_errors=retry_errors, progress=progress
        )
    summary = summarize_judgments(judgments, trials)
    await asyncio.to_thread(write_json, out_dir / JUDGE_SUMMARY, summary)
    return summary
