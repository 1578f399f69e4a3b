"""Project rules that code review alone would miss."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

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


TEST_PACKAGES = ("tests.unit", "tests.integration")


def _import_statements(source: str, package: str) -> Iterator[tuple[ast.Import | ast.ImportFrom, set[str]]]:
    """Every import statement of a module of `package`, at any depth, with the modules it may name
    (relative imports resolved; `from P import n` names P and P.n, as n may be a module)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield node, {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            yield node, {base, *(f"{base}.{alias.name}" for alias in node.names)}


def _names_a_test_module(source: str, package: str) -> list[str]:
    """The import statements that name a module of the test packages: a test module or its conftest."""
    return [
        f"{node.lineno}: {ast.unparse(node)}"
        for node, names in _import_statements(source, package)
        if any(name.startswith(f"{test_package}.") for name in names for test_package in TEST_PACKAGES)
    ]


def test_no_test_module_imports_another() -> None:
    # Shared helpers live in tests/support (test doubles in tests/fakes) and fixtures in a conftest that
    # pytest loads; importing a test module or a conftest couples the files and imports the other's tests.
    offenders = [
        f"{path.relative_to(ROOT)}:{statement}"
        for path in sorted((ROOT / "tests").rglob("*.py"))
        for statement in _names_a_test_module(path.read_text(), ".".join(path.parent.relative_to(ROOT).parts))
    ]
    assert offenders == []


@pytest.mark.parametrize(
    "statement",
    [
        "from tests.integration.api.test_ingest_jobs import wait_for",
        "import tests.unit.search.test_llm_tasks",
        "from tests.integration.ingestion.conftest import Ingestor",
        "from tests.integration import test_cli_demo",
        "from .test_graph_search import entity",
        "from ..ingestion.conftest import SMALL_CHUNKS",
    ],
)
def test_the_import_check_sees_every_way_to_import_a_test_module(statement: str) -> None:
    source = f"def helper():\n    {statement}\n"  # a function-level import counts too
    assert _names_a_test_module(source, "tests.integration.search") == [f"2: {statement}"]


@pytest.mark.parametrize(
    "statement",
    [
        "from tests.support.graphs import entity",
        "from tests.fakes.weak_model import WeakChat",
        "from . import graphs",
        "import tests.unit",
    ],
)
def test_the_import_check_lets_shared_helpers_through(statement: str) -> None:
    assert _names_a_test_module(statement, "tests.support") == []


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
        r"\b(Neo4jStore\.from_settings|Neo4jStore|DocumentWriter|GraphStore|SearchStore|GraphSearchStore|GraphViewStore"
        r"|KbLocks|JobStore|InterchangeReader|neo4j_roles)\("
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


# --- the storage seam -------------------------------------------------------------------------------------

STORE = "driftrag.store"
# The one module outside the store that names it: it builds the Neo4j roles (`driftrag.store.roles`).
COMPOSITION_ROOT = "driftrag/composition.py"
SEAM = ROOT / "driftrag" / "models" / "storage.py"
MAX_ROLE_METHODS = 15


def _names_a_store_module(source: str, package: str) -> list[str]:
    """The import statements that name `driftrag.store` or a module of it."""
    return [
        f"{node.lineno}: {ast.unparse(node)}"
        for node, names in _import_statements(source, package)
        if any(name == STORE or name.startswith(f"{STORE}.") for name in names)
    ]


def test_only_the_store_and_the_composition_root_import_a_store_module() -> None:
    # Everything else reaches storage through the roles of driftrag/models/storage.py and the models
    # that cross them, so a second backend needs no change outside store/ but the composition root.
    offenders = [
        f"{path.relative_to(ROOT)}:{statement}"
        for path in sorted((ROOT / "driftrag").rglob("*.py"))
        if path.relative_to(ROOT / "driftrag").parts[0] != "store" and str(path.relative_to(ROOT)) != COMPOSITION_ROOT
        for statement in _names_a_store_module(path.read_text(), ".".join(path.parent.relative_to(ROOT).parts))
    ]
    assert offenders == []


def test_only_the_store_imports_the_neo4j_driver() -> None:
    # The driver's types and errors stay behind the seam: the store turns its failures into driftrag's
    # errors (BackendUnavailableError, ...), so nothing above it handles a Neo4j type.
    offenders = [
        f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}"
        for path in sorted((ROOT / "driftrag").rglob("*.py"))
        if path.relative_to(ROOT / "driftrag").parts[0] != "store"
        for node, found in _import_statements(path.read_text(), ".".join(path.parent.relative_to(ROOT).parts))
        if any(name.split(".")[0] == "neo4j" for name in found)
    ]
    assert offenders == []


@pytest.mark.parametrize(
    "statement",
    [
        "from driftrag.store.views import GraphViewStore",
        "import driftrag.store.graph",
        "import driftrag.store as storage",
        "from driftrag.store import Neo4jStore",
        "from driftrag import store",
        "from ..store.search import SearchStore",
        "from .. import store",
    ],
)
def test_the_store_check_sees_every_way_to_import_a_store_module(statement: str) -> None:
    source = f"def helper():\n    {statement}\n"  # a function-level (lazy) import counts too
    assert _names_a_store_module(source, "driftrag.search") == [f"2: {statement}"]


@pytest.mark.parametrize(
    "statement",
    [
        "from driftrag.models.storage import Stores",
        "from driftrag.models.views import GraphView",
        "from driftrag import models",
        "from ..models.seen_rows import SeenRows",
        "import driftrag.storefront",
    ],
)
def test_the_store_check_lets_the_seam_through(statement: str) -> None:
    assert _names_a_store_module(statement, "driftrag.search") == []


def _role_methods() -> dict[str, list[str]]:
    """Each protocol class of the seam module with the methods it declares."""
    return {
        node.name: [item.name for item in node.body if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)]
        for node in ast.parse(SEAM.read_text()).body
        if isinstance(node, ast.ClassDef) and any(ast.unparse(base) == "Protocol" for base in node.bases)
    }


def test_every_storage_role_is_narrow() -> None:
    roles = _role_methods()
    assert len(roles) >= 10, "the roles are found"
    wide = {name: len(methods) for name, methods in roles.items() if len(methods) > MAX_ROLE_METHODS}
    assert wide == {}


def test_the_seam_names_no_driver_or_store_type() -> None:
    names = [
        name
        for _, found in _import_statements(SEAM.read_text(), "driftrag.models")
        for name in found
        if name.split(".")[0] == "neo4j" or name == STORE or name.startswith(f"{STORE}.")
    ]
    assert names == []
    # The models the roles exchange are driftrag's own: no module of the kernel imports the driver.
    driver = sorted(
        f"{path.relative_to(ROOT)}:{statement}"
        for path in (ROOT / "driftrag" / "models").rglob("*.py")
        for node, found in _import_statements(path.read_text(), "driftrag.models")
        if any(name.split(".")[0] == "neo4j" for name in found)
        for statement in [f"{node.lineno}: {ast.unparse(node)}"]
    )
    assert driver == []
