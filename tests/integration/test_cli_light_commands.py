"""Commands that only read the graph connect to the real Neo4j without loading the model side."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

MODEL_SIDE = ("llama_index", "workflows", "openai", "fastapi", "uvicorn", "graspologic_native", "nltk", "tiktoken")
# What the Neo4j driver imports when installed and a CLI run leaves out (`driftrag.cli.lean_imports`).
DRIVER_EXTRAS = ("pandas", "pyarrow")

SCRIPT = """
import json, sys
from driftrag.cli import app
code = 0
try:
    app(sys.argv[1:], prog_name="driftrag")
except SystemExit as exit:
    code = exit.code
print(json.dumps({"code": code, "loaded": sorted({m.split(".")[0] for m in sys.modules} & set(%r))}))
"""


def _run(uri: str, home: Path, *args: str) -> dict:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("OPENAI_", "DRIFTRAG_"))}
    env |= {"NEO4J_URI": uri, "DRIFTRAG_HOME": str(home), "DRIFTRAG_CONNECT_RETRIES": "2"}
    script = SCRIPT % ((*MODEL_SIDE, *DRIVER_EXTRAS),)
    done = subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_kb_list_and_stats_read_neo4j_without_the_model_side(neo4j_uri: str, tmp_path: Path) -> None:
    listing = _run(neo4j_uri, tmp_path, "kb", "list", "--json")
    assert listing == {"code": 0, "loaded": []}
    unknown = _run(neo4j_uri, tmp_path, "stats", "--kb", "nosuchkb-light")  # connected, asked, refused: exit 1
    assert unknown == {"code": 1, "loaded": []}


QUERY_SCRIPT = """
import json, sys
from driftrag.cli import app
code = 0
try:
    app(sys.argv[1:], prog_name="driftrag")
except SystemExit as exit:
    code = exit.code
print(json.dumps({"code": code, "loaded": sorted(m for m in ("llama_index.core", "sqlalchemy") if m in sys.modules)}))
"""


def test_an_offline_query_answers_without_importing_llama_index_core(neo4j_uri: str, kb: str, tmp_path: Path) -> None:
    # LlamaIndex's core costs about a second to import; the offline embedder and the accounting around it
    # are plain classes, so a query (embedding included) never imports it.
    env = {key: value for key, value in os.environ.items() if not key.startswith(("OPENAI_", "DRIFTRAG_"))}
    env |= {"NEO4J_URI": neo4j_uri, "DRIFTRAG_HOME": str(tmp_path), "DRIFTRAG_LLM_PROVIDER": "offline"}
    sample = Path(__file__).resolve().parents[2] / "data" / "sample" / "02-the-lodestone-in-the-lid.md"

    def cli(script: str, *args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-c", script, *args], env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr[-2000:]
        return done

    cli(SCRIPT % ((),), "ingest", str(sample), "--kb", kb)
    try:
        done = cli(QUERY_SCRIPT, "query", "Who found the lodestone?", "--kb", kb, "--json")
        *answer, last = done.stdout.splitlines()
        assert json.loads(last) == {"code": 0, "loaded": []}
        assert json.loads("\n".join(answer))["sources"]
    finally:
        cli(SCRIPT % ((),), "delete", "--kb", kb, "--yes")
