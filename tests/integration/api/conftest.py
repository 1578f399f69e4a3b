"""A real uvicorn server (in a thread, on a free port of 127.0.0.1) over a DriftRAG connected to the test
Neo4j, a small corpus ingested offline once for the package, and API keys of every kind."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Iterator

import httpx
import pytest

from driftrag.api import ApiKeys, create_app
from driftrag.api.auth import ApiKeyEntry, hash_key
from driftrag.api.server import BackgroundServer
from driftrag.facade import DriftRAG
from driftrag.settings import Settings
from tests.support.api import CORPUS, Keys


@pytest.fixture(scope="package")
def api_settings(neo4j_settings: Settings) -> Settings:
    # Small chunks, so the corpus spreads over several and entities recur across them.
    return neo4j_settings.model_copy(update={"chunk_size": 60, "chunk_overlap": 0})


@pytest.fixture(scope="package")
async def corpus_kb(api_settings: Settings) -> AsyncIterator[str]:
    """The corpus ingested in the offline mode; deleted at the end of the package."""
    kb = f"test-api-{uuid.uuid4().hex[:10]}"
    rag = DriftRAG(api_settings)
    await rag.connect()
    try:
        result = await rag.ingest(kb, texts=CORPUS)
        assert result.failed_chunks == [] and result.counts.relationships > 0
        yield kb
    finally:
        await rag.delete_kb(kb)
        await rag.close()


@pytest.fixture(scope="package")
def keys(corpus_kb: str) -> Keys:
    return Keys(
        manage_all=f"drk_manage_all_{uuid.uuid4().hex}",
        reader=f"drk_reader_{uuid.uuid4().hex}",
        stranger=f"drk_stranger_{uuid.uuid4().hex}",
        manage_one=f"drk_manage_one_{uuid.uuid4().hex}",
    )


@pytest.fixture(scope="package")
def api_keys(keys: Keys, corpus_kb: str) -> ApiKeys:
    return ApiKeys(
        [
            ApiKeyEntry(name="admin", key_sha256=hash_key(keys.manage_all), scopes=["manage"], kbs=["*"]),
            ApiKeyEntry(name="reader", key_sha256=hash_key(keys.reader), scopes=["read"], kbs=[corpus_kb]),
            ApiKeyEntry(name="stranger", key_sha256=hash_key(keys.stranger), scopes=["read"], kbs=["someone-else"]),
            ApiKeyEntry(name="owner", key_sha256=hash_key(keys.manage_one), scopes=["read", "manage"], kbs=[corpus_kb]),
        ]
    )


@pytest.fixture(scope="package")
def server(api_settings: Settings, api_keys: ApiKeys) -> Iterator[BackgroundServer]:
    """The API over the test Neo4j; its lifespan connects and closes its own DriftRAG."""
    with BackgroundServer(create_app(DriftRAG(api_settings), api_keys)) as running:
        yield running


@pytest.fixture(scope="package")
def unreachable_server(api_settings: Settings, api_keys: ApiKeys) -> Iterator[BackgroundServer]:
    """The API over a Neo4j that is not there: it starts anyway and answers 503."""
    settings = api_settings.model_copy(
        update={"neo4j_uri": "bolt://127.0.0.1:1", "connect_retries": 1, "connect_retry_delay_s": 0.0}
    )
    with BackgroundServer(create_app(DriftRAG(settings), api_keys)) as running:
        yield running


@pytest.fixture(scope="package")
def make_client() -> Iterator[Callable[..., httpx.Client]]:
    """`make_client(server, key, header="bearer"|"x-api-key")`: an httpx client on the server's /api/v1."""
    made: list[httpx.Client] = []

    def make(server: BackgroundServer, key: str | None = None, *, header: str = "bearer") -> httpx.Client:
        headers = {}
        if key is not None:
            headers = {"Authorization": f"Bearer {key}"} if header == "bearer" else {"X-API-Key": key}
        made.append(httpx.Client(base_url=f"{server.url}/api/v1", headers=headers, timeout=300))
        return made[-1]

    yield make
    for made_client in made:
        made_client.close()


@pytest.fixture(scope="package")
def admin(server: BackgroundServer, keys: Keys, make_client) -> httpx.Client:
    return make_client(server, keys.manage_all)


@pytest.fixture(scope="package")
def reader(server: BackgroundServer, keys: Keys, make_client) -> httpx.Client:
    return make_client(server, keys.reader)
