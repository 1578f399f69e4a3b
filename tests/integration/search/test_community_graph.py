"""Community detection from the stored graph, read in keyset pages, gives the communities ingestion
stored (it clustered the merged graph it held in memory): paging loses and repeats nothing."""

from __future__ import annotations

from driftrag.ingestion.communities import detect_graph_communities, read_community_graph
from driftrag.settings import Settings
from driftrag.store.graph import GraphStore
from driftrag.store.neo4j_store import Neo4jStore


async def test_paged_graph_read_gives_the_stored_communities(
    module_store: Neo4jStore, search_settings: Settings, graph_kb: str
) -> None:
    graph = GraphStore(module_store)
    relationships = await graph.relationships(graph_kb)
    pages = [page async for page in graph.relationship_edge_pages(graph_kb, page_size=7)]
    assert len(pages) == -(-len(relationships) // 7) and all(len(page) <= 7 for page in pages)
    assert [row[0] for page in pages for row in page] == sorted(r["id"] for r in relationships)

    read = await read_community_graph(graph, graph_kb, page_size=5)
    assert len(read.chunks_of) == len(await graph.entities(graph_kb))
    communities = detect_graph_communities(
        read, max_cluster_size=search_settings.max_cluster_size, seed=search_settings.leiden_seed
    )
    stored = await graph.communities(graph_kb)
    assert communities
    assert [(c.id, c.level, c.parent_id, c.entity_ids) for c in communities] == [
        (c["id"], c["level"], c["parent_id"], c["entity_ids"])
        for c in sorted(stored, key=lambda c: (c["level"], c["id"]))
    ]
