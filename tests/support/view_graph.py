"""The graph the view tests read, written by `write_graph` through the store APIs (three chunks, all
enabled unless a test disables one; no relationship stores a PMI unless a test says so, as on graphs
written before relationships had one):

    Alice   chunk-1a 1b 2a     Alice -> Rabbit  KNOWS       1a 1b   weight 16
    Rabbit  chunk-1a 1b        Alice -> Cat     KNOWS       1b      weight 4
    Cat     chunk-1b           Alice -> Queen   KNOWS       2a      weight 3
    Queen   chunk-2a           Rabbit -> Cat    KNOWS       1b 2a   weight 12
    Hatter  chunk-2a           Queen -- Hatter  RELATED_TO  2a      weight 5
    Lonely  chunk-1a           Alice -> Ghost   KNOWS       1a      (Ghost has no valid source)
    Ghost   chunk-gone         Cat -> Hatter    KNOWS       gone    (no valid source)

Communities: community-0-0 {Alice, Rabbit, Cat, Lonely} with child community-1-0 {Rabbit, Cat};
community-0-1 {Queen, Hatter, Ghost}.
"""

from __future__ import annotations

from collections.abc import Sequence

from driftrag.models.graph import Community, CommunityReport, MergedEntity, MergedRelationship, stable_hash
from driftrag.store import Neo4jStore
from driftrag.store.graph import GraphStore
from tests.support.graphs import write_documents

SOURCES = {
    "Alice": ["chunk-1a", "chunk-1b", "chunk-2a"],
    "Rabbit": ["chunk-1a", "chunk-1b"],
    "Cat": ["chunk-1b"],
    "Queen": ["chunk-2a"],
    "Hatter": ["chunk-2a"],
    "Lonely": ["chunk-1a"],
    "Ghost": ["chunk-gone"],
}


def eid(name: str) -> str:
    return f"entity-{stable_hash(name)}"


def rid(source: str, target: str) -> str:
    return f"relationship-{stable_hash(source, target)}"


def relationship(
    source: str, target: str, sources: Sequence[str], weight: float, type_: str = "KNOWS", **extra
) -> MergedRelationship:
    return MergedRelationship(
        id=rid(source, target),
        source_id=eid(source),
        target_id=eid(target),
        type=type_,
        descriptions=[f"{source} and {target}"],
        weight=weight,
        source_chunk_ids=list(sources),
        **extra,
    )


def relationships(**extra_by_pair) -> list[MergedRelationship]:
    rows = [
        ("Alice", "Rabbit", ["chunk-1a", "chunk-1b"], 16, "KNOWS"),
        ("Alice", "Cat", ["chunk-1b"], 4, "KNOWS"),
        ("Alice", "Queen", ["chunk-2a"], 3, "KNOWS"),
        ("Rabbit", "Cat", ["chunk-1b", "chunk-2a"], 12, "KNOWS"),
        ("Queen", "Hatter", ["chunk-2a"], 5, "RELATED_TO"),
        ("Alice", "Ghost", ["chunk-1a"], 5, "KNOWS"),
        ("Cat", "Hatter", ["chunk-gone"], 5, "KNOWS"),
    ]
    return [
        relationship(s, t, sources, weight, type_, **extra_by_pair.get(f"{s}-{t}", {}))
        for s, t, sources, weight, type_ in rows
    ]


async def write_graph(
    store: Neo4jStore, kb: str, rels: Sequence[MergedRelationship] | None = None, *, total_chunks: int = 0
) -> None:
    """The test graph; `total_chunks` 0 writes it as a graph that keeps no N (its PMIs are estimated)."""
    await write_documents(store, kb)
    entities = [
        MergedEntity(id=eid(name), name=name, normalised_name=name.lower(), type="CHARACTER", source_chunk_ids=sources)
        for name, sources in SOURCES.items()
    ]
    graph = GraphStore(store)
    await graph.replace_entity_layer(kb, entities, relationships() if rels is None else rels, total_chunks=total_chunks)
    communities = [
        Community(
            id="community-0-0",
            level=0,
            child_ids=["community-1-0"],
            entity_ids=[eid(n) for n in ("Alice", "Rabbit", "Cat", "Lonely")],
        ),
        Community(id="community-1-0", level=1, parent_id="community-0-0", entity_ids=[eid("Rabbit"), eid("Cat")]),
        Community(id="community-0-1", level=0, entity_ids=[eid(n) for n in ("Queen", "Hatter", "Ghost")]),
    ]
    report = CommunityReport(community_id="community-0-0", level=0, title="Alice and the Rabbit", summary="", rating=5)
    finest = {eid(n): "community-0-0" for n in ("Alice", "Lonely")}
    finest |= {eid(n): "community-1-0" for n in ("Rabbit", "Cat")}
    finest |= {eid(n): "community-0-1" for n in ("Queen", "Hatter")}
    await graph.replace_communities(kb, communities, {"community-0-0": report}, {}, finest)
