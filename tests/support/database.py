"""Reads of the whole test database, to show that an operation wrote nothing anywhere."""

from __future__ import annotations

from driftrag.store import Neo4jStore

# Test-only read: every node and relationship of the database, whatever its kb.
COUNT_EVERYTHING = "MATCH (n) OPTIONAL MATCH (n)-[r]->() RETURN count(DISTINCT n) AS nodes, count(r) AS relationships"


async def count_everything(store: Neo4jStore) -> tuple[int, int]:
    """(nodes, relationships) in the whole database."""
    row = (await store.read(COUNT_EVERYTHING))[0]
    return row["nodes"], row["relationships"]
