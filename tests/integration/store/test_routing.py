"""Reads run in read transactions (a cluster routes them to readers), and the `neo4j://` routing scheme
works against the single local server as against a cluster or Aura."""

from __future__ import annotations

import uuid
from urllib.parse import urlsplit

import pytest
from neo4j.exceptions import ClientError

from driftrag.facade import DriftRAG
from driftrag.settings import Settings
from driftrag.store import Neo4jStore
from driftrag.store.cypher import graph as cy


def _routing_uri(uri: str) -> str:
    parts = urlsplit(uri)
    if parts.scheme != "bolt":
        pytest.skip(f"the test server is not a plain bolt:// one ({parts.scheme})")
    return f"neo4j://{parts.netloc}"


async def test_store_reads_run_in_read_access_mode(store: Neo4jStore) -> None:
    kb = f"test-routing-{uuid.uuid4().hex[:8]}"
    # A write statement sent as a read is refused by the server: every read() really is a read
    # transaction, which a cluster's routing driver sends to a reader.
    with pytest.raises(ClientError, match="read access mode"):
        await store.read(cy.SET_KB_STALE, kb=kb, stale=True)
    assert await store.read(cy.MATCH_KB, kb=kb) == []
    await store.write(cy.SET_KB_STALE, kb=kb, stale=True)
    assert (await store.read(cy.MATCH_KB, kb=kb))[0]["graph_stale"] is True
    await store.write(cy.DELETE_KB_NODES[-1], kb=kb)


async def test_a_routing_uri_ingests_and_queries_on_a_single_server(neo4j_uri: str, neo4j_settings: Settings) -> None:
    settings = neo4j_settings.model_copy(update={"neo4j_uri": _routing_uri(neo4j_uri)})
    kb = f"test-routing-{uuid.uuid4().hex[:8]}"
    async with DriftRAG(settings) as rag:
        try:
            text = "Mara Quill keeps the lighthouse at Cinder Point. Mara Quill writes to Tobin Marsh every week."
            result = await rag.ingest(kb, texts={"note": text * 3})
            assert result.counts.chunks >= 1 and result.counts.entities >= 1
            assert (await rag.graph_search(kb, "Mara Quill")).entities
            assert (await rag.stats(kb)).documents == 1
        finally:
            await rag.delete_kb(kb)
