"""Keeping the search markers true (see `driftrag.store.cypher.markers`) after a change of sources.

A chunk toggle or delete changes which entities and relationships have a valid source; the refresh
rechecks the entities and relationships that list a changed chunk (and every relationship's endpoints),
in batches of one kb. A delete that knows which entities and relationships list its chunks (from their
checkpoints) refreshes those alone (`refresh_markers_of`). The schema setup runs the same refresh,
over everything, for a kb written before the markers existed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from driftrag.store.cypher import graph as graph_cy
from driftrag.store.cypher import markers as cy

if TYPE_CHECKING:  # neo4j_store runs the migration from its schema setup
    from driftrag.store.neo4j_store import Neo4jStore


async def refresh_search_markers(store: Neo4jStore, kb: str, chunk_ids: Iterable[str] | None) -> None:
    """Recompute the markers of one kb for the changed `chunk_ids` (None: recompute all).

    Entities first: a relationship's `valid` includes its endpoints'.
    """
    chunks = None if chunk_ids is None else dict.fromkeys(chunk_ids, True)
    if chunks is not None and not chunks:
        return
    await store.run_in_transactions(cy.REFRESH_ENTITY_MARKERS, kb=kb, chunks=chunks)
    await store.run_in_transactions(cy.REFRESH_RELATIONSHIP_MARKERS, kb=kb, chunks=chunks)


async def refresh_markers_of(
    store: Neo4jStore, kb: str, entity_ids: Sequence[str], relationship_ids: Sequence[str], batch: int = 2000
) -> None:
    """Recompute the markers of these entities and relationships only, and the `valid` of every
    relationship of an entity whose `valid` changed (what a kb-wide refresh would change, when the
    given ids are all that list the changed chunks)."""
    changed: list[str] = []
    ids = sorted(set(entity_ids))
    for start in range(0, len(ids), batch):
        rows = await store.write(cy.REFRESH_ENTITY_MARKERS_OF, kb=kb, ids=ids[start : start + batch])
        changed += rows[0]["changed"] if rows else []
    for start in range(0, len(changed), batch):
        await store.write(graph_cy.REFRESH_ENDPOINT_RELATIONSHIPS, kb=kb, ids=changed[start : start + batch])
    rel_ids = sorted(set(relationship_ids))
    for start in range(0, len(rel_ids), batch):
        await store.write(cy.REFRESH_RELATIONSHIP_MARKERS_OF, kb=kb, ids=rel_ids[start : start + batch])


async def document_chunk_ids(store: Neo4jStore, kb: str, document_id: str) -> list[str]:
    """The ids of one document's chunks (read before a delete, for the refresh after it)."""
    rows = await store.read(cy.MATCH_DOCUMENT_CHUNK_IDS, kb=kb, document_id=document_id)
    return list(rows[0]["ids"]) if rows else []


async def migrate_search_markers(store: Neo4jStore) -> list[str]:
    """Give every kb without current markers its markers; returns the kbs migrated. Idempotent."""
    rows = await store.read(cy.MATCH_KBS_WITHOUT_MARKERS, version=cy.SEARCH_MARKERS_VERSION)
    migrated = []
    for row in rows:
        await refresh_search_markers(store, row["kb"], None)
        await store.write(cy.SET_KB_MARKERS_VERSION, kb=row["kb"], version=cy.SEARCH_MARKERS_VERSION)
        migrated.append(row["kb"])
    return migrated
