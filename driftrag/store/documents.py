"""Writes of documents, chunks and embeddings."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence

from driftrag.models.graph import Chunk, SourceDocument
from driftrag.models.identifiers import validate_kb_id
from driftrag.models.storage import NodeKind
from driftrag.store.cypher import documents as cy
from driftrag.store.neo4j_store import Neo4jStore

_SET_EMBEDDINGS = {
    "chunk": cy.SET_CHUNK_EMBEDDINGS,
    "entity": cy.SET_ENTITY_EMBEDDINGS,
    "community": cy.SET_COMMUNITY_EMBEDDINGS,
}
_WRITE_BATCH = 500


class DocumentWriter:
    def __init__(self, store: Neo4jStore) -> None:
        self._store = store

    async def upsert_document(self, document: SourceDocument, chunks: Iterable[Chunk]) -> int:
        """Create or update a document and its chunks (chunks keep their `enabled` flag); returns how many
        chunks were written. `chunks` is consumed a batch at a time (`chunking.iter_chunks` cuts them as
        they are asked for), so a large file's chunks are never all in memory at once."""
        kb = validate_kb_id(document.kb)
        await self._store.write(
            cy.UPSERT_DOCUMENT,
            kb=kb,
            document={
                "id": document.id,
                "title": document.title,
                "path": document.path,
                "content_hash": document.content_hash,
                "n_chunks": None,
            },
        )
        pending = iter(chunks)
        batch, written = list(itertools.islice(pending, _WRITE_BATCH)), 0
        while True:
            following = list(itertools.islice(pending, _WRITE_BATCH))  # one batch ahead: the last carries the count
            rows = [chunk.model_dump(exclude={"document_id", "start_char", "end_char"}) for chunk in batch]
            written += len(batch)
            count = None if following else written
            await self._store.write(cy.UPSERT_CHUNKS, kb=kb, document_id=document.id, chunks=rows, n_chunks=count)
            if not following:
                return written
            batch = following

    async def set_embeddings(
        self,
        kind: NodeKind,
        kb: str,
        rows: Sequence[tuple[str, list[float]]],
        hashes: Mapping[str, str] | None = None,
    ) -> None:
        """Store vectors with `db.create.setNodeVectorProperty` (the kb's vector space must be claimed); with
        `hashes` (entities, communities), each node's embedded-text hash in the same statement."""
        validate_kb_id(kb)
        statement = _SET_EMBEDDINGS[kind]
        # In the kb's vector space: its property, which its indexes cover.
        vectors = {"vector_property": (await self._store.vector_space(kb)).property}
        hashes = hashes or {}
        payload = [{"id": node_id, "embedding": vector, "hash": hashes.get(node_id)} for node_id, vector in rows]
        for start in range(0, len(payload), _WRITE_BATCH):
            await self._store.write(statement, kb=kb, rows=payload[start : start + _WRITE_BATCH], **vectors)
