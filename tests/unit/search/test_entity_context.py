"""Entity search's context: similar and linked passages and the entities, each ranked by relevance to
the question across all of them, within their budget shares."""

from __future__ import annotations

from driftrag.models.search import Source
from driftrag.search.entity import entity_context

FILLER = "the harbour lamps burn through the night while the tide turns slowly " * 4


def passage(name: str, text: str = FILLER, origin: str = "vector") -> Source:
    return Source(id=f"chunk-{name}", kind="chunk", title=f"{name}.txt", text=text, origin=origin)


def named(name: str) -> Source:
    return Source(id=f"entity-{name}", kind="entity", title=name, text=f"{name}: keeper of the lamps.")


def test_groups_keep_their_origin_and_the_question_ranks_inside_each() -> None:
    similar = [passage(f"s{i}") for i in range(1, 4)]
    linked = [
        passage("l1", origin="entity:Anselm"),
        passage("l2", f"Anselm keeps the tide tables in the bell tower. {FILLER}", origin="entity:Anselm"),
    ]
    entities = [named("Anselm"), named("Voss")]
    context = entity_context(
        "Where does Anselm keep the tide tables?",
        similar,
        linked,
        entities,
        4000,
        graph_ranking=["chunk-s3", "chunk-l1", "chunk-l2"],
    )
    ids = [s.id for s in context.sources]
    # Similar passages come first, in the question's order, but the one the graph also reaches rises to the top.
    assert ids[:3] == ["chunk-s3", "chunk-s1", "chunk-s2"]
    # Among the linked passages, the one that writes the question's words comes first.
    assert [i for i in ids if i.startswith("chunk-l")] == ["chunk-l2", "chunk-l1"]
    assert {s.origin for s in context.sources if s.id.startswith("chunk-l")} == {"entity:Anselm"}
    assert {"entity-Anselm", "entity-Voss"} <= set(ids)
    assert "## Passages linked to entities named in the question" in context.text
