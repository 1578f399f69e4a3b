"""Small purpose-built graphs written through the store APIs: two documents with three chunks, then
entities and relationships made by `entity` and `relate` (ids as the extractor makes them).

    a, b = entity("Alice", "chunk-1a"), entity("Cheshire Cat", "chunk-1b")
    await write_graph(store, kb, [a, b], [relate(a, b, "chunk-1a")])
"""

from __future__ import annotations

from collections.abc import Sequence

from driftrag.models.graph import Chunk, MergedEntity, MergedRelationship, SourceDocument, stable_hash
from driftrag.search.graph_search import GraphSearchResponse
from driftrag.store import Neo4jStore
from driftrag.store.documents import DocumentWriter
from driftrag.store.graph import GraphStore

# Two documents: tests delete the second one, or disable single chunks.
DOCUMENTS = {"document-one": ["chunk-1a", "chunk-1b"], "document-two": ["chunk-2a"]}


async def write_documents(store: Neo4jStore, kb: str) -> None:
    """The kb node and the two `DOCUMENTS`, each chunk's text its id."""
    writer = DocumentWriter(store)
    for document_id, chunk_ids in DOCUMENTS.items():
        document = SourceDocument(id=document_id, kb=kb, title=document_id, text="x", content_hash=document_id)
        chunks = [
            Chunk(id=chunk_id, document_id=document_id, index=i, text=chunk_id, n_tokens=1, start_char=0, end_char=1)
            for i, chunk_id in enumerate(chunk_ids)
        ]
        await writer.upsert_document(document, chunks)


def entity(name: str, *sources: str, descriptions: Sequence[str] = ("a description",)) -> MergedEntity:
    return MergedEntity(
        id=f"entity-{stable_hash(name)}",
        name=name,
        normalised_name=name.lower(),
        type="THING",
        descriptions=list(descriptions),
        source_chunk_ids=list(sources or ["chunk-1a"]),
    )


def relate(source: MergedEntity, target: MergedEntity, *sources: str, weight: float = 1.0) -> MergedRelationship:
    return MergedRelationship(
        id=f"relationship-{stable_hash(source.id, target.id)}",
        source_id=source.id,
        target_id=target.id,
        descriptions=[f"{source.name} knows {target.name}"],
        weight=weight,
        source_chunk_ids=list(sources or ["chunk-1a"]),
    )


async def write_graph(
    store: Neo4jStore, kb: str, entities: Sequence[MergedEntity], relationships: Sequence[MergedRelationship] = ()
) -> None:
    """The kb node, two documents with their chunks, then the entity layer (batched by GraphStore)."""
    await write_documents(store, kb)
    await GraphStore(store).replace_entity_layer(kb, entities, relationships, total_chunks=0)


def names(response: GraphSearchResponse, *, seeds: bool | None = None) -> list[str]:
    return [e.name for e in response.entities if seeds is None or e.is_seed == seeds]
