"""Graph search's persisted search markers, its counting cap and its index-served order, on real Neo4j.

After every write that changes which chunks are valid sources, the stored markers must equal what a
from-scratch check of the chunks gives (`assert_markers_true`), and the search must return the same as
when it checked the chunks itself.
"""

from __future__ import annotations

import pytest

from driftrag.errors import BackendUnavailableError
from driftrag.models.graph import Chunk, SourceDocument
from driftrag.search.graph_search import graph_search
from driftrag.settings import Settings
from driftrag.store import Neo4jStore
from driftrag.store.cypher.markers import SEARCH_MARKERS_VERSION
from driftrag.store.documents import DocumentWriter
from driftrag.store.graph import GraphStore
from driftrag.store.graph_search import GraphSearchStore
from driftrag.store.markers import migrate_search_markers
from tests.support.graphs import DOCUMENTS, entity, names, relate, write_graph
from tests.support.markers import assert_markers_true

# What a kb written before the markers existed looks like.
_STRIP_MARKERS = (
    "MATCH (e:__Entity__ {kb: $kb}) REMOVE e.valid, e.sources_all_valid, e.name_len, e.source_count, e.source_head",
    "MATCH ()-[r:RELATED {kb: $kb}]->() "
    "REMOVE r.valid, r.sourced, r.sources_all_valid, r.out_id, r.in_id, r.rank_weight, r.source_count, r.source_head",
    "MATCH (k:__KnowledgeBase__ {kb: $kb}) REMOVE k.search_markers",
)
_MARKERS_VERSION = "MATCH (k:__KnowledgeBase__ {kb: $kb}) RETURN k.search_markers AS version"


async def search_names(store: Neo4jStore, settings: Settings, kb: str, query: str) -> list[str]:
    return names(await graph_search(GraphSearchStore(store), settings, kb, query))


async def test_markers_follow_chunk_disable_and_enable(
    store: Neo4jStore, kb: str, neo4j_settings: Settings, schema: None
) -> None:
    queen, knave = entity("Queen", "chunk-1a", "chunk-2a"), entity("Knave", "chunk-2a")
    king = entity("King", "chunk-1b")
    # The King-Knave relationship is sourced from a chunk neither endpoint lists.
    await write_graph(
        store, kb, [queen, knave, king], [relate(queen, knave, "chunk-1a"), relate(king, knave, "chunk-1a")]
    )
    await assert_markers_true(store, kb)
    switches = GraphSearchStore(store)

    await switches.set_chunks_enabled(kb, ["chunk-2a"], False)
    await assert_markers_true(store, kb)
    assert await search_names(store, neo4j_settings, kb, "Knave") == []
    assert await search_names(store, neo4j_settings, kb, "King") == ["King"]  # its neighbour is gone
    assert await search_names(store, neo4j_settings, kb, "Queen") == ["Queen"]

    await switches.set_chunks_enabled(kb, ["chunk-1a"], False)
    await assert_markers_true(store, kb)
    assert await search_names(store, neo4j_settings, kb, "Queen") == []

    await switches.set_chunks_enabled(kb, ["chunk-1a", "chunk-2a"], True)
    await assert_markers_true(store, kb)
    both = await search_names(store, neo4j_settings, kb, "Knave")
    assert both[0] == "Knave" and sorted(both[1:]) == ["King", "Queen"]


async def test_markers_follow_document_delete_and_reingest(
    store: Neo4jStore, kb: str, neo4j_settings: Settings, schema: None
) -> None:
    queen, knave = entity("Queen", "chunk-1a", "chunk-2a"), entity("Knave", "chunk-2a")
    relationships = [relate(queen, knave, "chunk-2a")]
    await write_graph(store, kb, [queen, knave], relationships)
    graph = GraphStore(store)

    await graph.delete_document(kb, "document-two")  # before any rebuild
    await assert_markers_true(store, kb)
    assert await search_names(store, neo4j_settings, kb, "Kna") == []
    response = await graph_search(GraphSearchStore(store), neo4j_settings, kb, "Queen")
    assert names(response) == ["Queen"] and response.entities[0].source_chunk_ids == ["chunk-1a"]

    # Re-ingesting the document brings its chunks back; the rebuild writes the entity layer again.
    document = SourceDocument(id="document-two", kb=kb, title="document-two", text="x", content_hash="document-two")
    chunk = Chunk(id="chunk-2a", document_id="document-two", index=0, text="c", n_tokens=1, start_char=0, end_char=1)
    await DocumentWriter(store).upsert_document(document, [chunk])
    await graph.replace_entity_layer(kb, [queen, knave], relationships, total_chunks=0)
    await assert_markers_true(store, kb)
    assert await search_names(store, neo4j_settings, kb, "Kna") == ["Knave", "Queen"]

    # A rebuild that no longer lists a chunk for an entity makes it invalid; its relationship follows.
    await graph.replace_entity_layer(kb, [queen, entity("Knave", "chunk-gone")], relationships, total_chunks=0)
    await assert_markers_true(store, kb)
    assert await search_names(store, neo4j_settings, kb, "Queen") == ["Queen"]


