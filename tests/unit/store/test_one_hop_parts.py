"""The graph search's streamed parts: checked, converted and handed over in order, or refused whole."""

from __future__ import annotations

from typing import Any

import pytest

from driftrag.errors import BackendUnavailableError, GraphDisabledError, KnowledgeBaseNotFoundError
from driftrag.models.search import OneHopCounts, OneHopPart
from driftrag.store.cypher.markers import SEARCH_MARKERS_VERSION
from driftrag.store.graph_search import _PartsInOrder

SEED = ["e-1", "Hub", "THING", "the hub", ["the hub"], ["chunk-1"], 1]
NEIGHBOUR = ["e-2", "Leaf", "THING", "a leaf", ["a leaf"], ["chunk-1"], 1]
RELATIONSHIP = ["r-1", "KNOWS", "they meet", 1.0, ["chunk-1"], 1]


def record(part: int, parts: int = 3, **columns: Any) -> dict[str, Any]:
    return {
        "graph_enabled": True,
        "search_markers": SEARCH_MARKERS_VERSION,
        "candidates_matched": 1,
        "candidates_matched_is_lower_bound": False,
        "rows_total": parts,
        "rows_total_is_lower_bound": False,
        "parts": parts,
        "part": part,
        "seeds": [SEED] if part == 0 else [],
        # Seed e-1 -> e-2 in the first part, e-2 -> seed e-1 in the others.
        "pairs": [[0, part == 0, "e-2", RELATIONSHIP]],
        "neighbours": [NEIGHBOUR] if part == 0 else [],
    } | columns


def test_parts_are_handed_over_in_order_as_tuples_whatever_order_they_arrive_in() -> None:
    handed: list[OneHopPart] = []
    parts = _PartsInOrder("kb", handed.append)
    parts.add(record(0))
    parts.add(record(2))
    assert len(handed) == 1  # part 2 waits for part 1
    parts.add(record(1))
    assert [len(part.seeds) for part in handed] == [1, 0, 0]
    assert handed[0].seeds[0].name == "Hub" and handed[0].neighbours[0].id == "e-2"
    # A pair's relationship gets its endpoints from its seed and its neighbour, in its direction.
    assert [(pair.source_id, pair.target_id, neighbour) for part in handed for _, pair, neighbour in part.pairs] == [
        ("e-1", "e-2", "e-2"),
        ("e-2", "e-1", "e-2"),
        ("e-2", "e-1", "e-2"),
    ]
    assert parts.counts() == OneHopCounts(1, False, 3, False)


def test_a_missing_part_makes_the_answer_fail_instead_of_coming_short() -> None:
    parts = _PartsInOrder("kb", lambda part: None)
    parts.add(record(0))
    parts.add(record(2))
    with pytest.raises(BackendUnavailableError, match="got 1 of 3 parts"):
        parts.counts()


def test_the_kbs_switches_are_checked_on_the_first_record() -> None:
    with pytest.raises(KnowledgeBaseNotFoundError):
        _PartsInOrder("kb", lambda part: None).counts()  # no record: no such kb
    disabled = {"graph_enabled": False, "search_markers": SEARCH_MARKERS_VERSION}
    with pytest.raises(GraphDisabledError):
        _PartsInOrder("kb", lambda part: None).add(disabled)
    with pytest.raises(BackendUnavailableError, match="schema init"):
        _PartsInOrder("kb", lambda part: None).add({"graph_enabled": True, "search_markers": 0})
