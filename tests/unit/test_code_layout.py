"""Project rules that code review alone would miss."""

from __future__ import annotations

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
        and "fakes" not in path.parts
    ]
    assert misnamed == []
