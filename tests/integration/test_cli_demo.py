"""The README's main job and the query command, driven as a user does: the `driftrag` executable in a
subprocess, offline (no model API), against the test Neo4j."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from driftrag.search.drift.models import DriftResult
from driftrag.search.global_search.models import GlobalResult
from driftrag.search.models import SearchResult
from tests.support.cli import run_cli

EXTRACTIVE = "_Extractive answer (offline mode"


@pytest.fixture(scope="module")
def demo(neo4j_uri: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, DriftResult]]:
    home = tmp_path_factory.mktemp("demo-home")
    kb = f"test-demo-{uuid.uuid4().hex[:8]}"
    done = run_cli("demo", "--kb", kb, "--json", uri=neo4j_uri, home=home)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "offline extractive mode" in done.stderr
    yield kb, home, DriftResult.model_validate_json(done.stdout)
    run_cli("delete", "--kb", kb, "--yes", uri=neo4j_uri, home=home, timeout=300)


def test_the_demo_prints_a_drift_answer_with_its_sources(demo) -> None:
    kb, _, result = demo
    assert result.kb == kb and result.extractive and result.answer.startswith(EXTRACTIVE)
    cited = {source.id: source for source in result.sources if source.id in result.source_ids}
    assert cited and all(source.text for source in cited.values())
    # The demo question asks who made the light fail: the story's answer is Silas Gorridge.
    assert any("Silas Gorridge" in source.text for source in result.sources)
    assert result.follow_ups and any(a.depth >= 1 for a in result.intermediate)


def test_query_prints_markdown_or_json_in_every_mode(demo, neo4j_uri: str) -> None:
    kb, home, _ = demo
    question = "What does the Ninefold Key open?"
    text = run_cli("query", question, "--kb", kb, "--mode", "local", uri=neo4j_uri, home=home)
    assert text.returncode == 0, text.stderr[-2000:]
    assert "Extractive answer" in text.stdout and "Cited sources" in text.stdout
    for mode in ("basic", "entity"):
        out = run_cli("query", question, "--kb", kb, "--mode", mode, "--json", uri=neo4j_uri, home=home)
        assert out.returncode == 0, out.stderr[-2000:]
        result = SearchResult.model_validate(json.loads(out.stdout))
        assert result.mode == mode and result.source_ids
        assert all(source.id and source.text for source in result.context.sources)


def test_query_streams_the_answer_first_and_no_stream_prints_it_whole(demo, neo4j_uri: str) -> None:
    kb, home, _ = demo
    question = "Who keeps the Cinder Point Lighthouse?"
    whole = run_cli("query", question, "--kb", kb, "--mode", "drift", "--json", uri=neo4j_uri, home=home)
    answer = json.loads(whole.stdout)["answer"]
    streamed = run_cli("query", question, "--kb", kb, "--mode", "drift", uri=neo4j_uri, home=home)
    assert streamed.returncode == 0, streamed.stderr[-2000:]
    # The answer's text as it was written (raw Markdown), then the rest of the result rendered.
    assert streamed.stdout.startswith(answer + "\n") and "Cited sources" in streamed.stdout
    assert "Follow-up tree" in streamed.stdout
    plain = run_cli("query", question, "--kb", kb, "--mode", "drift", "--no-stream", uri=neo4j_uri, home=home)
    assert plain.returncode == 0 and not plain.stdout.startswith(answer) and question in plain.stdout


def test_query_runs_global_search_at_a_chosen_level(demo, neo4j_uri: str) -> None:
    kb, home, _ = demo
    question = "What are the main themes of the story?"
    default = run_cli("query", question, "--kb", kb, "--mode", "global", "--json", uri=neo4j_uri, home=home)
    assert default.returncode == 0, default.stderr[-2000:]
    result = GlobalResult.model_validate(json.loads(default.stdout))
    assert result.mode == "global" and result.extractive and result.answer.startswith(EXTRACTIVE)
    assert result.level is not None and result.level.reason == "budget"
    assert result.level.level == max(result.level.levels) and result.reports
    coarse = run_cli(
        "query", question, "--kb", kb, "--mode", "global", "--level", "0", "--json", uri=neo4j_uri, home=home
    )
    assert coarse.returncode == 0, coarse.stderr[-2000:]
    chosen = GlobalResult.model_validate(json.loads(coarse.stdout)).level
    assert chosen is not None and (chosen.level, chosen.reason) == (0, "query")
    text = run_cli("query", question, "--kb", kb, "--mode", "global", uri=neo4j_uri, home=home)
    assert text.returncode == 0 and "Key points" in text.stdout and "global search" in text.stdout
    # A level the kb lacks, or a level for another mode: exit 1 with the reason, before any search.
    missing = run_cli("query", question, "--kb", kb, "--mode", "global", "--level", "42", uri=neo4j_uri, home=home)
    assert missing.returncode == 1 and "levels are" in missing.stderr and "Traceback" not in missing.stderr
    other = run_cli("query", question, "--kb", kb, "--mode", "local", "--level", "0", uri=neo4j_uri, home=home)
    assert other.returncode == 1 and "does not apply to local" in other.stderr


def test_query_errors_have_meaningful_exit_codes_and_no_traceback(demo, neo4j_uri: str) -> None:
    _, home, _ = demo
    unknown = run_cli("query", "Who?", "--kb", "no-such-kb", "--mode", "basic", uri=neo4j_uri, home=home)
    assert unknown.returncode == 1 and "no-such-kb" in unknown.stderr and "Traceback" not in unknown.stderr
    bad_mode = run_cli("query", "Who?", "--kb", "x", "--mode", "everything", uri=neo4j_uri, home=home)
    flat = " ".join(bad_mode.stderr.replace("│", " ").split())  # the error box wraps long lines
    assert bad_mode.returncode == 2 and "drift, global, local, entity, basic" in flat
    down = run_cli("query", "Who?", "--kb", "x", uri="bolt://127.0.0.1:1", home=home)
    assert down.returncode == 3 and "Traceback" not in down.stderr
