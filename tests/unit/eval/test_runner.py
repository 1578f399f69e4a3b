"""Runs are resumable: a kill mid-run, a partial last line, errors retried, no duplicated rows."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from driftrag.eval.bounds import read_corpus
from driftrag.eval.jsonl import ResultsFileError, read_rows
from driftrag.eval.questions import QuestionItem, dump_questions
from driftrag.eval.records import CORPUS, MANIFEST, QUESTIONS, ROWS, SUMMARY, RunRow, load_run
from driftrag.eval.runner import parse_budgets, run_eval
from driftrag.models.search import Source
from driftrag.settings import Settings
from tests.fakes.eval_results import FakeMethods, Killed, SettingsOnlyDeps, source

METHODS = ["drift", "local", "basic", "entity"]


@pytest.fixture
def questions_file(tmp_path: Path) -> Path:
    items = [
        QuestionItem(id="q1", type="local", question="Who rang the bell?", evidence=["rang the bell"]),
        QuestionItem(id="q2", type="multi-hop", question="Why did the light fail?", evidence=["oil was cut"]),
        QuestionItem(id="q3", type="global", question="What are the themes?"),
    ]
    path = tmp_path / "questions.jsonl"
    path.write_text(dump_questions(items), encoding="utf-8")
    return path


def fake_methods(**kwargs) -> FakeMethods:
    return FakeMethods(
        sources={
            "basic": [source("chunk-1", "Pip rang the bell for hours."), source("chunk-2", "The oil was cut.")],
            "local": [source("chunk-2", "The oil was cut.")],
        },
        **kwargs,
    )


async def run(out: Path, questions_file: Path, fake: FakeMethods, *, methods=METHODS, **kwargs):
    return await run_eval(SettingsOnlyDeps(), "kb1", questions_file, methods, out, mode="offline", run=fake, **kwargs)


def reworded(questions_file: Path, target: Path) -> Path:
    target.write_text(questions_file.read_text(encoding="utf-8").replace("themes", "motifs"), encoding="utf-8")
    return target


def keys(out: Path) -> list[tuple[str, str, int]]:
    return [row.key for row in read_rows(out / ROWS, RunRow)]


async def test_a_run_records_one_row_per_question_method_and_repeat(tmp_path: Path, questions_file: Path) -> None:
    out = tmp_path / "results"
    summary = await run(out, questions_file, fake_methods(), repeats=2)
    assert summary.rows == summary.expected_rows == 3 * 4 * 2 and summary.errors == 0
    assert Counter(keys(out)).most_common(1)[0][1] == 1
    assert {p.name for p in out.iterdir()} >= {MANIFEST, QUESTIONS, ROWS, SUMMARY}
    manifest, questions, rows = load_run(out)
    assert manifest.kb == "kb1" and [q.id for q in questions] == ["q1", "q2", "q3"] and len(rows) == 24
    first = rows[0]
    assert (first.question_id, first.method, first.repeat) == ("q1", "drift", 0)
    assert first.question == "Who rang the bell?" and first.llm_calls == 7
    # Retrieval metrics are in the summary: basic retrieves both evidence strings, drift none.
    assert summary.metrics.by_method["basic"].recall == 1.0
    assert summary.metrics.by_method["local"].recall == 0.5
    assert summary.metrics.by_method["drift"].recall == 0.0
    assert json.loads((out / SUMMARY).read_text())["cost"]["drift"]["llm_calls"] == 7


async def test_a_killed_run_resumes_without_duplicating_rows(tmp_path: Path, questions_file: Path) -> None:
    out = tmp_path / "results"
    with pytest.raises(Killed):
        await run(out, questions_file, fake_methods(kill_after=5))
    assert len(keys(out)) == 5
    assert not (out / SUMMARY).exists()
    # The kill also left half a row behind (the process died inside a write).
    with (out / ROWS).open("ab") as handle:
        handle.write(b'{"question_id": "q2", "question_type": "multi-hop", "questi')
    assert len(read_rows(out / ROWS, RunRow)) == 5  # the partial line is tolerated
    again = fake_methods()
    summary = await run(out, questions_file, again)
    assert len(again.calls) == 12 - 5  # only the missing rows ran
    assert summary.rows == 12
    recorded = keys(out)
    assert len(recorded) == len(set(recorded)) == 12
    # The partial line was cut off, so every line of the file is a whole row.
    lines = (out / ROWS).read_text(encoding="utf-8").splitlines()
    assert len(lines) == 12 and all(json.loads(line) for line in lines)


async def test_errors_are_recorded_per_row_and_retried_on_the_next_run(tmp_path: Path, questions_file: Path) -> None:
    out = tmp_path / "results"
    failing = fake_methods(fail={("local", "Why did the light fail?")})
    summary = await run(out, questions_file, failing)
    assert summary.rows == 12 and summary.errors == 1 and summary.cost["local"].errors == 1
    assert "Neo4j went away" in summary.cost["local"].error_examples[0]
    kept = fake_methods()
    summary = await run(out, questions_file, kept, retry_errors=False)
    assert kept.calls == [] and summary.errors == 1
    retried = fake_methods()
    summary = await run(out, questions_file, retried)
    assert retried.calls == [("local", "Why did the light fail?")]
    assert summary.rows == 12 and summary.errors == 0  # the newest row of a key counts
    assert len(keys(out)) == 13


async def test_a_rerun_may_add_methods_and_repeats(tmp_path: Path, questions_file: Path) -> None:
    out = tmp_path / "results"
    await run(out, questions_file, fake_methods(), methods=["basic"])
    more = fake_methods()
    summary = await run(out, questions_file, more, methods=["basic", "local"], repeats=2)
    assert len(more.calls) == 3 * 2 * 2 - 3
    assert summary.methods == ["basic", "local"] and summary.rows == 12


async def test_a_results_folder_of_another_run_is_refused(tmp_path: Path, questions_file: Path) -> None:
    out = tmp_path / "results"
    await run(out, questions_file, fake_methods(), methods=["basic"])
    with pytest.raises(ResultsFileError, match="kb 'kb1' there, 'kb2' here"):
        await run_eval(SettingsOnlyDeps(), "kb2", questions_file, ["basic"], out, mode="offline", run=fake_methods())
    with pytest.raises(ResultsFileError, match="mode"):
        await run_eval(SettingsOnlyDeps(), "kb1", questions_file, ["basic"], out, mode="openai", run=fake_methods())
    changed = reworded(questions_file, tmp_path / "changed.jsonl")
    with pytest.raises(ResultsFileError, match="question set"):
        await run_eval(SettingsOnlyDeps(), "kb1", changed, ["basic"], out, mode="offline", run=fake_methods())


async def test_the_budgets_and_the_budget_the_methods_ran_at_are_kept_with_the_corpus_once(
    tmp_path: Path, questions_file: Path
) -> None:
    seen_budgets: list[int] = []
    reads: list[int] = []

    async def spy(deps, kb, method, question):
        seen_budgets.append(deps.settings.local_context_tokens)
        return await fake_methods()(deps, kb, method, question)

    async def corpus() -> list[Source]:
        reads.append(1)
        return [source("chunk-1", "Pip rang the bell for hours.")]

    out = tmp_path / "results"
    deps = SettingsOnlyDeps(Settings(_env_file=None, local_context_tokens=8000))

    async def go(methods: list[str], budgets: list[int]):
        return await run_eval(
            deps, "kb1", questions_file, methods, out, mode="offline", run=spy, budgets=budgets, corpus=corpus
        )

    await go(["basic"], [8000, 2000, 4000])
    assert set(seen_budgets) == {8000}
    manifest, _, _ = load_run(out)
    assert manifest.budgets == [2000, 4000, 8000] and manifest.run_budget == 8000
    assert read_corpus(out / CORPUS) == [source("chunk-1", "Pip rang the bell for hours.")]
    await go(["basic", "local"], [2000, 4000, 8000])
    assert reads == [1]  # kept by the first run, not read again
    with pytest.raises(ResultsFileError, match="context budgets"):
        await go(["basic"], [4000])
    # The same budgets from methods that ran at another budget are another experiment.
    with pytest.raises(ResultsFileError, match="run budget 8000 there, 4000 here"):
        await run(out, questions_file, spy, methods=["basic"], budgets=[2000, 4000, 8000])


def test_budgets_are_parsed_sorted_and_checked() -> None:
    assert parse_budgets("8000, 2000,4000,2000") == [2000, 4000, 8000]
    for bad in ("", "0,4000", "4k"):
        with pytest.raises(ValueError, match="budgets"):
            parse_budgets(bad)


async def test_a_corrupt_row_in_the_middle_is_an_error_not_skipped(tmp_path: Path, questions_file: Path) -> None:
    out = tmp_path / "results"
    await run(out, questions_file, fake_methods(), methods=["basic"])
    lines = (out / ROWS).read_text(encoding="utf-8").splitlines()
    lines[1] = lines[1][:40]
    (out / ROWS).write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ResultsFileError, match=":2: unreadable row"):
        await run(out, questions_file, fake_methods(), methods=["basic"])


async def test_a_split_runs_only_its_half_and_says_so(tmp_path: Path) -> None:
    items = [
        QuestionItem(id="t1", type="local", question="Who rang the bell?", evidence=["rang the bell"], split="tune"),
        QuestionItem(id="r1", type="local", question="What was cut?", evidence=["oil was cut"], split="report"),
        QuestionItem(id="t2", type="global", question="What are the themes?", split="tune"),
    ]
    path = tmp_path / "split.jsonl"
    path.write_text(dump_questions(items), encoding="utf-8")

    tuned = await run(tmp_path / "tune", path, fake_methods(), split="tune")
    manifest, questions, rows = load_run(tmp_path / "tune")
    assert [q.id for q in questions] == ["t1", "t2"] and {row.question_id for row in rows} == {"t1", "t2"}
    assert manifest.split == tuned.split == "tune"

    reported = await run(tmp_path / "report", path, fake_methods(), split="report")
    assert reported.questions == 1 and reported.split == "report"
    assert (await run(tmp_path / "all", path, fake_methods())).split == "all"
    with pytest.raises(ResultsFileError, match="split 'tune' there, 'report' here"):
        await run(tmp_path / "tune", path, fake_methods(), split="report")
