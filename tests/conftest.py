"""Shared fixtures: the real local Neo4j for integration tests, and per-test knowledge bases.

Integration tests run by default. The session starts the project's local Neo4j on a test port
(its own data directory) unless NEO4J_URI points at a server, and stops it at the end if it
started it. Under parallel workers (`pytest -n N`, as `make test` runs) each worker has its own
Neo4j on its own port, so a test that changes server-wide state (vector indexes, `--all` resets)
never races another worker's tests.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from driftrag import corpora
from driftrag.errors import DriftRAGError
from driftrag.local_neo4j import LocalNeo4j
from driftrag.settings import Settings
from driftrag.store import Neo4jStore
from tests.fakes.flaky_neo4j import FlakyDriver

# Fixtures kept beside their helpers: the local GGUF models (one lookup, to be swapped for a pinned fetch).
pytest_plugins = ["tests.support.real_models"]

# gw0, gw1… under pytest-xdist; a serial run is worker 0. Workers sit 40 ports apart: a test may take
# TEST_NEO4J_PORT + 20 for a throwaway server of its own.
WORKER_INDEX = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
TEST_NEO4J_PORT = int(os.environ.get("DRIFTRAG_TEST_NEO4J_PORT", "17687")) + 40 * WORKER_INDEX


@pytest.fixture(scope="session")
def alice_book() -> Path:
    """Alice (the pinned edition), as a user gets it: the copy `driftrag data fetch alice` keeps under the
    user's DRIFTRAG_HOME, downloaded when it is not there. Without it (offline, never fetched) the tests
    that need the book are skipped, saying how to get it: the suite's other tests use the bundled sample
    corpus, and `.ci/run` copies the book into the cache wherever the project's shared data is at hand."""
    try:
        return corpora.corpus_file("alice", home=Settings().home)
    except DriftRAGError as exc:
        message = (
            f"Alice is not in driftrag's corpus cache and could not be fetched: {exc}\n"
            "Run `driftrag data fetch alice` (or, offline, `driftrag data fetch alice --from PATH`) once."
        )
        pytest.skip(message)


@pytest.fixture(scope="session")
def chromium() -> Path:
    """Debian's headless chromium (tests/support/browser.py), installed with apt-get when missing. Where that cannot
    work (not root, no apt-get), the browser tests fail on CI and are skipped elsewhere, saying why."""
    from tests.support.browser import ChromiumUnavailable, ensure_chromium

    try:
        return ensure_chromium()
    except ChromiumUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(str(exc))
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def neo4j_uri() -> Iterator[str]:
    configured = os.environ.get("NEO4J_URI")
    if configured:
        yield configured
        return
    server = LocalNeo4j(Settings(), port=TEST_NEO4J_PORT)
    already_running = server.status().state == "running"
    status = server.start()
    yield status.bolt_uri
    if not already_running:
        server.stop()


@pytest.fixture(scope="session")
def neo4j_settings(neo4j_uri: str, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """Settings pointing at the test Neo4j, offline models, a private cache directory."""
    return Settings(
        neo4j_uri=neo4j_uri,
        home=tmp_path_factory.mktemp("driftrag-home"),
        llm_provider="offline",
        connect_retries=5,
        connect_retry_delay_s=1.0,
    )


@pytest.fixture
async def store(neo4j_settings: Settings) -> AsyncIterator[Neo4jStore]:
    async with Neo4jStore.from_settings(neo4j_settings) as connected:
        await connected.connect()
        yield connected


@pytest.fixture
async def schema(store: Neo4jStore) -> None:
    """The test database's schema: its (kb, id) constraints back the source-validity lookups."""
    await store.ensure_schema()


@pytest.fixture
async def flaky_store(neo4j_settings: Settings) -> AsyncIterator[tuple[Neo4jStore, FlakyDriver]]:
    """A store over the test Neo4j whose statements a test can make fail or stall (tests/fakes/flaky_neo4j.py)."""
    flaky = FlakyDriver(Neo4jStore.from_settings(neo4j_settings).driver)
    store = Neo4jStore(neo4j_settings, flaky)
    await store.connect()
    yield store, flaky
    await store.close()


@pytest.fixture
def kb() -> str:
    """A fresh knowledge-base id per test, so tests never see each other's data."""
    return f"test-{uuid.uuid4().hex[:12]}"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Everything under tests/integration needs the real Neo4j: mark it so it can be selected."""
    for item in items:
        if "/tests/integration/" in str(item.path):
            item.add_marker(pytest.mark.integration)
