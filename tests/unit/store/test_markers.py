"""The search markers' statements: a new kb starts at the current marker version."""

from __future__ import annotations

import re

from driftrag.store.cypher import documents, graph
from driftrag.store.cypher.markers import SEARCH_MARKERS_VERSION


def test_every_statement_creating_a_kb_sets_the_current_marker_version() -> None:
    statements = [
        value
        for module in (documents, graph)
        for value in vars(module).values()
        if isinstance(value, str) and "MERGE (k:__KnowledgeBase__" in value
    ]
    assert len(statements) >= 4
    for statement in statements:
        # A kb created without it would be rewritten by the next schema setup, marker by marker.
        assert re.search(rf"ON CREATE SET [^\n]*k\.search_markers = {SEARCH_MARKERS_VERSION}\b", statement), statement
