"""Community detection from the stored graph, read in keyset pages, gives the communities ingestion
stored (it clustered the merged graph it held in memory): paging loses and repeats nothing."""

from __future__ import annotations

from driftrag.ingestion.communities import community_edges, detect_graph_communities, read_community_graph
from driftrag.models.graph import MergedRelationship
from driftrag.settings import Settings
from driftrag.store.graph import GraphStore
from driftrag.store.neo4j_store import Neo4jStore


async def test_paged_graph_read_gives_the_stored_communities(
    module_store: Neo4jStore, search_settings: Settings, graph_kb: str
) -> None:
    graph = GraphStore(module_store)
    relationships = await graph.relationships(graph_kb)
    pages = [page async for page in graph.relationship_edge_pages(graph_kb, page_size=7)]
    assert len(pages) == -(-len(relationships) // 7) and all(len(page.ids) <= 7 for page in pages)
    assert [rel_id for page in pages for rel_id in page.ids] == sorted(r["id"] for r in relationships)

    read = await read_community_graph(graph, graph_kb, page_size=5)
    entities = await graph.entities(graph_kb)
    # The column read builds exactly what the in-memory path builds from the merged graph.
    assert read.chunks_of == {e["id"]: e["source_chunk_ids"] for e in entities}
    weights = {rel_id: w for page in pages for rel_id, w in zip(page.ids, page.weights, strict=True)}
    merged = [
        MergedRelationship.model_construct(source_id=r["source_id"], target_id=r["target_id"], weight=weights[r["id"]])
        for r in relationships
    ]
    assert read.edges == community_edges({e["id"] for e in entities}, merged)
    assert read.relationships == sorted((r["id"], r["source_id"], r["target_id"]) for r in relationships)
    communities = detect_graph_communities(
        read, max_cluster_size=search_settings.max_cluster_size, seed=search_settings.leiden_seed
    )
    stored = await graph.communities(graph_kb)
    assert communities
    assert [(c.id, c.level, c.parent_id, c.entity_ids) for c in communities] == [
        (c["id"], c["level"], c["parent_id"], c["entity_ids"])
        for c in sorted(stored, key=lambda c: (c["level"], c["id"]))
    ]
