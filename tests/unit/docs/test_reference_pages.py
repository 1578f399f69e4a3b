"""The configuration and CLI references are generated from the code, and the committed pages are current."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import typer

from driftrag.cli import app
from driftrag.settings import Settings

ROOT = Path(__file__).resolve().parents[3]


def _generator():
    spec = importlib.util.spec_from_file_location("generate_reference", ROOT / "docs" / "generate_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GENERATOR = _generator()


@pytest.mark.parametrize("page", list(GENERATOR.pages()), ids=lambda path: path.name)
def test_the_committed_reference_pages_are_those_of_the_code(page: Path) -> None:
    assert page.read_text(encoding="utf-8") == GENERATOR.pages()[page], (
        f"{page.relative_to(ROOT)} is out of date: run .venv/bin/python docs/generate_reference.py"
    )


def test_every_setting_is_documented_with_its_variable_and_default() -> None:
    page = GENERATOR.configuration_page()
    for name, field in Settings.model_fields.items():
        (variable, *_) = GENERATOR.env_names(name, field)
        assert f"| `{variable}`" in page, name
        assert field.description and " ".join(field.description.split()).split("`")[0] in page, name
    assert "| `DRIFTRAG_QUERY_MAX_LLM_CALLS` | integer, ≥ 2 | `20` |" in page
    assert "| `DRIFTRAG_CHUNK_SIZE` | integer, ≥ 50 | `1200` |" in page
    assert "| `DRIFTRAG_LLM_PROVIDER` | `auto` \\| `openai` \\| `offline` \\| `local` | `auto` |" in page
    # Nothing of the machine that generated it: the home folder is the default's spelling.
    assert "`~/.cache/driftrag`" in page and str(Path.home()) not in page


def _commands(command, path):
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _commands(sub, [*path, name])


def test_every_command_and_option_is_in_the_cli_reference() -> None:
    page = GENERATOR.cli_page()
    for path, command in _commands(typer.main.get_command(app), ["driftrag"]):
        assert f" `{' '.join(path)}`\n" in page, path
        for param in command.params:
            if param.name in GENERATOR.TYPER_OWN:
                continue
            shown = f"`{param.name.upper()}`" if param.param_type_name == "argument" else f"`{param.opts[0]}`"
            assert shown in page, (path, param.name)
    assert "--install-completion" not in page
