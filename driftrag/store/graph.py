"""Reads and writes of the knowledge graph of one knowledge base.

The entity/relationship layer is derived from the extraction results checkpointed on each chunk, so
re-ingest, replacement and deletion all come down to "change the chunks, then rebuild the layer";
rebuilds reuse summaries, reports and embeddings whose inputs did not change (hashes stored alongside).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from driftrag.models.graph import (
    Chunk,
    Community,
    CommunityReport,
    EntityChunkPage,
    ExtractConfig,
    ExtractionOutcome,
    FailedChunk,
    KbCounts,
    KbProfile,
    KbSummary,
    MergedEntity,
    MergedRelationship,
    MergeResult,
    RelationshipEdgePage,
    StoredEntityKey,
    StoredState,
    community_structure_hash,
    descriptions_hash,
)
from driftrag.models.identifiers import validate_kb_id
from driftrag.store.cypher import graph as cy
from driftrag.store.markers import document_chunk_ids, refresh_markers_of, refresh_search_markers
from driftrag.store.neo4j_store import Neo4jStore

# Rows per write transaction: large enough that a million-relationship load is not dominated by round
# trips, small enough to keep one transaction well inside the default 1 GiB heap.
_BATCH = 2000
# What a checkpoint that was neither failed nor skipped holds (see `cy.COUNT_EXTRACTED_CHUNKS`).
_NOT_SKIPPED = '"skipped_reason":null'


class GraphStore:
    def __init__(self, store: Neo4jStore) -> None:
        self._store = store

    async def _write_batches(self, statement, kb: str, rows: list[dict[str, Any]]) -> None:
        for start in range(0, len(rows), _BATCH):
            await self._store.write(statement, kb=kb, rows=rows[start : start + _BATCH])

    # --- knowledge base, documents ---------------------------------------------------------------

    async def set_extract_config(self, kb: str, config: ExtractConfig) -> None:
        await self._store.write(
            cy.SET_KB_EXTRACT_CONFIG, kb=validate_kb_id(kb), extract_config=config.model_dump_json()
        )

    async def clear_extract_config(self, kb: str) -> None:
        """The kb goes back to the default config."""
        await self._store.write(cy.REMOVE_KB_EXTRACT_CONFIG, kb=validate_kb_id(kb))

    async def extract_config(self, kb: str) -> ExtractConfig | None:
        rows = await self._store.read(cy.MATCH_KB, kb=validate_kb_id(kb))
        if not rows or not rows[0]["extract_config"]:
            return None
        return ExtractConfig.model_validate_json(rows[0]["extract_config"])

    async def is_stale(self, kb: str) -> bool:
        rows = await self._store.read(cy.MATCH_KB, kb=validate_kb_id(kb))
        return bool(rows and rows[0]["graph_stale"])

    async def is_deleting(self, kb: str) -> bool:
        """Whether a delete of the kb started and has not finished (see `mark_deleting`)."""
        rows = await self._store.read(cy.MATCH_KB, kb=validate_kb_id(kb))
        return bool(rows and rows[0]["deleting"])

    async def mark_deleting(self, kb: str) -> bool:
        """Mark the kb as being deleted, in one write, before anything of it goes: every read after the
        mark refuses the kb (`KnowledgeBaseDeletingError`) instead of answering from a half-deleted graph.
        Returns whether the kb node existed."""
        rows = await self._store.write(cy.SET_KB_DELETING, kb=validate_kb_id(kb))
        return bool(rows and rows[0]["marked"])

    async def mark_stale(self, kb: str, stale: bool) -> None:
        """Stale: the chunks changed and every derived layer (the entity layer included) is to be rebuilt."""
        await self._store.write(cy.SET_KB_STALE, kb=validate_kb_id(kb), stale=stale)

    async def is_entity_layer_stale(self, kb: str) -> bool:
        """Whether the entity layer may not match the checkpoints (a kb stale only for its communities,
        reports or vectors is not)."""
        rows = await self._store.read(cy.MATCH_KB, kb=validate_kb_id(kb))
        return bool(rows and rows[0]["entity_layer_stale"])

    async def mark_entity_layer_current(self, kb: str) -> None:
        await self._store.write(cy.SET_KB_ENTITY_LAYER_CURRENT, kb=validate_kb_id(kb))

    async def documents_by_source(self, kb: str, source: str) -> list[dict[str, Any]]:
        return await self._store.read(cy.MATCH_DOCUMENTS_BY_SOURCE, kb=validate_kb_id(kb), source=source)

    async def documents(self, kb: str) -> list[dict[str, Any]]:
        return await self._store.read(cy.MATCH_DOCUMENTS, kb=validate_kb_id(kb))

    async def delete_document(
        self, kb: str, document_id: str, listing: tuple[Sequence[str], Sequence[str]] | None = None
    ) -> None:
        """Remove a document and its chunks in batches; call a rebuild afterwards.

        The search markers are refreshed at once, so until the rebuild nothing sourced only from the
        deleted chunks is returned by graph search. `listing`: the (entity ids, relationship ids) that
        list the document's chunks, when the caller knows them; only those are refreshed, instead of
        a walk over every entity and relationship of the kb.
        """
        validate_kb_id(kb)
        chunk_ids = [] if listing is not None else await document_chunk_ids(self._store, kb, document_id)
        await self._store.run_in_transactions(cy.DELETE_DOCUMENT_CHUNKS, kb=kb, document_id=document_id)
        await self._store.write(cy.DELETE_DOCUMENT, kb=kb, document_id=document_id)
        if listing is not None:
            await refresh_markers_of(self._store, kb, *listing)
        else:
            await refresh_search_markers(self._store, kb, chunk_ids)

    async def delete_kb(self, kb: str) -> None:
        """Remove every node of the knowledge base, in batches of 1000; the kb node (with its deleting
        mark) goes last, so a delete stopped half-way is still marked and the next delete finishes it."""
        validate_kb_id(kb)
        for statement in cy.DELETE_KB_NODES:
            await self._store.run_in_transactions(statement, kb=kb)

    # --- extraction checkpoints -----------------------------------------------------------------------

    async def chunks_to_extract(self, kb: str, document_id: str) -> list[Chunk]:
        rows = await self._store.read(cy.MATCH_CHUNKS_TO_EXTRACT, kb=validate_kb_id(kb), document_id=document_id)
        return [Chunk(**row, start_char=0, end_char=0) for row in rows]

    async def failed_chunks_to_extract(self, kb: str) -> list[Chunk]:
        """The kb's chunks whose extraction failed, to be extracted again."""
        rows = await self._store.read(cy.MATCH_FAILED_CHUNKS_TO_EXTRACT, kb=validate_kb_id(kb))
        return [Chunk(**row, start_char=0, end_char=0) for row in rows]

    async def save_extractions(self, kb: str, outcomes: Sequence[ExtractionOutcome]) -> None:
        """Checkpoint extraction results on their chunks (a rerun after a crash skips them)."""
        rows = [
            {
                "id": outcome.chunk_id,
                "extraction": outcome.model_dump_json(),
                "status": "failed" if outcome.failed else "ok",
                "error": outcome.error,
                "origin": outcome.origin,
                # The model answered, and named nothing: counted apart (`KbCounts.empty_extracted_chunks`).
                "empty": outcome.origin == "model"
                and not outcome.failed
                and outcome.skipped_reason is None
                and not outcome.entities,
            }
            for outcome in outcomes
        ]
        await self._write_batches(cy.SET_CHUNK_EXTRACTIONS, validate_kb_id(kb), rows)

    async def extractions(self, kb: str) -> list[ExtractionOutcome]:
        rows = await self._store.read(cy.MATCH_KB_EXTRACTIONS, kb=validate_kb_id(kb))
        return [ExtractionOutcome.model_validate_json(row["extraction"]) for row in rows]

    async def failed_chunks(self, kb: str) -> list[FailedChunk]:
        rows = await self._store.read(cy.MATCH_FAILED_CHUNKS, kb=validate_kb_id(kb))
        return [FailedChunk.model_validate(row) for row in rows]

    async def chunk_texts(self, kb: str, ids: Sequence[str]) -> dict[str, str]:
        rows = await self._store.read(cy.MATCH_CHUNK_TEXTS, kb=validate_kb_id(kb), ids=list(ids))
        return {row["id"]: row["text"] for row in rows}

    # --- entities and relationships ----------------------------------------------------------------------

    async def _vectors(self, kb: str) -> dict[str, str]:
        """The parameter of the statements that read a kb's vectors: the property of its vector space."""
        return {"vector_property": (await self._store.vector_space(validate_kb_id(kb))).property}

    async def entity_state(self, kb: str) -> dict[str, StoredState]:
        rows = await self._store.read(cy.MATCH_ENTITY_STATE, **await self._vectors(kb), kb=validate_kb_id(kb))
        return {
            row["id"]: StoredState(
                id=row["id"],
                input_hash=row["descriptions_hash"],
                output=row["summary"],
                embedding_hash=row["embedding_hash"],
                embedded=row["embedded"],
            )
            for row in rows
        }

    async def relationship_state(self, kb: str) -> dict[str, StoredState]:
        rows = await self._store.read(cy.MATCH_RELATIONSHIP_STATE, kb=validate_kb_id(kb))
        return {
            row["id"]: StoredState(id=row["id"], input_hash=row["descriptions_hash"], output=row["summary"])
            for row in rows
        }

    async def replace_entity_layer(
        self,
        kb: str,
        entities: Sequence[MergedEntity],
        relationships: Sequence[MergedRelationship],
        *,
        total_chunks: int,
    ) -> None:
        """Write the merged entities and relationships and remove what is no longer derived;
        `total_chunks`: the N their PMIs are read with (`set_pmi_chunks`)."""
        validate_kb_id(kb)
        await self.upsert_entities(kb, entities)
        await self._store.run_in_transactions(cy.DELETE_STALE_ENTITIES, kb=kb, keep=[e.id for e in entities])
        await self._store.write(cy.DELETE_STALE_MENTIONS, kb=kb)
        await self.upsert_relationships(kb, relationships)
        await self._store.run_in_transactions(cy.DELETE_STALE_RELATIONSHIPS, kb=kb, keep=[r.id for r in relationships])
        await self.set_pmi_chunks(kb, total_chunks)

    async def set_pmi_chunks(self, kb: str, total_chunks: int) -> None:
        """Record N, the extracted chunks of the entity layer as written. PMIs are read from it and the
        stored chunk counts (`cy.PMI_EXPRESSION`), so a change of N rewrites no relationship."""
        await self._store.write(cy.SET_KB_PMI_CHUNKS, kb=validate_kb_id(kb), total_chunks=total_chunks)

    async def upsert_entities(self, kb: str, entities: Sequence[MergedEntity]) -> None:
        """Create or update entities and MERGE their `MENTIONS` from their source chunks, in batches
        (idempotent; removes nothing: a bulk loader may call it slice by slice)."""
        validate_kb_id(kb)
        entity_rows = [
            {
                **entity.model_dump(),
                "descriptions_hash": descriptions_hash(entity.descriptions),
                "description": entity.summary or (entity.descriptions[0] if entity.descriptions else ""),
            }
            for entity in entities
        ]
        for start in range(0, len(entity_rows), _BATCH):
            rows = await self._store.write(cy.UPSERT_ENTITIES, kb=kb, rows=entity_rows[start : start + _BATCH])
            changed = rows[0]["changed"] if rows else []
            if changed:  # their relationships' `valid` includes the endpoints'
                await self._store.write(cy.REFRESH_ENDPOINT_RELATIONSHIPS, kb=kb, ids=changed)
        mentions = [
            {"chunk_id": chunk_id, "entity_id": entity.id}
            for entity in entities
            for chunk_id in entity.source_chunk_ids
        ]
        await self._write_batches(cy.MERGE_MENTIONS, kb, mentions)

    async def upsert_relationships(self, kb: str, relationships: Sequence[MergedRelationship]) -> None:
        """Create or update relationships between existing entities, in batches (idempotent)."""
        validate_kb_id(kb)
        relationship_rows = [
            {
                **relationship.model_dump(),
                "descriptions_hash": descriptions_hash(relationship.descriptions),
                "description": relationship.summary
                or (relationship.descriptions[0] if relationship.descriptions else ""),
            }
            for relationship in relationships
        ]
        await self._write_batches(cy.UPSERT_RELATIONSHIPS, kb, relationship_rows)

    # --- communities -----------------------------------------------------------------------------------

    async def community_state(self, kb: str) -> dict[str, StoredState]:
        rows = await self._store.read(cy.MATCH_COMMUNITY_STATE, **await self._vectors(kb), kb=validate_kb_id(kb))
        return {
            row["id"]: StoredState(
                id=row["id"],
                input_hash=row["context_hash"],
                output=row["report"],
                embedding_hash=row["embedding_hash"],
                embedded=row["embedded"],
            )
            for row in rows
        }

    async def replace_communities(
        self,
        kb: str,
        communities: Sequence[Community],
        reports: dict[str, CommunityReport],
        context_hashes: dict[str, str],
        finest_by_entity: dict[str, str],
    ) -> None:
        """Write communities with their reports, entity memberships (finest level) and the hierarchy."""
        await self.upsert_communities(kb, communities, reports, context_hashes)
        await self.replace_community_links(kb, communities, finest_by_entity)

    async def upsert_communities(
        self,
        kb: str,
        communities: Sequence[Community],
        reports: dict[str, CommunityReport],
        context_hashes: dict[str, str],
    ) -> None:
        """Create or update these communities with their reports; nothing else is touched. A community
        with a report that did not fail gets its `structure_hash`, so a later refresh can keep it."""
        validate_kb_id(kb)
        rows = []
        for community in communities:
            report = reports.get(community.id)
            rows.append(
                {
                    **community.model_dump(),
                    "title": report.title if report else None,
                    "summary": report.summary if report else None,
                    "rating": report.rating if report else None,
                    "rating_explanation": report.rating_explanation if report else None,
                    "findings": json.dumps([f.model_dump() for f in report.findings]) if report else None,
                    "report": report.model_dump_json() if report else None,
                    "full_content": render_report(report) if report else None,
                    "context_hash": context_hashes.get(community.id),
                    "report_failed": report is not None and report.failed,
                    "structure_hash": community_structure_hash(community)
                    if report is not None and not report.failed and community.id in context_hashes
                    else None,
                }
            )
        await self._write_batches(cy.UPSERT_COMMUNITIES, kb, rows)

    async def replace_community_links(
        self, kb: str, communities: Sequence[Community], finest_by_entity: dict[str, str]
    ) -> None:
        """Delete the communities not in `communities`, then write entity memberships and the hierarchy."""
        validate_kb_id(kb)
        await self._store.run_in_transactions(cy.DELETE_STALE_COMMUNITIES, kb=kb, keep=[c.id for c in communities])
        await self._store.run_in_transactions(cy.DELETE_COMMUNITY_MEMBERSHIPS, kb=kb)
        await self._store.run_in_transactions(cy.DELETE_COMMUNITY_HIERARCHY, kb=kb)
        memberships = [{"entity_id": e, "community_id": c} for e, c in sorted(finest_by_entity.items())]
        await self._write_batches(cy.MERGE_ENTITY_MEMBERSHIPS, kb, memberships)
        parents = [{"child_id": c.id, "parent_id": c.parent_id} for c in communities if c.parent_id]
        await self._write_batches(cy.MERGE_COMMUNITY_PARENTS, kb, parents)

    async def community_structures(self, kb: str) -> dict[str, str | None]:
        """Each stored community's `structure_hash` (None: written without one, or its report failed)."""
        rows = await self._store.read(cy.MATCH_COMMUNITY_STRUCTURE, kb=validate_kb_id(kb))
        return {row["id"]: row["structure_hash"] for row in rows}

    async def community_state_of(self, kb: str, ids: Sequence[str]) -> dict[str, StoredState]:
        """`community_state` of these communities only (those that exist)."""
        validate_kb_id(kb)
        state = {}
        ordered = sorted(set(ids))
        vectors = await self._vectors(kb)
        for start in range(0, len(ordered), _BATCH):
            for row in await self._store.read(
                cy.MATCH_COMMUNITY_STATE_OF, **vectors, kb=kb, ids=ordered[start : start + _BATCH]
            ):
                state[row["id"]] = StoredState(
                    id=row["id"],
                    input_hash=row["context_hash"],
                    output=row["report"],
                    embedding_hash=row["embedding_hash"],
                    embedded=row["embedded"],
                )
        return state

    async def community_reports(self, kb: str, ids: Sequence[str]) -> dict[str, CommunityReport]:
        """The stored reports of these communities (those that have one)."""
        return {
            community_id: CommunityReport.model_validate_json(state.output)
            for community_id, state in (await self.community_state_of(kb, ids)).items()
            if state.output
        }

    async def relationship_edge_pages(self, kb: str, page_size: int = 50_000) -> AsyncIterator[RelationshipEdgePage]:
        """The kb's relationships in id order, as column pages: ids, the internal node ids of their
        source and target (see `entity_chunk_pages`), weights."""
        async for ids, sources, targets, weights in self._pages(
            cy.MATCH_RELATIONSHIP_EDGES_PAGE, validate_kb_id(kb), page_size
        ):
            yield RelationshipEdgePage(ids=ids, source_nodes=sources, target_nodes=targets, weights=weights)

    async def entity_chunk_pages(self, kb: str, page_size: int = 50_000) -> AsyncIterator[EntityChunkPage]:
        """The kb's entities in id order, as column pages: ids, internal node ids, source chunk ids."""
        async for ids, nodes, chunk_ids in self._pages(cy.MATCH_ENTITY_CHUNKS_PAGE, validate_kb_id(kb), page_size):
            yield EntityChunkPage(ids=ids, nodes=nodes, chunk_ids=chunk_ids)

    async def _pages(self, statement, kb: str, page_size: int) -> AsyncIterator[list[list[Any]]]:
        """Keyset paging over a statement whose one record holds a list of columns, ids first."""
        after = ""
        while True:
            columns = await self._store.read_value(statement, kb=kb, after=after, limit=page_size)
            ids = columns[0]
            if ids:
                yield columns
            if len(ids) < page_size:
                return
            after = ids[-1]

    # --- incremental update of the entity layer (see ingestion.incremental) ---------------------------

    async def document_extractions(self, kb: str, document_id: str) -> list[ExtractionOutcome]:
        """The checkpointed outcomes of a document's chunks (read before the chunks are deleted)."""
        rows = await self._store.read(cy.MATCH_DOCUMENT_EXTRACTIONS, kb=validate_kb_id(kb), document_id=document_id)
        return [ExtractionOutcome.model_validate_json(row["extraction"]) for row in rows]

    async def chunk_extractions(self, kb: str, chunk_ids: Sequence[str]) -> list[ExtractionOutcome]:
        """The checkpointed outcomes of these chunks, in chunk id order (the order `extractions` reads)."""
        validate_kb_id(kb)
        ids = sorted(set(chunk_ids))
        outcomes = []
        for start in range(0, len(ids), _BATCH):
            rows = await self._store.read(cy.MATCH_CHUNK_EXTRACTIONS, kb=kb, ids=ids[start : start + _BATCH])
            outcomes += [ExtractionOutcome.model_validate_json(row["extraction"]) for row in rows]
        return outcomes

    async def extracted_chunk_count(self, kb: str) -> int:
        """N of the PMI, counted in the store (`merge.extracted_chunk_count` of every checkpoint)."""
        rows = await self._store.read(cy.COUNT_EXTRACTED_CHUNKS, kb=validate_kb_id(kb), not_skipped=_NOT_SKIPPED)
        return int(rows[0]["n"])

    async def entity_keys(self, kb: str, page_size: int = 50_000) -> list[StoredEntityKey]:
        """Every entity's id, merge key, display name and aliases, read in pages (no source lists: a
        million-relationship kb's are millions of ids; `entities_by_id` reads those of a few)."""
        keys = []
        async for ids, normalised, names, aliases in self._pages(
            cy.MATCH_ENTITY_KEYS_PAGE, validate_kb_id(kb), page_size
        ):
            keys += [
                StoredEntityKey(id=i, normalised_name=k, name=n, aliases=a)
                for i, k, n, a in zip(ids, normalised, names, aliases, strict=True)
            ]
        return keys

    async def relationships_of(self, kb: str, entity_ids: Sequence[str]) -> set[str]:
        """Ids of the relationships with an end among these entities."""
        validate_kb_id(kb)
        ids, found = sorted(set(entity_ids)), set()
        for start in range(0, len(ids), _BATCH):
            found.update(
                await self._store.read_value(cy.MATCH_RELATIONSHIPS_OF_ENTITIES, kb=kb, ids=ids[start : start + _BATCH])
            )
        return found

    async def relationship_state_of(self, kb: str, relationship_ids: Sequence[str]) -> dict[str, StoredState]:
        """`relationship_state` of these relationships only."""
        validate_kb_id(kb)
        ids, state = sorted(set(relationship_ids)), {}
        for start in range(0, len(ids), _BATCH):
            for row in await self._store.read(cy.MATCH_RELATIONSHIP_STATE_OF, kb=kb, ids=ids[start : start + _BATCH]):
                state[row["id"]] = StoredState(id=row["id"], input_hash=row["descriptions_hash"], output=row["summary"])
        return state

    async def update_entity_layer(
        self,
        kb: str,
        entities: Sequence[MergedEntity],
        relationships: Sequence[MergedRelationship],
        removed_entity_ids: Sequence[str],
        removed_relationship_ids: Sequence[str],
        previous_sources: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        """Write these entities and relationships, delete the removed ones, and drop the `MENTIONS` of
        the written entities that their source chunks no longer list; nothing else is touched.
        `previous_sources`: the stored source chunks of written entities before the update; theirs are
        dropped by pair (a hub's tens of thousands of mentions checked against its list is quadratic)."""
        validate_kb_id(kb)
        removed_rel = [{"id": i} for i in sorted(removed_relationship_ids)]
        await self._write_batches(cy.DELETE_RELATIONSHIPS_BY_ID, kb, removed_rel)
        await self._write_batches(cy.DELETE_ENTITIES_BY_ID, kb, [{"id": i} for i in sorted(removed_entity_ids)])
        await self.upsert_entities(kb, entities)
        previous = previous_sources or {}
        stale = [
            {"entity_id": e.id, "chunk_id": chunk_id}
            for e in entities
            if e.id in previous
            for chunk_id in sorted(set(previous[e.id]) - set(e.source_chunk_ids))
        ]
        await self._write_batches(cy.DELETE_MENTIONS_BY_PAIR, kb, stale)
        others = [{"id": e.id} for e in entities if e.id not in previous]
        await self._write_batches(cy.DELETE_STALE_MENTIONS_OF, kb, others)
        await self.upsert_relationships(kb, relationships)

    async def entity_layer(self, kb: str, page_size: int = 20_000) -> MergeResult:
        """The stored entities and relationships as the merge that wrote them, read in keyset pages."""
        validate_kb_id(kb)
        entities = []
        async for page in self._row_pages(cy.MATCH_ENTITIES_PAGE, kb, page_size):
            entities += [
                MergedEntity(
                    id=i, name=n, normalised_name=k, type=t, descriptions=d, summary=s, source_chunk_ids=c, aliases=a
                )
                for i, n, k, t, d, s, c, a in page
            ]
        relationships = []
        async for page in self._row_pages(cy.MATCH_RELATIONSHIPS_PAGE, kb, page_size):
            relationships += [
                MergedRelationship(
                    id=i,
                    source_id=src,
                    target_id=tgt,
                    type=t,
                    original_types=o,
                    descriptions=d,
                    weight=w,
                    source_chunk_ids=c,
                    summary=s,
                    pmi=p,
                )
                for i, src, tgt, t, o, d, w, c, s, p in page
            ]
        return MergeResult(entities=entities, relationships=relationships)

    async def entities_by_id(self, kb: str, ids: Sequence[str], *, sources: bool = True) -> list[MergedEntity]:
        """These stored entities (those that exist), in id order, as `entity_layer` reads them
        (`sources=False`: with empty `source_chunk_ids`)."""
        validate_kb_id(kb)
        ordered = sorted(set(ids))
        entities = []
        for start in range(0, len(ordered), _BATCH):
            for row in await self._store.read(
                cy.MATCH_ENTITIES_BY_ID, kb=kb, ids=ordered[start : start + _BATCH], sources=sources
            ):
                i, n, k, t, d, s, c, a = row["row"]
                entities.append(
                    MergedEntity(
                        id=i,
                        name=n,
                        normalised_name=k,
                        type=t,
                        descriptions=d,
                        summary=s,
                        source_chunk_ids=c,
                        aliases=a,
                    )
                )
        return entities

    async def entity_state_of(self, kb: str, ids: Sequence[str]) -> dict[str, StoredState]:
        """`entity_state` of these entities only (those that exist)."""
        validate_kb_id(kb)
        ordered = sorted(set(ids))
        state = {}
        vectors = await self._vectors(kb)
        for start in range(0, len(ordered), _BATCH):
            for row in await self._store.read(
                cy.MATCH_ENTITY_STATE_OF, **vectors, kb=kb, ids=ordered[start : start + _BATCH]
            ):
                state[row["id"]] = StoredState(
                    id=row["id"],
                    input_hash=row["descriptions_hash"],
                    output=row["summary"],
                    embedding_hash=row["embedding_hash"],
                    embedded=row["embedded"],
                )
        return state

    async def relationships_by_id(
        self, kb: str, ids: Sequence[str], *, sources: bool = True
    ) -> list[MergedRelationship]:
        """These stored relationships (those that exist), in id order, as `entity_layer` reads them
        (`sources=False`: with empty `source_chunk_ids`)."""
        validate_kb_id(kb)
        ordered = sorted(set(ids))
        relationships = []
        for start in range(0, len(ordered), _BATCH):
            for row in await self._store.read(
                cy.MATCH_RELATIONSHIPS_BY_ID, kb=kb, ids=ordered[start : start + _BATCH], sources=sources
            ):
                i, src, tgt, t, o, d, w, c, s, p = row["row"]
                relationships.append(
                    MergedRelationship(
                        id=i,
                        source_id=src,
                        target_id=tgt,
                        type=t,
                        original_types=o,
                        descriptions=d,
                        weight=w,
                        source_chunk_ids=c,
                        summary=s,
                        pmi=p,
                    )
                )
        return relationships

    async def _row_pages(self, statement, kb: str, page_size: int) -> AsyncIterator[list[list[Any]]]:
        """Keyset paging over a statement whose one record holds a list of rows, each starting with its id."""
        after = ""
        while True:
            rows = await self._store.read_value(statement, kb=kb, after=after, limit=page_size)
            if rows:
                yield rows
            if len(rows) < page_size:
                return
            after = rows[-1][0]

    # --- embeddings bookkeeping ----------------------------------------------------------------------

    async def chunks_without_embedding(
        self, kb: str, document_ids: Sequence[str] | None = None
    ) -> list[tuple[str, str]]:
        """(id, text) of the kb's chunks without a vector, or of those of `document_ids`."""
        if document_ids is None:
            rows = await self._store.read(
                cy.MATCH_CHUNKS_WITHOUT_EMBEDDING, **await self._vectors(kb), kb=validate_kb_id(kb)
            )
        else:
            rows = await self._store.read(
                cy.MATCH_DOCUMENT_CHUNKS_WITHOUT_EMBEDDING,
                **await self._vectors(kb),
                kb=validate_kb_id(kb),
                document_ids=list(document_ids),
            )
        return [(row["id"], row["text"]) for row in rows]

    # --- reads of the derived layers (inspection, tests) ------------------------------------------

    async def chunks(self, kb: str) -> list[dict[str, Any]]:
        """Every chunk: id, document_id, index, text, extractable, extraction_status, embedded."""
        return await self._store.read(cy.MATCH_CHUNKS, **await self._vectors(kb), kb=validate_kb_id(kb))

    async def entities(self, kb: str) -> list[dict[str, Any]]:
        """Every entity: id, name, type, descriptions, summary, source_chunk_ids, aliases, embedded."""
        return await self._store.read(cy.MATCH_ENTITIES, **await self._vectors(kb), kb=validate_kb_id(kb))

    async def relationships(self, kb: str) -> list[dict[str, Any]]:
        """Every relationship: id, source_id, target_id, type, descriptions, summary, source_chunk_ids."""
        return await self._store.read(cy.MATCH_RELATIONSHIPS, kb=validate_kb_id(kb))

    async def communities(self, kb: str) -> list[dict[str, Any]]:
        """Every community with its report fields, `parent_id` as stored and the parent it links to."""
        rows = await self._store.read(cy.MATCH_COMMUNITIES, **await self._vectors(kb), kb=validate_kb_id(kb))
        return [{**row, "findings": json.loads(row["findings"]) if row["findings"] else []} for row in rows]

    # --- counts --------------------------------------------------------------------------------------

    async def counts(self, kb: str) -> KbCounts:
        rows = await self._store.read(cy.COUNT_KB, kb=validate_kb_id(kb))
        return KbCounts.model_validate(rows[0])

    # --- the knowledge bases -------------------------------------------------------------------------

    async def set_profile(self, kb: str, profile: KbProfile) -> None:
        await self._store.write(cy.SET_KB_PROFILE, kb=validate_kb_id(kb), **profile.model_dump())

    async def list_kbs(self) -> list[KbSummary]:
        """Every knowledge base, by id, with its counts and how it was last ingested."""
        summaries = []
        for row in await self._store.read(cy.LIST_KBS):
            counts = KbCounts.model_validate({field: row[field] for field in KbCounts.model_fields if field in row})
            rest = {field: row[field] for field in KbSummary.model_fields if field != "counts"}
            summaries.append(KbSummary(**rest, counts=counts))
        return summaries


def render_report(report: CommunityReport) -> str:
    """The report as Markdown text, as given to query-time context builders."""
    lines = [f"# {report.title}", "", report.summary, "", f"Rating: {report.rating:g} — {report.rating_explanation}"]
    for finding in report.findings:
        lines += ["", f"## {finding.summary}", finding.explanation]
    return "\n".join(lines).strip()
