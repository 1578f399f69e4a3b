"""Over real HTTP (uvicorn, the real Neo4j): every query mode retries a transient Neo4j failure and stops
at the query timeout, DRIFT and the single-pass modes alike. The failures are injected around the real
driver (`tests.fakes.flaky_neo4j`)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from driftrag.api import ApiKeys, create_app
from driftrag.api.server import BackgroundServer
from driftrag.facade import DriftRAG
from driftrag.search.modes import MODE_NAMES
from driftrag.settings import Settings
from driftrag.store import Neo4jStore
from driftrag.store.roles import neo4j_roles
from tests.fakes.flaky_neo4j import FlakyDriver

QUESTION = "Who keeps the Glass Lighthouse?"


def flaky_server(settings: Settings, api_keys: ApiKeys) -> tuple[BackgroundServer, FlakyDriver]:
    flaky = FlakyDriver(Neo4jStore.from_settings(settings).driver)
    rag = DriftRAG(settings, stores=neo4j_roles(Neo4jStore(settings, flaky)))
    return BackgroundServer(create_app(rag, api_keys)), flaky


@pytest.fixture(scope="module")
def retrying(
    api_settings: Settings, api_keys: ApiKeys, corpus_kb: str
) -> Iterator[tuple[BackgroundServer, FlakyDriver]]:
    server, flaky = flaky_server(api_settings.model_copy(update={"query_step_retries": 1}), api_keys)
    with server as running:
        yield running, flaky


@pytest.fixture(scope="module")
def impatient(
    api_settings: Settings, api_keys: ApiKeys, corpus_kb: str
) -> Iterator[tuple[BackgroundServer, FlakyDriver]]:
    server, flaky = flaky_server(api_settings.model_copy(update={"query_timeout_s": 0.5}), api_keys)
    with server as running:
        yield running, flaky


def ask(client: httpx.Client, kb: str, mode: str) -> httpx.Response:
    return client.post(f"/knowledge-bases/{kb}/query", json={"question": QUESTION, "mode": mode})


@pytest.mark.parametrize("mode", MODE_NAMES)
def test_every_mode_retries_a_transient_neo4j_failure(retrying, make_client, keys, corpus_kb: str, mode: str) -> None:
    server, flaky = retrying
    client = make_client(server, keys.reader)
    assert ask(client, corpus_kb, mode).status_code == 200  # the server is connected and the schema checked
    before = flaky.injected
    flaky.fail_next(2)  # both of the store's attempts at one read: the query's step retry answers
    response = ask(client, corpus_kb, mode)
    assert response.status_code == 200, response.text
    assert flaky.injected == before + 2
    assert response.json()["mode"] == mode and response.json()["answer"]


@pytest.mark.parametrize("mode", MODE_NAMES)
def test_every_mode_answers_504_past_the_query_timeout(impatient, make_client, keys, corpus_kb: str, mode: str) -> None:
    server, flaky = impatient
    client = make_client(server, keys.reader)
    client.get("/system")  # connected before the stall is armed
    flaky.stall_next(1, seconds=3.0)
    response = ask(client, corpus_kb, mode)
    assert response.status_code == 504, response.text
    assert response.json()["code"] == "query_timeout"
    assert f"the {mode} query" in response.json()["detail"]
