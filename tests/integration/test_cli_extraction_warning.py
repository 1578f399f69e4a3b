"""A run in which the model extracted nothing from most chunks says so on stderr, in `--json` and in
`stats` (a model that answers valid but empty JSON: the run succeeds, its graph is empty)."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

from tests.fakes.openai_server import FakeOpenAIServer
from tests.support.cli import CLI, cli_env

DIMENSION = 384  # the offline embedder's, so the shared vector indexes stay as they are


def test_an_empty_model_extraction_is_said_loudly(neo4j_uri: str, tmp_path: Path) -> None:
    (tmp_path / "story.txt").write_text(
        "Captain Mirela Voss sailed the Grey Reef with Jonas Pell.\n\nThe lighthouse keeper Ada Brandt watched them.",
        encoding="utf-8",
    )
    kb = f"test-empty-{uuid.uuid4().hex[:8]}"
    empty = json.dumps({"entities": [], "relationships": []})
    with FakeOpenAIServer(responder=lambda _: empty, embedding_dimension=DIMENSION) as server:
        env = cli_env(neo4j_uri, tmp_path) | {
            "OPENAI_API_KEY": "test",
            "OPENAI_BASE_URL": server.base_url,
            "DRIFTRAG_EMBEDDING_DIMENSIONS": str(DIMENSION),
            "DRIFTRAG_LLM_CACHE": "false",
        }

        def cli(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([str(CLI), *args], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)

        try:
            ingested = cli("ingest", str(tmp_path / "story.txt"), "--kb", kb, "--json")
            stats = cli("stats", "--kb", kb)
        finally:
            cli("delete", "--kb", kb, "--yes")
    assert ingested.returncode == 0, ingested.stderr
    assert "warning: 1 of 1 chunks got no usable model extraction" in ingested.stderr
    result = json.loads(ingested.stdout)
    assert result["counts"]["empty_extracted_chunks"] == 1
    assert result["warnings"][0].startswith("1 of 1 chunks got no usable model extraction")
    assert stats.returncode == 0, stats.stderr
    assert "warning: 1 of 1 chunks got no usable model extraction" in stats.stdout
