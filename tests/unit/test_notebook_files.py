"""The committed notebooks: executed, with their outputs, small, and not stale.

`python notebooks/execute.py` writes them; tests/integration/test_notebooks.py executes them against
Neo4j (in memory, never rewriting them). Here, without Neo4j: every code cell is valid Python (top-level
`await` allowed), ran without error in order, and shows something; the outputs were computed from the
code as it is now (the digest `execute.py` records); no output carries a machine's paths, a server
address or an object address; no huge HTML; the Alice walkthrough ran on the whole book and shows the
evaluation's plot.
"""

from __future__ import annotations

import ast
import importlib.util
import itertools
import json
import re
from pathlib import Path
from types import ModuleType

import nbformat
import pytest
from nbformat import NotebookNode

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
MAX_NOTEBOOK_BYTES = 300_000
# Absolute paths of a machine, a Bolt address, a Python object's address: none belongs in a committed output.
MACHINE_SPECIFIC = re.compile(r"(/root/|/home/|/tmp/|/work/|/Users/|[A-Z]:\\\\|bolt://|neo4j://| at 0x[0-9a-f]+)")


def _executor() -> ModuleType:
    spec = importlib.util.spec_from_file_location("notebooks_execute", ROOT / "notebooks" / "execute.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


EXECUTE = _executor()


def _outputs_text(cell: NotebookNode) -> str:
    return json.dumps(cell.get("outputs", []))


def test_the_notebooks_are_there() -> None:
    assert [path.name for path in NOTEBOOKS] == ["alice_walkthrough.ipynb", "sample_quickstart.ipynb"]
    assert sorted(EXECUTE.NAMES) == [path.name for path in NOTEBOOKS]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.name)
def test_notebook_is_committed_executed(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    assert notebook.metadata.kernelspec.name == "python3"
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    for cell in code:
        compile(cell.source, path.name, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    assert [cell.execution_count for cell in code] == list(range(1, len(code) + 1)), "run top to bottom, once"
    assert all(output.output_type != "error" for cell in code for output in cell.outputs)
    # Every cell shows a result but the last, which closes the engine.
    silent = [cell.source.splitlines()[0] for cell in code[:-1] if not cell.outputs]
    assert silent == [], f"cells without outputs (run `python notebooks/execute.py`): {silent}"
    assert code[-1].source.strip() == "await rag.close()"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.name)
def test_outputs_are_of_the_code_as_committed(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    recorded = notebook.metadata.get("driftrag", {}).get("sources_sha256")
    assert recorded == EXECUTE.sources_digest(notebook), (
        f"{path.name}: its code changed since its outputs were made: run `python notebooks/execute.py {path.name}`"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.name)
def test_outputs_are_small_and_machine_independent(path: Path) -> None:
    assert path.stat().st_size < MAX_NOTEBOOK_BYTES
    notebook = nbformat.read(path, as_version=4)
    assert "widgets" not in notebook.metadata
    for cell in notebook.cells:
        assert "execution" not in cell.metadata, "no timing metadata"
        if cell.cell_type != "code":
            continue
        text = _outputs_text(cell)
        assert not MACHINE_SPECIFIC.search(text), MACHINE_SPECIFIC.search(text)
        for output in cell.outputs:
            assert len(output.get("data", {}).get("text/html", "")) <= EXECUTE.MAX_HTML_BYTES
        streams = [output.get("name") if output.output_type == "stream" else None for output in cell.outputs]
        assert not any(a is not None and a == b for a, b in itertools.pairwise(streams)), "streams merged"


def test_the_alice_walkthrough_shows_the_whole_book_and_the_evaluation_plot() -> None:
    notebook = nbformat.read(ROOT / "notebooks" / "alice_walkthrough.ipynb", as_version=4)
    texts = [_outputs_text(cell) for cell in notebook.cells if cell.cell_type == "code"]
    everything = "\n".join(texts)
    assert "ingesting Alice's Adventures in Wonderland (" in everything, "the whole book, not a few chapters"
    assert "12 chapters" in everything
    plots = [
        output
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.outputs
        if "image/png" in output.get("data", {})
    ]
    assert len(plots) == 1
    assert "| method | local | multi-hop |" in everything  # the recall table beside the plot
    assert "interactive graph: kb notebook-alice" in everything  # the widget's text form
