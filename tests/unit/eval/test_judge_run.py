"""Judging a results folder with the scripted judge: plan, resume, summary on disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from driftrag.errors import ConfigurationError
from driftrag.eval.jsonl import read_rows
from driftrag.eval.judge import Judgment
from driftrag.eval.judge_run import judge_results
from driftrag.eval.questions import QuestionItem, dump_questions
from driftrag.eval.records import JUDGE_SUMMARY, JUDGMENTS
from driftrag.eval.runner import run_eval
from tests.fakes.eval_results import FakeMethods, Killed, SettingsOnlyDeps
from tests.fakes.judge_llm import ScriptedJudge


@pytest.fixture
async def results(tmp_path: Path) -> Path:
    items = [QuestionItem(id=f"g{i}", type="global", question=f"What is theme {i}?") for i in range(6)]
    questions = tmp_path / "questions.jsonl"
    questions.write_text(dump_questions(items), encoding="utf-8")
    out = tmp_path / "results"
    await run_eval(
        SettingsOnlyDeps(), "kb1", questions, ["drift", "basic", "entity"], out, mode="offline", run=FakeMethods()
    )
    return out


async def judge(results: Path, double: object, **kwargs):
    return await judge_results(double, results, max_tokens=500, concurrency=4, **kwargs)  # type: ignore[arg-type]


async def test_judging_a_run(results: Path) -> None:
    double = ScriptedJudge()
    summary = await judge(results, double, trials=2)
    # 3 pairs + the A/A pair of drift, 6 questions, 2 trials each.
    assert double.calls == summary.judgments == (3 + 1) * 6 * 2
    assert [(p.method_a, p.method_b) for p in summary.pairs] == [
        ("drift", "basic"),
        ("drift", "entity"),
        ("basic", "entity"),
    ]
    comprehensiveness = {(p.method_a, p.method_b): p.criteria[0] for p in summary.pairs}
    # The scripted judge prefers the longer answer: drift (40 words) > basic (10) > entity (5).
    assert comprehensiveness[("drift", "basic")].win_rate_a == 1.0
    assert comprehensiveness[("drift", "basic")].p_value == pytest.approx(2 / 64)
    directness = summary.pairs[0].criteria[3]
    assert directness.criterion == "directness" and directness.win_rate_a == 0.0
    (aa,) = summary.aa_checks
    assert aa.method_a == aa.method_b == "drift" and aa.aa_consistent
    assert all(c.ties == c.trials for c in aa.criteria)  # identical answers tie
    assert (results / JUDGE_SUMMARY).is_file() and len(read_rows(results / JUDGMENTS, Judgment)) == summary.judgments


async def test_judging_resumes_and_retries_failed_trials(results: Path) -> None:
    await judge(results, ScriptedJudge(malformed="always_garbage"), methods=["drift", "basic"], aa_methods=[])
    assert all(j.error for j in read_rows(results / JUDGMENTS, Judgment))
    double = ScriptedJudge()
    summary = await judge(results, double, methods=["drift", "basic"], aa_methods=[])
    assert double.calls == 12 and summary.failed == 0 and summary.pairs[0].criteria[0].win_rate_a == 1.0
    again = ScriptedJudge()
    await judge(results, again, methods=["drift", "basic"], aa_methods=[])
    assert again.calls == 0


async def test_an_interrupted_judging_keeps_what_it_recorded(results: Path) -> None:
    class DyingJudge(ScriptedJudge):
        async def chat(self, messages, **kwargs):
            if self.calls >= 5:
                raise Killed("judge killed")
            return await super().chat(messages, **kwargs)

    with pytest.raises(Killed):
        await judge(results, DyingJudge(), methods=["drift", "basic"], aa_methods=[], trials=4)
    recorded = len(read_rows(results / JUDGMENTS, Judgment))
    assert recorded <= 5  # those written before the kill, each whole
    double = ScriptedJudge()
    summary = await judge(results, double, methods=["drift", "basic"], aa_methods=[], trials=4)
    assert double.calls == 24 - recorded and summary.judgments == 24


async def test_judging_refuses_offline_unknown_methods_and_odd_trials(results: Path) -> None:
    with pytest.raises(ConfigurationError, match="needs a model"):
        await judge(results, None)
    with pytest.raises(ValueError, match="not in this run"):
        await judge(results, ScriptedJudge(), methods=["drift", "local"])
    with pytest.raises(ValueError, match="even"):
        await judge(results, ScriptedJudge(), trials=3)
