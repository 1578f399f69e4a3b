"""Writers of one kb take turns through a lock in Neo4j: real `driftrag ingest` processes, the real server."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from driftrag.corpora import DATA_DIR
from driftrag.facade import DriftRAG
from driftrag.ingestion.requests import IngestionResult
from driftrag.settings import Settings
from driftrag.store import Neo4jStore
from driftrag.store.cypher import locks as cy
from driftrag.store.locks import KbLock

CLI = Path(sys.executable).parent / "driftrag"
SAMPLE = sorted((DATA_DIR / "sample").glob("*.md"))


def _ingest_process(uri: str, home: Path, kb: str, *paths: Path) -> subprocess.Popen[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("OPENAI_", "DRIFTRAG_"))}
    env |= {"NEO4J_URI": uri, "DRIFTRAG_HOME": str(home), "DRIFTRAG_CONNECT_RETRIES": "2"}
    return subprocess.Popen(
        [str(CLI), "ingest", *map(str, paths), "--kb", kb, "--json"],
        env=env,
        cwd=home,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def _graph(rag: DriftRAG, kb: str) -> dict:
    return {
        "entities": sorted(
            (e["id"], e["name"], e["type"], e["summary"], tuple(sorted(e["source_chunk_ids"])))
            for e in await rag.entities(kb)
        ),
        "relationships": sorted(
            (r["id"], r["source_id"], r["target_id"], r["type"], r["summary"], tuple(sorted(r["source_chunk_ids"])))
            for r in await rag.relationships(kb)
        ),
        "communities": sorted((c["id"], c["level"], c["title"], c["summary"]) for c in await rag.communities(kb)),
        "counts": (await rag.stats(kb)).model_dump(),
    }


async def test_two_processes_ingesting_one_kb_give_the_graph_of_one_process(
    neo4j_uri: str, neo4j_settings: Settings, tmp_path: Path
) -> None:
    together, apart = f"test-lock-one-{uuid.uuid4().hex[:8]}", f"test-lock-two-{uuid.uuid4().hex[:8]}"
    home = tmp_path
    first = _ingest_process(neo4j_uri, home, apart, *SAMPLE[:2])
    second = _ingest_process(neo4j_uri, home, apart, *SAMPLE[2:])
    single = _ingest_process(neo4j_uri, home, together, *SAMPLE)
    outputs = [process.communicate(timeout=1200) for process in (first, second, single)]
    for process, (_, stderr) in zip((first, second, single), outputs, strict=True):
        assert process.returncode == 0, stderr[-3000:]
    async with DriftRAG(neo4j_settings) as rag:
        try:
            one, two = await _graph(rag, together), await _graph(rag, apart)
            assert one["counts"]["documents"] == len(SAMPLE) and one["counts"]["entities"] > 0
            assert two == one
        finally:
            await rag.delete_kb(together)
            await rag.delete_kb(apart)


async def test_a_second_writer_waits_for_the_lock_and_says_so(
    neo4j_uri: str, store: Neo4jStore, neo4j_settings: Settings, tmp_path: Path
) -> None:
    kb = f"test-lock-wait-{uuid.uuid4().hex[:8]}"
    stderr_lines: list[str] = []
    async with KbLock(store, kb, ttl_s=30):
        process = _ingest_process(neo4j_uri, tmp_path, kb, SAMPLE[0])
        reader = threading.Thread(target=lambda: stderr_lines.extend(process.stderr), daemon=True)
        reader.start()
        deadline = time.monotonic() + 120
        while not any("waiting" in line for line in stderr_lines) and time.monotonic() < deadline:
            assert process.poll() is None, "the second writer did not wait for the lock"
            await asyncio.sleep(0.2)
        message = " ".join(stderr_lines)
        assert f"knowledge base {kb!r} is being written by another process" in message
        await asyncio.sleep(2)
        assert process.poll() is None, "it went on while the lock was held"
    stdout = await asyncio.to_thread(process.stdout.read)
    assert await asyncio.to_thread(process.wait, 600) == 0, "".join(stderr_lines)[-3000:]
    reader.join(timeout=10)
    assert IngestionResult.model_validate_json(stdout).counts.documents == 1
    async with DriftRAG(neo4j_settings) as rag:
        assert (await rag.stats(kb)).documents == 1
        await rag.delete_kb(kb)


async def test_a_lock_whose_holder_died_expires(store: Neo4jStore) -> None:
    kb = f"test-lock-stale-{uuid.uuid4().hex[:8]}"
    dead = KbLock(store, kb, ttl_s=1, owner="dead-host:1:0")
    await store.write(cy.CREATE_KB_LOCK_CONSTRAINT)
    assert (await dead.try_acquire())[0]  # taken, never renewed nor released: its holder "died"
    messages: list[str] = []
    started = time.monotonic()
    async with KbLock(store, kb, ttl_s=30, poll_s=0.2, on_wait=messages.append) as alive:
        waited = time.monotonic() - started
        assert alive.waited and "dead-host:1:0" in messages[0]
        assert waited < 10
        assert not (await KbLock(store, kb, ttl_s=30).try_acquire())[0], "a live lock is not taken over"
    after = KbLock(store, kb, ttl_s=30)
    assert (await after.try_acquire())[0], "released on exit"
    await after.release()


@pytest.fixture(autouse=True)
def _no_openai(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
