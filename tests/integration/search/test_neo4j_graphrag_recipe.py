"""The recipe of docs/neo4j-production.md for reading a driftrag kb with `neo4j-graphrag`'s retrievers (an optional
test extra: `pip install -e '.[neo4j-graphrag]'`): the kb's chunk index comes from its vector space, the
kb filter keeps other kbs out, and the hybrid retriever finds the chunk full-text index."""

from __future__ import annotations

import neo4j
import pytest

from driftrag.providers import Providers
from driftrag.settings import Settings
from driftrag.store.graph import GraphStore
from driftrag.store.neo4j_store import Neo4jStore

graphrag = pytest.importorskip(
    "neo4j_graphrag", reason="neo4j-graphrag is not installed (pip install -e '.[neo4j-graphrag]')"
)
from neo4j_graphrag.embeddings.base import Embedder  # noqa: E402
from neo4j_graphrag.retrievers import HybridCypherRetriever, VectorCypherRetriever, VectorRetriever  # noqa: E402

QUESTION = "What did Captain Mirela Voss tell Jonas Pell about the Grey Reef?"


class LlamaIndexEmbedder(Embedder):
    """neo4j-graphrag's embedder interface over the LlamaIndex embedding the kb was embedded with."""

    def __init__(self, embedding) -> None:
        super().__init__()
        self._embedding = embedding

    def embed_query(self, text: str) -> list[float]:
        return self._embedding.get_query_embedding(text)


class FilteringVectorCypherRetriever(VectorCypherRetriever):
    """neo4j-graphrag 1.22's VectorCypherRetriever filters with `_node_embedding_property`, which it never
    sets (it fetches `_embedding_node_property`): without this, any `filters` fail."""

    def _fetch_index_infos(self, vector_index_name: str) -> None:
        super()._fetch_index_infos(vector_index_name)
        self._node_embedding_property = self._embedding_node_property


@pytest.fixture
def driver(search_settings: Settings):
    with neo4j.GraphDatabase.driver(search_settings.neo4j_uri, auth=None) as connected:
        yield connected


async def test_neo4j_graphrag_retrievers_read_a_driftrag_kb(
    driver: neo4j.Driver, module_store: Neo4jStore, search_providers: Providers, graph_kb: str
) -> None:
    space = await module_store.vector_space(graph_kb)
    embedder = LlamaIndexEmbedder(search_providers.embedder)
    own_chunks = {row["id"] for row in await GraphStore(module_store).chunks(graph_kb)}

    vector = VectorRetriever(driver, space.index("chunk"), embedder, return_properties=["id", "kb", "text"])
    found = vector.search(query_text=QUESTION, top_k=5, filters={"kb": graph_kb}).items
    assert 1 <= len(found) <= 5 and all(f"'{graph_kb}'" in item.content for item in found)

    documents = "MATCH (node)-[:PART_OF]->(d:__Document__) RETURN node.id AS id, node.kb AS kb, d.title AS title, score"
    cypher = FilteringVectorCypherRetriever(driver, space.index("chunk"), documents, embedder)
    rows = cypher.get_search_results(query_text=QUESTION, top_k=3, filters={"kb": graph_kb}).records
    assert rows and all(row["kb"] == graph_kb and row["id"] in own_chunks and row["title"] for row in rows)

    hybrid_query = "WITH node, score WHERE node.kb = $kb RETURN node.id AS id, node.text AS text, score"
    hybrid = HybridCypherRetriever(driver, space.index("chunk"), "driftrag_chunk_text", hybrid_query, embedder)
    # No `filters` here: the kb is kept by the retrieval query, after the top_k of both searches over every
    # kb of the indexes (this test server holds many copies of the same corpus), so top_k must reach it.
    hits = hybrid.get_search_results(
        query_text="Grey Reef", top_k=500, effective_search_ratio=4, query_params={"kb": graph_kb}
    ).records
    assert hits and {row["id"] for row in hits} <= own_chunks
