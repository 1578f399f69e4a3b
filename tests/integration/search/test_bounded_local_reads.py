"""The graph reads around given entities (local search, entity search, DRIFT's neighbourhood) on the real
Neo4j, on a small purpose-built hub: the strongest relationships come first with ties by id, a hub with
more relationships or chunks than the per-entity read bound costs no more than the bound, and what an
entity below the bound has is read whole."""

from __future__ import annotations

import pytest

from driftrag.models.graph import MergedEntity
from driftrag.store import Neo4jStore
from driftrag.store.graph_search import GraphSearchStore
from driftrag.store.search import SearchStore
from tests.support.graphs import entity, relate, write_graph

# The hub's neighbours, weights with ties (ties must fall by relationship id).
WEIGHTS = [9.0, 7.0, 7.0, 7.0, 5.0, 4.0, 3.0, 3.0, 2.0, 1.0, 1.0, 0.5]


@pytest.fixture
async def hub_kb(store: Neo4jStore, kb: str) -> dict[str, object]:
    """A hub related to 12 neighbours and to one small seed; the small seed also knows one neighbour.
    The hub is mentioned by three chunks, the small seed only by chunk-2a."""
    await store.ensure_schema()
    hub = entity("Hub Harbour", "chunk-1a", "chunk-1b", "chunk-2a")
    small = entity("Small Skiff", "chunk-2a")
    neighbours = [entity(f"Neighbour {i:02d}", "chunk-1a") for i in range(len(WEIGHTS))]
    relationships = [relate(hub, n, "chunk-1a", weight=w) for n, w in zip(neighbours, WEIGHTS, strict=True)]
    among = relate(small, hub, "chunk-2a", weight=6.0)
    small_out = relate(small, neighbours[-1], "chunk-2a", weight=2.5)
    await write_graph(store, kb, [hub, small, *neighbours], [*relationships, among, small_out])
    return {
        "hub": hub,
        "small": small,
        "neighbours": neighbours,
        "outside": relationships,
        "among": among,
        "small_out": small_out,
    }


def strongest_first(relationships, n: int) -> list[str]:
    return [r.id for r in sorted(relationships, key=lambda r: (-r.weight, r.id))][:n]


async def test_neighbour_relationships_are_the_strongest_first_ties_by_id(store, kb, hub_kb) -> None:
    search = SearchStore(store)
    hub: MergedEntity = hub_kb["hub"]
    rows = await search.neighbour_relationships(kb, [hub.id], 5)
    assert [r.id for r in rows] == strongest_first(hub_kb["outside"] + [hub_kb["among"]], 5)
    assert [r.id for r in rows] == [r.id for r in await search.neighbour_relationships(kb, [hub.id], 5)]
    # With the small seed among the entities, their relationship is "among", never "outside".
    seeds = [hub.id, hub_kb["small"].id]
    outside = await search.neighbour_relationships(kb, seeds, 100)
    assert hub_kb["among"].id not in {r.id for r in outside}
    assert len(outside) == len(WEIGHTS) + 1  # every one below the read bound: all of them
    among = await search.relationships_among(kb, seeds, 100)
    assert [r.id for r in among] == [hub_kb["among"].id]
    # Among three seeds: every relationship between them, strongest first (the hub's to Neighbour 00: 9.0).
    trio = await search.relationships_among(kb, [*seeds, hub_kb["neighbours"][0].id], 100)
    assert [r.id for r in trio] == [hub_kb["outside"][0].id, hub_kb["among"].id]
    # The hub read one relationship deep: its pairs with the two small entities are still read whole.
    bounded = await search.relationships_among(kb, [*seeds, hub_kb["neighbours"][0].id], 100, reads_per_entity=1)
    assert [r.id for r in bounded] == [r.id for r in trio]
    assert [r.id for r in await search.relationships_among(kb, [*seeds, hub_kb["neighbours"][0].id], 1)] == [
        hub_kb["outside"][0].id
    ]


async def test_a_hub_above_the_read_bound_costs_the_bound_and_keeps_the_order(store, kb, hub_kb) -> None:
    search = SearchStore(store)
    hub, small = hub_kb["hub"], hub_kb["small"]
    all_hub = {r.id: r for r in [*hub_kb["outside"], hub_kb["among"]]}
    rows = await search.neighbour_relationships(kb, [hub.id], 100, reads_per_entity=4)
    # At most the 4 relationships read; each a real one of the hub, strongest first, ties by id.
    assert 0 < len(rows) <= 4 and {r.id for r in rows} <= set(all_hub)
    assert [(-r.weight, r.id) for r in rows] == sorted((-r.weight, r.id) for r in rows)
    assert rows == await search.neighbour_relationships(kb, [hub.id], 100, reads_per_entity=4)
    # The small seed is below the bound: both its relationships are read, whatever the hub's bound cut.
    small_rows = await search.neighbour_relationships(kb, [small.id], 100, reads_per_entity=4)
    assert [r.id for r in small_rows] == [hub_kb["among"].id, hub_kb["small_out"].id]
    # A limit below what was read keeps the strongest of the read ones.
    top = await search.neighbour_relationships(kb, [hub.id], 2, reads_per_entity=4)
    assert [r.id for r in top] == [r.id for r in rows[:2]]


