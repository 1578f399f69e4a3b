"""The committed notebooks: outputs cleared, every code cell valid Python (top-level `await` allowed).

Executing them needs Neo4j: tests/integration/test_notebooks.py does that.
"""

from __future__ import annotations

import ast
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))


def test_the_notebooks_are_there() -> None:
    assert [path.name for path in NOTEBOOKS] == ["alice_walkthrough.ipynb", "sample_quickstart.ipynb"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.name)
def test_notebook_is_valid_with_outputs_cleared(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    assert notebook.metadata.kernelspec.name == "python3"
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        assert cell.outputs == [] and cell.execution_count is None, "commit notebooks with their outputs cleared"
        compile(cell.source, path.name, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
