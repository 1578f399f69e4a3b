"""Neo4j storage: the only package of driftrag that holds Cypher."""

from driftrag.store.neo4j_store import Neo4jStore

__all__ = ["Neo4jStore"]