async def test_a_kb_written_without_markers_is_migrated_once_by_the_schema_setup(
    store: Neo4jStore, kb: str, neo4j_settings: Settings, schema: None
) -> None:
    queen, knave, king = entity("Queen", "chunk-1a"), entity("Knave", "chunk-2a"), entity("King", "chunk-missing")
    await write_graph(store, kb, [queen, knave, king], [relate(queen, knave, "chunk-1a"), relate(king, queen)])
    for statement in _STRIP_MARKERS:
        await store.write(statement, kb=kb)

    with pytest.raises(BackendUnavailableError, match="driftrag schema init"):
        await graph_search(GraphSearchStore(store), neo4j_settings, kb, "Queen")

    await store.ensure_schema()
    await assert_markers_true(store, kb)
    assert (await store.read(_MARKERS_VERSION, kb=kb))[0]["version"] == SEARCH_MARKERS_VERSION
    assert await search_names(store, neo4j_settings, kb, "Queen") == ["Queen", "Knave"]  # King has no source
    assert kb not in await migrate_search_markers(store)  # idempotent: nothing left to do


async def test_counts_become_flagged_lower_bounds_at_the_counting_cap(
    store: Neo4jStore, kb: str, neo4j_settings: Settings, schema: None
) -> None:
    hub = entity("Hub")
    leaves = [entity(f"Leaf {i:02d}") for i in range(12)]
    await write_graph(store, kb, [hub, *leaves], [relate(hub, leaf, weight=float(i)) for i, leaf in enumerate(leaves)])
    search = GraphSearchStore(store)

    capped = neo4j_settings.model_copy(
        update={"graph_search_count_cap": 5, "graph_search_max_seeds": 3, "graph_search_max_rows": 4}
    )
    for query in ("Leaf", "L"):  # the text-index way and the short-needle scan
        leaves_found = (await graph_search(search, capped, kb, query)).truncation
        assert (leaves_found.candidates_matched, leaves_found.candidates_matched_is_lower_bound) == (5, True)
        assert leaves_found.candidates_returned == 3 and leaves_found.candidates_truncated
    hub_rows = (await graph_search(search, capped, kb, "Hub")).truncation
    assert (hub_rows.rows_total, hub_rows.rows_total_is_lower_bound, hub_rows.rows_returned) == (5, True, 4)
    assert hub_rows.results_truncated
    assert (hub_rows.candidates_matched, hub_rows.candidates_matched_is_lower_bound) == (1, False)

    # Below the cap the counts are exact and unflagged; max_rows above the cap raises the row limit.
    roomy = neo4j_settings.model_copy(update={"graph_search_count_cap": 13, "graph_search_max_seeds": 3})
    exact = (await graph_search(search, roomy, kb, "Leaf")).truncation
    assert (exact.candidates_matched, exact.candidates_matched_is_lower_bound) == (12, False)
    wide_rows = neo4j_settings.model_copy(update={"graph_search_count_cap": 2, "graph_search_max_rows": 20})
    hub_exact = (await graph_search(search, wide_rows, kb, "Hub")).truncation
    assert (hub_exact.rows_total, hub_exact.rows_total_is_lower_bound, hub_exact.results_truncated) == (
        12,
        False,
        False,
    )


@pytest.mark.parametrize(("cap", "max_seeds"), [(2, 4), (10_000, 200)])
async def test_seed_order_is_exact_then_shorter_then_alphabetical_on_every_path(
    store: Neo4jStore, kb: str, neo4j_settings: Settings, schema: None, cap: int, max_seeds: int
) -> None:
    # (2, 4): more matches than the counting limit (4), so the ranked index scan picks the seeds.
    names_in_graph = ["White Rabbit", "B Rabbit", "Rabbit hole", "A Rabbit", "Rabbits", "Rabbit", "rabbit", "Xa"]
    hidden = entity("Rabbi", "chunk-missing")  # no valid source: never a seed
    await write_graph(store, kb, [*(entity(name) for name in names_in_graph), hidden])
    settings = neo4j_settings.model_copy(update={"graph_search_count_cap": cap, "graph_search_max_seeds": max_seeds})

    rabbits = ["Rabbit", "Rabbits", "A Rabbit", "B Rabbit", "Rabbit hole", "White Rabbit"]
    assert await search_names(store, settings, kb, "Rabbit") == rabbits[:max_seeds]
    assert await search_names(store, settings, kb, "Rabbi") == rabbits[:max_seeds]
    # One- and two-letter needles (the scan path) keep the same order.
    assert await search_names(store, settings, kb, "R") == rabbits[:max_seeds]
    with_a = ["Xa", "Rabbit", "rabbit", "Rabbits", "A Rabbit", "B Rabbit", "Rabbit hole", "White Rabbit"]
    assert await search_names(store, settings, kb, "a") == with_a[:max_seeds]
    assert await search_names(store, settings, kb, "ab") == with_a[1:][:max_seeds]


async def test_new_kbs_start_with_current_markers(store: Neo4jStore, kb: str, schema: None) -> None:
    await write_graph(store, kb, [entity("Dodo")])
    assert (await store.read(_MARKERS_VERSION, kb=kb))[0]["version"] == SEARCH_MARKERS_VERSION
    assert sorted(DOCUMENTS) == ["document-one", "document-two"]
