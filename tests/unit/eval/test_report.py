"""The Markdown report of a results folder: tables, judge section, plots or the reason there are none."""

from __future__ import annotations

from pathlib import Path

import pytest

from driftrag.eval import plots
from driftrag.eval.judge_run import judge_results
from driftrag.eval.questions import QuestionItem, dump_questions
from driftrag.eval.records import METRICS, REPORT
from driftrag.eval.report import build_report
from driftrag.eval.runner import run_eval
from driftrag.models.search import Source
from tests.fakes.eval_results import FakeMethods, SettingsOnlyDeps, source
from tests.fakes.judge_llm import ScriptedJudge


@pytest.fixture
async def results(tmp_path: Path) -> Path:
    items = [
        QuestionItem(id="l1", type="local", question="Who rang the bell?", evidence=["rang the bell"]),
        QuestionItem(id="m1", type="multi-hop", question="Why?", evidence=["oil was cut", "rang the bell"]),
        QuestionItem(id="g1", type="global", question="Themes?"),
    ]
    questions = tmp_path / "questions.jsonl"
    questions.write_text(dump_questions(items), encoding="utf-8")
    methods = FakeMethods(
        sources={"basic": [source("chunk-1", "Pip rang the bell."), source("chunk-2", "The oil was cut.")]}
    )
    out = tmp_path / "results"

    async def corpus() -> list[Source]:
        return [source("chunk-1", "Pip rang the bell."), source("chunk-2", "The oil was cut.")]

    await run_eval(
        SettingsOnlyDeps(),
        "kb1",
        questions,
        ["drift", "basic"],
        out,
        mode="offline",
        run=methods,
        budgets=[1000, 4000],
        corpus=corpus,
    )
    return out


def test_report_without_judge(results: Path) -> None:
    outcome = build_report(results, 4000)
    text = (results / REPORT).read_text(encoding="utf-8")
    assert outcome.report == results / REPORT and (results / METRICS).is_file()
    assert "## Evidence recall by question type at 4000 context tokens" in text
    assert "| basic | 100.0% (n=1) | 100.0% (n=1) | – | 100.0% (n=2) |" in text
    assert "| drift | 0.0% (n=1) | 0.0% (n=1) | – | 0.0% (n=2) |" in text
    assert "## Cost per question" in text and "| drift | 3 | 0 | 0 | 0 | 7.0 |" in text
    assert "Not judged" in text
    assert {p.name for p in outcome.plots} == {"recall_by_type.png", "cost_vs_quality.png"}
    assert all(p.stat().st_size > 1000 for p in outcome.plots)
    assert "![recall_by_type](plots/recall_by_type.png)" in text


def test_report_has_a_column_per_budget_the_fill_the_bounds_and_the_differences(results: Path) -> None:
    text = build_report(results, 4000).report.read_text(encoding="utf-8")
    assert "- Context budgets: 1000, 4000 cl100k tokens" in text and "ran with a context budget of 4000" in text
    fill = text.split("## Context filled")[1].split("##")[0]
    assert "| method | 1000 tokens | 4000 tokens |" in fill
    # Two short sources cannot fill either budget: flagged, and named below the table.
    assert "⚠" in fill and "basic at 1000" in fill
    exact = text.split("### Exact evidence recall")[1].split("###")[0]
    assert "| method | 1000 tokens | 4000 tokens |" in exact
    assert "| basic | 100.0% (n=2) | 100.0% (n=2) |" in exact
    assert "| floor (random chunks) |" in exact and "| ceiling (whole corpus) | 100.0% (n=2) | 100.0% (n=2) |" in exact
    assert "### Answer-token recall" in text and "### Evidence-token recall" in text
    assert "## Differences with basic" in text and "### Exact evidence recall at 1000 tokens" in text
    assert "| drift | -100.0 [-100.0, -100.0] 0/1/0 p=1 |" in text and "drift below basic" in text
    # A budget asked at report time that the run did not reach is said to be unfillable.
    wider = build_report(results, 4000, [4000, 8000]).report.read_text(encoding="utf-8")
    assert "(below 8000: those budgets cannot be filled)" in wider


async def test_report_with_judge(results: Path) -> None:
    await judge_results(ScriptedJudge(), results, max_tokens=500, concurrency=2, trials=2)
    outcome = build_report(results, 4000)
    text = outcome.report.read_text(encoding="utf-8")
    assert "| drift vs basic | comprehensiveness | 100.0% [" in text
    assert "p (Holm)" in text and "A/A check" in text and "consistent with 50 %" in text
    assert "Position bias:" in text
    assert "win_rates.png" in {p.name for p in outcome.plots}


def test_report_without_matplotlib_says_so(results: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def missing():
        raise plots.PlotsUnavailable("matplotlib is not installed: pip install 'driftrag[eval]' for the plots")

    monkeypatch.setattr(plots, "_pyplot", missing)
    outcome = build_report(results, 4000)
    assert outcome.plots == [] and outcome.plots_note
    assert "No plots: matplotlib is not installed" in outcome.report.read_text(encoding="utf-8")
