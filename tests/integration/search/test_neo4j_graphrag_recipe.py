"""The recipe of the README for reading a driftrag kb with `neo4j-graphrag`'s retrievers (an optional
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
    assert len(found) == 5 and all(f"'{graph_kb}'" in item.content for item in found)

    documents = "MATCH (node)-[:PART_OF]->(d:__Document__) RETURN node.id AS id, node.kb AS kb, d.title AS title, score"
    cypher = VectorCypherRetriever(driver, space.index("chunk"), documents, embedder)
    rows = cypher.get_search_results(query_text=QUESTION, top_k=3, filters={"kb": graph_kb}).records
    assert rows and all(row["kb"] == graph_kb and row["id"] in own_chunks and row["title"] for row in rows)

    hybrid_query = "WITH node, score WHERE node.kb = $kb RETURN node.id AS id, node.text AS text, score"
    hybrid = HybridCypherRetriever(driver, space.index("chunk"), "driftrag_chunk_text", hybrid_query, embedder)
    hits = hybrid.get_search_results(query_text="Grey Reef", top_k=20, query_params={"kb": graph_kb}).records
    assert hits and {row["id"] for row in hits} <= own_chunks
