"""Exit codes the CLI shares with the HTTP API: an unknown kb (HTTP 404) and a too long question (HTTP 422)
exit 1 with a one-line message."""

from __future__ import annotations

from pathlib import Path

from tests.support.cli import run_cli


def test_stats_of_an_unknown_kb_exits_1(neo4j_uri: str, tmp_path: Path) -> None:
    done = run_cli("stats", "--kb", "nosuchkb-cli", uri=neo4j_uri, home=tmp_path, timeout=300)
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "nosuchkb-cli" in done.stderr and "error" in done.stderr
    assert done.stdout == ""


def test_a_too_long_question_exits_1_before_connecting(tmp_path: Path) -> None:
    # A Neo4j that is not there: the question is refused before any connection is tried.
    question = " ".join(["house"] * 1001)
    done = run_cli("query", question, "--kb", "sample", uri="bolt://127.0.0.1:1", home=tmp_path, timeout=300)
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "too long: 1001 tokens" in done.stderr
