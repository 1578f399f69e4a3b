"""The project's local Neo4j Community server: Maven-resolved jars and a single-file Java launcher."""

from driftrag.local_neo4j.resolver import ResolvedRuntime, cached_runtime, resolve_runtime
from driftrag.local_neo4j.server import LocalNeo4j, LocalNeo4jStatus

__all__ = ["LocalNeo4j", "LocalNeo4jStatus", "ResolvedRuntime", "cached_runtime", "resolve_runtime"]
