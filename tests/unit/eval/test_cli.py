"""`driftrag eval …` at the command line: usage errors, offline refusals, the report of a results folder."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from typer.testing import CliRunner

from driftrag.cli import app
from driftrag.eval.questions import QuestionItem, dump_questions
from driftrag.eval.runner import run_eval
from tests.fakes.eval_results import FakeMethods, SettingsOnlyDeps

OFFLINE = {"DRIFTRAG_LLM_PROVIDER": "offline", "OPENAI_API_KEY": ""}


@pytest.fixture
def results(tmp_path: Path) -> Path:
    questions = tmp_path / "questions.jsonl"
    questions.write_text(dump_questions([QuestionItem(id="g1", type="global", question="Themes?")]), encoding="utf-8")
    out = tmp_path / "results"
    run = run_eval(SettingsOnlyDeps(), "kb1", questions, ["basic", "local"], out, mode="offline", run=FakeMethods())
    asyncio.run(run)
    return out


def invoke(*args: str):
    return CliRunner().invoke(app, ["eval", *args], env=OFFLINE)


def test_report_of_a_results_folder(results: Path) -> None:
    result = invoke("report", "--results", str(results), "--budget", "500")
    assert result.exit_code == 0, result.output
    assert "report.md" in result.output and (results / "report.md").is_file()
    assert "500 context tokens" in (results / "report.md").read_text(encoding="utf-8")


def test_report_at_several_budgets_has_a_column_per_budget(results: Path) -> None:
    result = invoke("report", "--results", str(results), "--budget", "4000,2000")
    assert result.exit_code == 0, result.output
    text = (results / "report.md").read_text(encoding="utf-8")
    assert "- Context budgets: 2000, 4000 cl100k tokens" in text and "| method | 2000 tokens | 4000 tokens |" in text
    refused = invoke("report", "--results", str(results), "--budget", "4k")
    assert refused.exit_code == 2 and "whole numbers of tokens" in " ".join(refused.output.split())


def test_report_of_a_folder_without_a_run_fails_cleanly(tmp_path: Path) -> None:
    result = invoke("report", "--results", str(tmp_path))
    assert result.exit_code == 1 and "run.json missing" in " ".join(result.output.split())


def test_judge_and_generate_refuse_without_a_model(results: Path, tmp_path: Path) -> None:
    judged = invoke("judge", "--results", str(results))
    assert judged.exit_code == 1 and "needs a model" in " ".join(judged.output.split())
    generated = invoke("generate", "--description", "A story.", "--out", str(tmp_path / "drafts.jsonl"))
    assert generated.exit_code == 1 and "needs a model" in " ".join(generated.output.split())


@pytest.mark.parametrize(
    "args",
    [
        ["run", "--kb", "kb1", "--questions", "q.jsonl", "--out", "o", "--methods", "drift,everything"],
        ["run", "--kb", "bad kb!", "--questions", "q.jsonl", "--out", "o"],
        ["run", "--kb", "kb1", "--questions", "q.jsonl", "--out", "o", "--split", "half"],
        ["judge", "--results", "r", "--trials", "3"],
        ["judge", "--results", "r", "--aa", "nobody"],
        ["generate", "--out", "d.jsonl"],
        ["generate", "--out", "d.jsonl", "--description", "x", "--type", "trivia"],
    ],
)
def test_usage_errors_exit_2(args: list[str]) -> None:
    assert invoke(*args).exit_code == 2
