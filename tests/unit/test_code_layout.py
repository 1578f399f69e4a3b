"""Project rules that code review alone would miss."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CYPHER = re.compile(r"\b(MATCH|MERGE|UNWIND|DETACH DELETE|CREATE CONSTRAINT|CREATE VECTOR INDEX)\b")


def test_cypher_lives_only_in_the_store() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "driftrag").rglob("*.py")
        if "store" not in path.relative_to(ROOT / "driftrag").parts and CYPHER.search(path.read_text())
    ]
    assert offenders == []


def test_every_test_file_is_collectable() -> None:
    # pytest only collects test_*.py; a misnamed file would silently never run.
    misnamed = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "tests").rglob("*.py")
        if path.name not in {"__init__.py", "conftest.py"}
        and not path.name.startswith("test_")
        and not {"fakes", "support"} & set(path.parts)  # test doubles; helpers that drive real programs
    ]
    assert misnamed == []


def _imports(path: Path) -> set[str]:
    """Every driftrag module a file imports, at any depth (function-level imports count too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name == "driftrag" or name.startswith("driftrag.")}


def _offenders(package: str, forbidden: tuple[str, ...]) -> list[str]:
    return sorted(
        f"{path.relative_to(ROOT)} imports {name}"
        for path in (ROOT / "driftrag" / package).rglob("*.py")
        for name in _imports(path)
        if any(name == f"driftrag.{f}" or name.startswith(f"driftrag.{f}.") for f in forbidden)
    )


def test_the_kernel_and_the_store_import_nothing_from_the_stages() -> None:
    stages = ("ingestion", "search", "offline", "workflows", "eval", "api", "cli", "facade", "composition")
    assert _offenders("store", stages) == []
    assert _offenders("models", (*stages, "store", "providers")) == []
    assert _offenders("providers", stages) == []


def test_search_imports_nothing_from_ingestion() -> None:
    assert _offenders("search", ("ingestion",)) == []


def test_only_the_composition_root_imports_the_offline_mode() -> None:
    importers = sorted(
        str(path.relative_to(ROOT))
        for path in (ROOT / "driftrag").rglob("*.py")
        if "offline" not in path.relative_to(ROOT / "driftrag").parts
        and any(name == "driftrag.offline" or name.startswith("driftrag.offline.") for name in _imports(path))
    )
    assert importers == ["driftrag/composition.py"]


def test_store_classes_are_built_only_in_the_store_and_the_composition_root() -> None:
    construction = re.compile(
        r"\b(Neo4jStore\.from_settings|Neo4jStore|DocumentWriter|GraphStore|SearchStore|GraphSearchStore|GraphViewStore)\("
    )
    offenders = sorted(
        str(path.relative_to(ROOT))
        for path in (ROOT / "driftrag").rglob("*.py")
        if "store" not in path.relative_to(ROOT / "driftrag").parts
        and path.name != "composition.py"
        and construction.search(path.read_text())
    )
    assert offenders == []


def test_the_front_runs_every_mode_from_the_registry() -> None:
    # The facade, CLI, API and evaluation reach the modes through `run_query`, never a mode function.
    direct = re.compile(r"from driftrag\.search\.(basic|local|entity) import")
    front = ("facade.py", "cli", "api", "eval", "workflows")
    offenders = sorted(
        str(path.relative_to(ROOT))
        for path in (ROOT / "driftrag").rglob("*.py")
        if path.relative_to(ROOT / "driftrag").parts[0] in front and direct.search(path.read_text())
    )
    assert offenders == []
