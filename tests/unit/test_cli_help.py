"""`--help` of every command: examples that parse, no type tags, lines that fit an 80-column terminal."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from typing import Any

import typer.main

from driftrag.cli import app

TYPE_TAG = re.compile(r"<(str|bool|int|float|path|list\[|[a-z ]*range)", re.IGNORECASE)


def _leaves(command: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    if hasattr(command, "commands"):  # a group
        return [leaf for name, sub in command.commands.items() for leaf in _leaves(sub, (*path, name))]
    return [(path, command)]


def _examples(command: Any) -> list[str]:
    lines = (line.strip() for line in (command.epilog or "").splitlines())
    return [line.removeprefix("$ ") for line in lines if line.startswith("$ ")]


def test_every_command_shows_examples_that_parse() -> None:
    root = typer.main.get_command(app)
    leaves = _leaves(root)
    assert len(leaves) > 30
    for path, command in leaves:
        examples = _examples(command)
        assert examples, f"driftrag {' '.join(path)} has no example"
        for example in examples:
            words = shlex.split(example.partition(" > ")[0])  # a redirection is the shell's
            assert words[: len(path) + 1] == ["driftrag", *path], example
            # Parsing runs the options' checks (kb ids, choices) without running the command.
            parent = root.context_class(root, info_name="driftrag")
            command.make_context(path[-1], words[len(path) + 1 :], parent=parent)


def test_help_fits_80_columns_without_type_tags() -> None:
    script = """
import contextlib, io, json
import typer.main
from driftrag.cli import app

def walk(command, path):
    yield path
    if hasattr(command, "commands"):
        for name, sub in command.commands.items():
            yield from walk(sub, [*path, name])

root, helps = typer.main.get_command(app), {}
for path in walk(root, []):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            root.main([*path, "--help"], prog_name="driftrag", standalone_mode=False)
        except SystemExit:
            pass
    helps[" ".join(path)] = out.getvalue()
print(json.dumps(helps))
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DRIFTRAG_", "OPENAI_", "NEO4J_"))}
    env |= {"COLUMNS": "80", "TERM": "dumb", "NO_COLOR": "1"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    helps = json.loads(done.stdout)
    assert len(helps) > 40
    for path, text in helps.items():
        assert "Usage: driftrag" in text, path
        assert not TYPE_TAG.search(text), (path, TYPE_TAG.search(text))
        assert max(len(line) for line in text.splitlines()) <= 80, path
    # A leaf command's help ends with its examples; a docstring paragraph is one paragraph, not its source lines.
    assert "$ driftrag stats --kb alice" in helps["stats"]
    assert "statement by statement), then its sources." in " ".join(helps["query"].split())
