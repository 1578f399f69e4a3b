"""The pure parts of graph search: request validation, field cuts, and shaping the store's rows."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from driftrag.errors import InvalidIdentifierError, InvalidQueryError
from driftrag.models.search import OneHopCounts, OneHopEntity, OneHopPart, OneHopRelationship
from driftrag.search.graph_search import (
    MAX_QUERY_CHARS,
    FieldCutter,
    GraphSearchRequest,
    GraphSearchResponse,
    ResponseBuilder,
    TruncatedField,
    parse_request,
)


def entity_row(entity_id: str, name: str) -> OneHopEntity:
    return OneHopEntity(entity_id, name, "PERSON", f"about {name}", [f"about {name}"], ["chunk-1"], 1)


def relationship_row(rel_id: str, source: OneHopEntity, target: OneHopEntity) -> OneHopRelationship:
    return OneHopRelationship(rel_id, source.id, target.id, "KNOWS", "they meet", 2.0, ["chunk-1"], 1)


@pytest.mark.parametrize("query", ["", " ", "\t\n", "x" * (MAX_QUERY_CHARS + 1)])
def test_blank_or_oversized_queries_are_refused(query: str) -> None:
    with pytest.raises(ValidationError):
        GraphSearchRequest(kb="kb", query=query)


@pytest.mark.parametrize("kb", ["", "kb'", "a b", "x" * 65])
def test_bad_kb_ids_are_refused(kb: str) -> None:
    with pytest.raises(ValidationError, match="invalid knowledge base id"):
        GraphSearchRequest(kb=kb, query="Alice")


def test_queries_are_kept_as_given() -> None:
    request = GraphSearchRequest(kb="kb", query=" Rabbit", max_seeds=3)
    assert request.query == " Rabbit" and request.max_seeds == 3 and request.max_rows is None
    with pytest.raises(ValidationError):
        GraphSearchRequest(kb="kb", query="Alice", max_rows=0)


def test_parse_request_raises_the_project_errors() -> None:
    with pytest.raises(InvalidQueryError, match="query: Value error, the query must contain"):
        parse_request("kb", "  ")
    with pytest.raises(InvalidQueryError, match="max_seeds"):
        parse_request("kb", "Alice", max_seeds=0)
    with pytest.raises(InvalidIdentifierError):
        parse_request("kb'", "Alice")
    assert parse_request("kb", "Alice", max_rows=7).max_rows == 7


def test_field_cutter_records_each_cut() -> None:
    cutter = FieldCutter(max_chars=5, max_items=2)
    assert cutter.text("e1", "description", "short") == "short"
    assert cutter.text("e1", "description", "longer text") == "longe"
    assert cutter.texts("e1", "attributes", ["abcdefg", "ok", "dropped"]) == ["abcde", "ok"]
    assert cutter.items("e1", "source_chunk_ids", ["a", "b"]) == ["a", "b"]
    assert cutter.texts("e2", "attributes", ["ok", "fine"]) == ["ok", "fine"]  # nothing to cut, nothing recorded
    assert cutter.texts("e3", "attributes", ["ok", "too long"]) == ["ok", "too l"]  # few items, one too long
    assert [
        (f.owner_id, f.field, f.original_length, f.returned_length)
        for f in map(TruncatedField.model_validate, cutter.fields)
    ] == [
        ("e1", "description", 11, 5),
        ("e1", "attributes", 3, 2),
        ("e1", "attributes[0]", 7, 5),
        ("e3", "attributes[1]", 8, 5),
    ]


def test_source_ids_have_their_own_cap_and_report_the_stored_count() -> None:
    cutter = FieldCutter(max_chars=5, max_items=3, max_sources=2)
    # Three valid ids shown of 40 stored: the cut gives the stored count.
    assert cutter.sources("e1", ["c1", "c2", "c3"], stored=40) == ["c1", "c2"]
    # Fewer valid ids than stored, all shown: nothing was cut from what the store could show.
    assert cutter.sources("e2", ["c1"], stored=5) == ["c1"]
    assert cutter.items("e1", "attributes", ["a", "b", "c"]) == ["a", "b", "c"]
    assert [
        (f.owner_id, f.field, f.original_length, f.returned_length)
        for f in map(TruncatedField.model_validate, cutter.fields)
    ] == [("e1", "source_chunk_ids", 40, 2)]


def build(request: GraphSearchRequest, counts: OneHopCounts, *parts: OneHopPart) -> GraphSearchResponse:
    builder = ResponseBuilder(request, FieldCutter(max_chars=100, max_items=10))
    for part in parts:
        builder.add(part)
    return builder.finish(counts)


def test_the_response_dedups_across_parts_and_keeps_seed_ranks() -> None:
    alice, rabbit, hatter = entity_row("e-a", "Alice"), entity_row("e-r", "Rabbit"), entity_row("e-h", "Hatter")
    shared = relationship_row("r-1", alice, rabbit)
    request = GraphSearchRequest(kb="kb", query="Alice")

    response = build(
        request,
        OneHopCounts(candidates_matched=3, candidates_matched_is_lower_bound=False, rows_total=4,
                     rows_total_is_lower_bound=False),
        # Alice's neighbour Rabbit is itself the second seed: it must stay a seed.
        OneHopPart(seeds=[alice, rabbit], pairs=[(0, shared, "e-r")], neighbours=[rabbit]),
        # The shared relationship again, from Rabbit's side, in a later part: returned once.
        OneHopPart(seeds=[], pairs=[(1, shared, "e-a")], neighbours=[alice]),
        OneHopPart(seeds=[], pairs=[(1, relationship_row("r-2", rabbit, hatter), "e-h")], neighbours=[hatter]),
    )  # fmt: skip

    assert [(e.name, e.is_seed, e.seed_rank, e.match) for e in response.entities] == [
        ("Alice", True, 1, "exact"),
        ("Rabbit", True, 2, "substring"),
        ("Hatter", False, None, "neighbour"),
    ]
    assert [r.id for r in response.relationships] == ["r-1", "r-2"]
    # Endpoint names come from the seeds and neighbours of the parts.
    assert [(r.source_name, r.target_name) for r in response.relationships] == [
        ("Alice", "Rabbit"),
        ("Rabbit", "Hatter"),
    ]
    assert response.truncation.model_dump() == {
        "results_truncated": True,
        "rows_returned": 3,
        "rows_total": 4,
        "rows_total_is_lower_bound": False,
        "candidates_truncated": True,
        "candidates_matched": 3,
        "candidates_matched_is_lower_bound": False,
        "candidates_returned": 2,
        "fields_truncated": False,
        "fields": [],
    }
    assert GraphSearchResponse.model_validate_json(response.model_dump_json()) == response


def test_a_seed_without_relationships_is_one_row() -> None:
    response = build(
        GraphSearchRequest(kb="kb", query="Do"),
        OneHopCounts(1, False, 1, False),
        OneHopPart(seeds=[entity_row("e-d", "Dodo")], pairs=[], neighbours=[]),
    )
    assert [e.match for e in response.entities] == ["substring"]
    assert response.truncation.rows_returned == 1 and not response.truncation.results_truncated


def test_each_part_is_validated_as_it_comes() -> None:
    builder = ResponseBuilder(GraphSearchRequest(kb="kb", query="Do"), FieldCutter(100, 10))
    broken = OneHopEntity("e-d", "Dodo", "PERSON", "about", ["about"], ["chunk-1", None], 2)  # type: ignore[list-item]
    with pytest.raises(ValidationError, match="source_chunk_ids"):
        builder.add(OneHopPart(seeds=[broken], pairs=[], neighbours=[]))