async def test_an_invalid_relationship_gives_way_to_the_next_strongest(store, kb, hub_kb) -> None:
    search = SearchStore(store)
    hub = hub_kb["hub"]
    strongest = strongest_first(hub_kb["outside"], 1)[0]  # weight 9 to Neighbour 00, only from chunk-1a
    await GraphSearchStore(store).set_chunks_enabled(kb, ["chunk-1a"], False)
    rows = await search.neighbour_relationships(kb, [hub.id], 3)
    # Every hub-neighbour relationship came from chunk-1a: only the one from chunk-2a stays valid.
    assert strongest not in {r.id for r in rows}
    assert [r.id for r in rows] == [hub_kb["among"].id]


async def test_entity_chunks_count_every_mention_of_a_chunk_beyond_the_hub_bound(store, kb, hub_kb) -> None:
    search = SearchStore(store)
    hub, small = hub_kb["hub"], hub_kb["small"]
    full = await search.entity_chunks(kb, [hub.id, small.id], 10)
    assert [c.id for c in full] == ["chunk-2a", "chunk-1a", "chunk-1b"]  # both entities first, then by id
    assert sorted(full[0].entity_ids) == sorted([hub.id, small.id]) and full[0].best_rank == 0
    # The hub is read one chunk deep: chunk-2a, found through the small seed, still counts both.
    bounded = await search.entity_chunks(kb, [hub.id, small.id], 10, reads_per_entity=1)
    assert bounded[0].id == "chunk-2a" and sorted(bounded[0].entity_ids) == sorted([hub.id, small.id])
    assert len(bounded) <= 2 and bounded == await search.entity_chunks(kb, [hub.id, small.id], 10, reads_per_entity=1)
    ranked = await search.entity_chunks(kb, [small.id, hub.id], 10, order="rank")
    assert ranked[0].id == "chunk-2a" and ranked[0].best_rank == 0


async def test_entity_neighbours_strongest_first_and_bounded(store, kb, hub_kb) -> None:
    search = SearchStore(store)
    hub, neighbours = hub_kb["hub"], hub_kb["neighbours"]
    rows = await search.entity_neighbours(kb, [hub.id], 3)
    # Neighbour 00 (9.0), then the three at 7.0 by name (the small seed, at 6.0, comes after them).
    assert [r.name for r in rows] == [neighbours[0].name, neighbours[1].name, neighbours[2].name]
    assert [r.weight for r in rows] == [9.0, 7.0, 7.0]
    bounded = await search.entity_neighbours(kb, [hub.id], 100, reads_per_entity=4)
    assert 0 < len(bounded) <= 4
    assert [(-r.weight, r.name) for r in bounded] == sorted((-r.weight, r.name) for r in bounded)


@pytest.mark.parametrize(("chunks", "relationships", "reads"), [(10, 100, 500), (1, 3, 500), (10, 100, 2)])
async def test_entity_surroundings_read_at_once_what_the_four_reads_return(
    store, kb, hub_kb, chunks: int, relationships: int, reads: int
) -> None:
    # Local search reads the four parts in one statement; each part keeps its own limit and bound.
    search = SearchStore(store)
    seeds = [hub_kb["small"].id, hub_kb["hub"].id, "not-an-entity"]
    around = await search.entity_surroundings(
        kb, seeds, chunk_limit=chunks, community_limit=5, relationship_limit=relationships, reads_per_entity=reads
    )
    assert around.chunks == await search.entity_chunks(kb, seeds, chunks, reads_per_entity=reads)
    assert around.communities == await search.entity_communities(kb, seeds, 5)
    assert around.among == await search.relationships_among(kb, seeds, relationships, reads_per_entity=reads)
    assert around.outside == await search.neighbour_relationships(kb, seeds, relationships, reads_per_entity=reads)
    assert around.chunks and around.among and around.outside
    assert len(around.outside) == min(relationships, len(around.outside)) <= relationships
    empty = await search.entity_surroundings(kb, [], chunk_limit=5, community_limit=5, relationship_limit=5)
    assert empty.chunks == empty.communities == empty.among == empty.outside == []
