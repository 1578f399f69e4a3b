"""The command line starts light: what a command does not use is not imported.

Each check runs in a fresh interpreter (this one has imported everything) and reads its `sys.modules`.
The start-up times themselves are measured by `benchmarks/cli_startup.py`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

# The model side, the HTTP server, the graph algorithms, the Neo4j driver (with the numpy and pandas it
# imports when installed), the tokenizer and the offline language data.
HEAVY = (
    "llama_index",
    "workflows",
    "openai",
    "fastapi",
    "starlette",
    "uvicorn",
    "graspologic_native",
    "networkx",
    "numpy",
    "pandas",
    "pyarrow",
    "neo4j",
    "tiktoken",
    "nltk",
)


def _imported(script: str, *also: str) -> list[str]:
    """The top-level packages of HEAVY (and pydantic_settings, and `also`) that `script` leaves imported."""
    watched = [*HEAVY, "pydantic_settings", *also]
    probe = (
        script
        + "\nimport json, sys\n"
        + f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({watched!r}))))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DRIFTRAG_", "OPENAI_", "NEO4J_"))}
    env["COLUMNS"] = "80"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_the_command_line_and_its_help_load_neither_pydantic_nor_asyncio() -> None:
    # `driftrag --help` needs neither; a command's own options are coerced by typer through pydantic.
    script = """
import contextlib, io
from driftrag.cli import app
with contextlib.redirect_stdout(io.StringIO()):
    try:
        app(["--help"], prog_name="driftrag", standalone_mode=False)
    except SystemExit:
        pass
"""
    assert _imported(script, "pydantic", "pydantic_core", "asyncio") == []


def test_the_help_of_every_command_imports_nothing_heavy() -> None:
    script = """
import contextlib, io
import typer.main
from driftrag.cli import app

def walk(command, path):
    yield path
    for name, sub in getattr(command, "commands", {}).items():
        yield from walk(sub, [*path, name])

root = typer.main.get_command(app)
for path in walk(root, []):
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            root.main([*path, "--help"], prog_name="driftrag", standalone_mode=False)
        except SystemExit:
            pass
"""
    assert _imported(script) == []


def test_info_reads_the_model_settings_without_loading_a_model() -> None:
    script = """
import contextlib, io
from driftrag.cli import app
with contextlib.redirect_stdout(io.StringIO()):
    app(["info"], prog_name="driftrag", standalone_mode=False)
"""
    assert _imported(script) == ["pydantic_settings"]


def test_an_engine_that_only_reads_the_graph_loads_no_model_library() -> None:
    # Constructing the engine wires the Neo4j stores; the model side waits for a command that needs it.
    script = """
from driftrag.facade import DriftRAG
from driftrag.settings import Settings
DriftRAG(Settings(_env_file=None, neo4j_uri="bolt://127.0.0.1:1", llm_provider="offline"))
"""
    loaded = set(_imported(script, "json_repair"))
    # json_repair parses model answers.
    model_side = {
        "llama_index",
        "workflows",
        "openai",
        "fastapi",
        "uvicorn",
        "graspologic_native",
        "nltk",
        "json_repair",
    }
    assert loaded & model_side == set()
