"""Reads of a whole kb for the Microsoft GraphRAG interchange, as typed rows (`driftrag.interop.graphrag`).

The interchange role (`InterchangeStorage`): one more reader of the stored graph, which the query modes
never use.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from driftrag.models.identifiers import validate_kb_id
from driftrag.models.interchange import (
    StoredChunk,
    StoredCommunity,
    StoredDocument,
    StoredEntity,
    StoredKb,
    StoredRelationship,
)
from driftrag.store.cypher import interop as cy

if TYPE_CHECKING:
    from driftrag.store.neo4j_store import Neo4jStore


class InterchangeReader:
    """The interchange role of the Neo4j store."""

    def __init__(self, store: Neo4jStore) -> None:
        self._store = store

    async def kb_exists(self, kb: str) -> bool:
        return await kb_exists(self._store, kb)

    async def read_kb(self, kb: str, *, vectors: bool = True) -> StoredKb:
        return await read_kb(self._store, kb, vectors=vectors)


async def kb_exists(store: Neo4jStore, kb: str) -> bool:
    rows = await store.read(cy.KB_EXISTS, kb=validate_kb_id(kb))
    return bool(rows and rows[0]["exists"])


async def read_kb(store: Neo4jStore, kb: str, *, vectors: bool = True) -> StoredKb:
    """The kb's documents, chunks, entities, relationships and communities (reports included)."""
    kb = validate_kb_id(kb)
    # The vectors are read from the kb's vector space (its embedder's property).
    space = {"vectors": vectors, "vector_property": (await store.vector_space(kb)).property}
    documents = await store.read(cy.EXPORT_DOCUMENTS, kb=kb)
    chunks = await store.read(cy.EXPORT_CHUNKS, kb=kb, **space)
    entities = await store.read(cy.EXPORT_ENTITIES, kb=kb, **space)
    relationships = await store.read(cy.EXPORT_RELATIONSHIPS, kb=kb)
    communities = await store.read(cy.EXPORT_COMMUNITIES, kb=kb, **space)
    for row in communities:  # stored as JSON text (graph.GraphStore.upsert_communities)
        row["findings"] = json.loads(row["findings"]) if row["findings"] else []
    return StoredKb(
        kb=kb,
        documents=[StoredDocument.model_validate(row) for row in documents],
        chunks=[StoredChunk.model_validate(row) for row in chunks],
        entities=[StoredEntity.model_validate(row) for row in entities],
        relationships=[StoredRelationship.model_validate(row) for row in relationships],
        communities=[StoredCommunity.model_validate(row) for row in communities],
    )
