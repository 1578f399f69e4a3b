"""`driftrag kb config show|set|clear|preview` and `ingest --extract-config`, driven as a user does: the
executable in a subprocess, offline, against the test Neo4j. A bad file is one error line, exit 1, and
nothing is changed."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from tests.support.cli import run_cli

ROOT = Path(__file__).resolve().parents[2]
FRENCH_EXAMPLE = ROOT / "docs" / "examples" / "extract-config.fr.json"
TEXT = (
    "Jeanne Morel dirigeait l'imprimerie Morel et Fils à Lyon. Jeanne Morel engagea Paul Besson en 1862.\n\n"
    "Paul Besson grava les planches de l'Almanach des canuts pour Jeanne Morel. Louis Gardet rédigea "
    "l'Almanach des canuts avec Paul Besson.\n"
)


def _one_error_line(done, *expected: str) -> None:
    assert done.returncode == 1, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), done.stderr
    assert all(part in lines[0] for part in expected), lines[0]


def test_set_show_clear_and_bad_files(neo4j_uri: str, tmp_path: Path) -> None:
    kb = f"test-cli-config-{uuid.uuid4().hex[:8]}"
    bad_json, bad_config = tmp_path / "broken.json", tmp_path / "wrong.json"
    bad_json.write_text('{"tags": ["LEADS",', encoding="utf-8")
    bad_config.write_text(json.dumps({"tags": ["отношение"], "<b>hostile</b>": 1}), encoding="utf-8")
    try:
        _one_error_line(run_cli("kb", "config", "show", "--kb", kb, uri=neo4j_uri, home=tmp_path), kb)
        stored = run_cli("kb", "config", "set", str(FRENCH_EXAMPLE), "--kb", kb, uri=neo4j_uri, home=tmp_path)
        assert stored.returncode == 0, stored.stderr
        assert f"kb {kb}: extract config stored" in stored.stdout and "extraction on" in stored.stdout

        for bad, expected in (
            (bad_json, ("not valid JSON", "line 1")),
            (bad_config, ("tags.0:", "unknown field")),
            (tmp_path / "missing.json", ("cannot be read",)),
        ):
            done = run_cli("kb", "config", "set", str(bad), "--kb", kb, uri=neo4j_uri, home=tmp_path)
            _one_error_line(done, str(bad), *expected)
            assert "hostile" not in done.stderr and "отношение" not in done.stderr

        shown = run_cli("kb", "config", "show", "--kb", kb, "--json", uri=neo4j_uri, home=tmp_path)
        assert shown.returncode == 0, shown.stderr
        status = json.loads(shown.stdout)
        assert status["stored"] and status["config"] == json.loads(FRENCH_EXAMPLE.read_text(encoding="utf-8"))
        text = run_cli("kb", "config", "show", "--kb", kb, uri=neo4j_uri, home=tmp_path).stdout
        assert "its own extract config (8 relation labels, 8 example nodes, 7 example relations)" in text
        assert "global switch (graph_extraction) on, kb switch (enabled) on" in text

        cleared = run_cli("kb", "config", "clear", "--kb", kb, "--json", uri=neo4j_uri, home=tmp_path)
        assert cleared.returncode == 0 and json.loads(cleared.stdout)["stored"] is False
    finally:
        run_cli("delete", "--kb", kb, "--yes", uri=neo4j_uri, home=tmp_path, timeout=300)


def test_ingest_with_a_config_and_an_offline_preview(neo4j_uri: str, tmp_path: Path) -> None:
    kb = f"test-cli-ingest-config-{uuid.uuid4().hex[:8]}"
    corpus, broken = tmp_path / "imprimeurs.txt", tmp_path / "broken.json"
    corpus.write_text(TEXT, encoding="utf-8")
    broken.write_text("[1, 2]", encoding="utf-8")
    try:
        refused = run_cli(
            "ingest", str(corpus), "--kb", kb, "--extract-config", str(broken), uri=neo4j_uri, home=tmp_path
        )
        _one_error_line(refused, "must be a JSON object")
        _one_error_line(run_cli("stats", "--kb", kb, uri=neo4j_uri, home=tmp_path), kb)  # nothing was written

        done = run_cli(
            "ingest",
            str(corpus),
            "--kb",
            kb,
            "--extract-config",
            str(FRENCH_EXAMPLE),
            "--json",
            uri=neo4j_uri,
            home=tmp_path,
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["counts"]["documents"] == 1
        shown = json.loads(run_cli("kb", "config", "show", "--kb", kb, "--json", uri=neo4j_uri, home=tmp_path).stdout)
        assert shown["stored"] and "Jeanne Morel" in shown["config"]["text"]

        preview = run_cli("kb", "config", "preview", str(corpus), "--kb", kb, uri=neo4j_uri, home=tmp_path)
        assert preview.returncode == 0, preview.stderr
        assert preview.stdout.startswith("offline extraction of 1 chunk:") and "(nothing stored)" in preview.stdout
        assert "entity Jeanne Morel [" in preview.stdout and "entity Paul Besson [" in preview.stdout
        # The offline extractor recognises the config's example names ("Morel et Fils" has no capitalised
        # second word), and says what of the config it cannot follow.
        assert "entity Morel et Fils [" in preview.stdout and "entity Almanach des canuts [" in preview.stdout
        assert "warning: offline extraction ignores the extract config's" in preview.stdout
    finally:
        run_cli("delete", "--kb", kb, "--yes", uri=neo4j_uri, home=tmp_path, timeout=300)
