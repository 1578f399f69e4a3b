"""One graph per session for the query tests, ingested by the deterministic test LLM."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from driftrag.providers import Providers, build_providers
from driftrag.settings import Settings
from driftrag.store import Neo4jStore
from driftrag.store.graph import GraphStore
from tests.support.ingestion import SMALL_CHUNKS
from tests.support.search import ingested_kb


@pytest.fixture(scope="session")
def search_settings(neo4j_settings: Settings) -> Settings:
    return neo4j_settings.model_copy(update={**SMALL_CHUNKS, "max_cluster_size": 4})


@pytest.fixture(scope="session")
def search_providers(search_settings: Settings) -> Providers:
    return build_providers(search_settings)


@pytest.fixture(scope="session")
async def module_store(neo4j_settings: Settings) -> AsyncIterator[Neo4jStore]:
    async with Neo4jStore.from_settings(neo4j_settings) as connected:
        await connected.connect()
        yield connected


@pytest.fixture(scope="session")
async def graph_kb(
    module_store: Neo4jStore, search_settings: Settings, search_providers: Providers
) -> AsyncIterator[str]:
    """One graph for the query tests of the session (tests that switch parts off switch them back)."""
    kb = await ingested_kb(module_store, search_settings, search_providers)
    yield kb
    await GraphStore(module_store).delete_kb(kb)


@pytest.fixture(scope="session")
async def graph_ids(module_store: Neo4jStore, graph_kb: str) -> dict[str, set[str]]:
    graph = GraphStore(module_store)
    return {
        "chunk": {row["id"] for row in await graph.chunks(graph_kb)},
        "entity": {row["id"] for row in await graph.entities(graph_kb)},
        "relationship": {row["id"] for row in await graph.relationships(graph_kb)},
        "community": {row["id"] for row in await graph.communities(graph_kb)},
    }
