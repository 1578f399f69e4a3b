"""Neo4j storage: the only package of driftrag that holds Cypher."""

from driftrag.store.identifiers import validate_kb_id, validate_node_id
from driftrag.store.neo4j_store import Neo4jStore, ServerInfo, VectorIndexInfo, check_server_version

__all__ = [
    "Neo4jStore",
    "ServerInfo",
    "VectorIndexInfo",
    "check_server_version",
    "validate_kb_id",
    "validate_node_id",
]
