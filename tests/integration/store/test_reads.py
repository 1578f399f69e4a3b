"""Reads are auto-commit statements in read sessions, one round trip each: what they must keep of the
managed transactions they replaced. The failures are injected around the real driver
(`tests.fakes.flaky_neo4j`); the statements run on the real Neo4j."""

from __future__ import annotations

import asyncio
import logging

import pytest

from driftrag.errors import BackendUnavailableError
from driftrag.settings import Settings
from driftrag.store import Neo4jStore
from driftrag.store.cypher import documents as documents_cy
from driftrag.store.cypher import graph as graph_cy
from driftrag.store.cypher import schema as schema_cy


@pytest.mark.parametrize("transient", [False, True], ids=["dropped connection", "transient error"])
async def test_one_failed_attempt_of_a_read_is_retried_and_answers(flaky_store, kb: str, transient: bool) -> None:
    """A pooled connection the server closed, or a transient error: the driver would have retried it in
    a managed transaction, so the store runs the read again as one."""
    store, flaky = flaky_store
    await store.write(documents_cy.UPSERT_KNOWLEDGE_BASE, kb=kb)
    flaky.fail_next(1, transient=transient)
    rows = await store.read(graph_cy.MATCH_KB, kb=kb)
    assert flaky.injected == 1 and [row["graph_enabled"] for row in rows] == [True]
    assert not store.health.known_down


async def test_a_read_that_fails_on_both_attempts_reports_the_lost_server(flaky_store) -> None:
    store, flaky = flaky_store
    flaky.fail_next(2)
    with pytest.raises(BackendUnavailableError, match="unreachable"):
        await store.read(graph_cy.MATCH_KB, kb="no-such-kb")
    assert flaky.injected == 2
    # A fresh connection answered the probe, so the server is not known down: the next read goes through.
    assert not store.health.known_down
    assert await store.read(graph_cy.MATCH_KB, kb="no-such-kb") == []


async def test_a_connected_store_reads_concurrently_on_connections_it_already_opened(
    neo4j_settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    # A new connection of the async driver stalls about 40 ms at its HELLO (delayed ACK): `connect` opens
    # the pool's first ones together, so the concurrent reads of a run (an ingestion makes three) open none.
    async with Neo4jStore.from_settings(neo4j_settings) as store:
        await store.connect()
        with caplog.at_level(logging.DEBUG, logger="neo4j"):
            rows = await asyncio.gather(*(store.read(schema_cy.PING) for _ in range(3)))
        assert rows == [[{"ok": 1}]] * 3
        opened = [record for record in caplog.records if "<OPEN>" in record.getMessage()]
        assert opened == []


@pytest.mark.parametrize("statement", ["read", "write", "streamed read", "batched write"])
async def test_credentials_refused_after_connecting_are_a_backend_error(flaky_store, kb: str, statement: str) -> None:
    """A password changed on the server after the store connected: the next statement is refused. Callers
    (the HTTP API's 503 among them) get driftrag's BackendUnavailableError naming the user, never the
    driver's own error type."""
    store, flaky = flaky_store
    flaky.fail_next(1, refused=True)
    runs = {
        "read": lambda: store.read(graph_cy.MATCH_KB, kb=kb),
        "write": lambda: store.write(documents_cy.UPSERT_KNOWLEDGE_BASE, kb=kb),
        "streamed read": lambda: store.read_streamed(graph_cy.MATCH_KB, lambda row: None, kb=kb),
        "batched write": lambda: store.run_in_transactions(
            "CALL { MATCH (n:__NoSuchLabel__ {kb: $kb}) DELETE n } IN TRANSACTIONS", kb=kb
        ),
    }
    with pytest.raises(BackendUnavailableError, match="refused the credentials of NEO4J_USERNAME"):
        await runs[statement]()
    assert flaky.injected == 1
