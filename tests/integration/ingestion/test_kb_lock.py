"""Writers of one kb take turns through a lock in Neo4j: real `driftrag ingest` processes, the real server."""

from __future__ import annotations

import asyncio
import re
import socket
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
from tests.support.cli import CLI, cli_env

SAMPLE = sorted((DATA_DIR / "sample").glob("*.md"))


def _cli(uri: str, home: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(CLI), *args, "--json"],
        env=cli_env(uri, home),
        cwd=home,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _ingest_process(uri: str, home: Path, kb: str, *paths: Path, workers: bool = False) -> subprocess.Popen[str]:
    return _cli(uri, home, "ingest", *map(str, paths), "--kb", kb, *(["--skip-communities"] if workers else []))


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
        "chunks": sorted(
            (c["id"], c["document_id"], c["index"], c["extraction_status"], c["embedded"]) for c in await rag.chunks(kb)
        ),
        "communities": sorted(
            (c["id"], c["level"], c["title"], c["summary"], tuple(c["entity_ids"]), c["embedded"])
            for c in await rag.communities(kb)
        ),
        "counts": (await rag.stats(kb)).model_dump(),
    }


async def test_processes_ingesting_different_documents_of_one_kb_at_once_give_the_graph_of_one_process(
    neo4j_uri: str, neo4j_settings: Settings, tmp_path: Path
) -> None:
    """One process for the whole corpus; two plain `ingest` processes on halves of it at once (their
    per-document halves run side by side, the kb-wide step once per process, the second finding it
    done); two `ingest --skip-communities` workers at once, then one `driftrag communities`."""
    suffix = uuid.uuid4().hex[:8]
    together, apart, workers = f"test-lock-one-{suffix}", f"test-lock-two-{suffix}", f"test-lock-workers-{suffix}"
    home = tmp_path
    processes = [
        _ingest_process(neo4j_uri, home, apart, *SAMPLE[:2]),
        _ingest_process(neo4j_uri, home, apart, *SAMPLE[2:]),
        _ingest_process(neo4j_uri, home, workers, *SAMPLE[:2], workers=True),
        _ingest_process(neo4j_uri, home, workers, *SAMPLE[2:], workers=True),
        _ingest_process(neo4j_uri, home, together, *SAMPLE),
    ]
    outputs = [process.communicate(timeout=1200) for process in processes]
    for process, (_, stderr) in zip(processes, outputs, strict=True):
        assert process.returncode == 0, stderr[-3000:]
    for stdout, _ in outputs[2:4]:  # a worker leaves the kb-wide step to `driftrag communities`
        result = IngestionResult.model_validate_json(stdout)
        assert not result.graph_rebuilt and result.stale and result.counts.entities == 0
        assert result.embedded["chunk"] == sum(d.chunks for d in result.documents) > 0
    async with DriftRAG(neo4j_settings) as rag:
        try:
            assert (await rag.stats(workers)).communities == 0
            build = _cli(neo4j_uri, home, "communities", "--kb", workers)
            stdout, stderr = build.communicate(timeout=1200)
            assert build.returncode == 0, stderr[-3000:]
            built = IngestionResult.model_validate_json(stdout)
            assert built.graph_rebuilt and not built.stale and built.embedded["chunk"] == 0
            one = await _graph(rag, together)
            assert one["counts"]["documents"] == len(SAMPLE) and one["counts"]["entities"] > 0
            assert one["communities"] and all(embedded for *_, embedded in one["communities"])
            assert await _graph(rag, apart) == one
            assert await _graph(rag, workers) == one
            again = _cli(neo4j_uri, home, "communities", "--kb", workers)
            stdout, stderr = again.communicate(timeout=600)
            assert again.returncode == 0 and not IngestionResult.model_validate_json(stdout).graph_rebuilt, stderr
        finally:
            for kb in (together, apart, workers):
                await rag.delete_kb(kb)


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


async def test_shared_holders_run_together_and_exclude_the_exclusive_lock(store: Neo4jStore) -> None:
    kb = f"test-lock-shared-{uuid.uuid4().hex[:8]}"
    await store.write(cy.CREATE_KB_LOCK_CONSTRAINT)
    first, second = KbLock(store, kb, ttl_s=30, shared=True), KbLock(store, kb, ttl_s=30, shared=True)
    exclusive = KbLock(store, kb, ttl_s=30)
    assert (await first.try_acquire())[0] and (await second.try_acquire())[0], "shared holders run together"
    acquired, holder, expires_in_ms = await exclusive.try_acquire()
    assert not acquired and "2 ingestion worker(s)" in holder and 0 < expires_in_ms <= 30_000
    await first.release()
    assert not (await exclusive.try_acquire())[0], "one shared holder is still there"
    await second.release()
    assert (await exclusive.try_acquire())[0], "free once every shared holder is done"
    assert not (await KbLock(store, kb, ttl_s=30, shared=True).try_acquire())[0], "exclusive excludes shared"
    await exclusive.release()
    assert (await KbLock(store, kb, ttl_s=30, shared=True).try_acquire())[0]


async def test_a_waiting_kb_wide_step_lets_no_new_ingestion_worker_in(store: Neo4jStore) -> None:
    """Writer preference: workers that keep arriving cannot starve the exclusive step."""
    kb = f"test-lock-prefer-{uuid.uuid4().hex[:8]}"
    await store.write(cy.CREATE_KB_LOCK_CONSTRAINT)
    running = KbLock(store, kb, ttl_s=30, shared=True)
    assert (await running.try_acquire())[0]
    told = asyncio.Event()
    exclusive = KbLock(store, kb, ttl_s=30, poll_s=0.1, on_wait=lambda _: told.set())
    waiting = asyncio.create_task(exclusive.acquire())
    late = KbLock(store, kb, ttl_s=30, shared=True)
    await asyncio.wait_for(told.wait(), 20)
    acquired, holder, expires_in_ms = await late.try_acquire()
    assert not acquired, "a new worker got in while the kb-wide step was waiting"
    assert "kb-wide step waiting" in holder and exclusive.owner in holder and 0 < expires_in_ms <= 30_000
    await running.release()
    await asyncio.wait_for(waiting, 20)
    assert not (await late.try_acquire())[0], "the exclusive holder excludes the late worker"
    await exclusive.release()
    assert (await late.try_acquire())[0], "the late worker goes on once the kb-wide step is done"
    await late.release()


async def test_an_exclusive_acquisition_that_gives_up_stops_blocking_workers(store: Neo4jStore) -> None:
    kb = f"test-lock-withdraw-{uuid.uuid4().hex[:8]}"
    await store.write(cy.CREATE_KB_LOCK_CONSTRAINT)
    running = KbLock(store, kb, ttl_s=30, shared=True)
    assert (await running.try_acquire())[0]
    told = asyncio.Event()
    exclusive = KbLock(store, kb, ttl_s=30, poll_s=0.1, on_wait=lambda _: told.set())
    waiting = asyncio.create_task(exclusive.acquire())
    await asyncio.wait_for(told.wait(), 20)
    assert not (await KbLock(store, kb, ttl_s=30, shared=True).try_acquire())[0]
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert (await KbLock(store, kb, ttl_s=30, shared=True).try_acquire())[0], "the claim was withdrawn"
    await running.release()


async def test_a_shared_holder_that_died_does_not_block_the_exclusive_lock(store: Neo4jStore) -> None:
    kb = f"test-lock-shared-dead-{uuid.uuid4().hex[:8]}"
    await store.write(cy.CREATE_KB_LOCK_CONSTRAINT)
    # Expiring soon, not before the exclusive lock has tried once (a loaded machine may take a second).
    assert (await KbLock(store, kb, ttl_s=3, shared=True, owner="dead-host:2:0").try_acquire())[0]
    started = time.monotonic()
    messages: list[str] = []
    async with KbLock(store, kb, ttl_s=30, poll_s=0.2, on_wait=messages.append) as alive:
        assert alive.waited and "dead-host:2:0" in messages[0]
        assert time.monotonic() - started < 10


async def test_the_kb_wide_step_waits_for_ingestion_workers_and_says_so(
    neo4j_uri: str, store: Neo4jStore, neo4j_settings: Settings, tmp_path: Path
) -> None:
    kb = f"test-lock-build-{uuid.uuid4().hex[:8]}"
    async with DriftRAG(neo4j_settings) as rag:
        await rag.ingest(kb, paths=[SAMPLE[0]], skip_communities=True)
        stderr_lines: list[str] = []
        async with KbLock(store, kb, ttl_s=30, shared=True):  # a worker still ingesting
            process = _cli(neo4j_uri, tmp_path, "communities", "--kb", kb)
            reader = threading.Thread(target=lambda: stderr_lines.extend(process.stderr), daemon=True)
            reader.start()
            deadline = time.monotonic() + 120
            while not any("waiting" in line for line in stderr_lines) and time.monotonic() < deadline:
                assert process.poll() is None, "the kb-wide step did not wait for the worker"
                await asyncio.sleep(0.2)
            assert "1 ingestion worker(s)" in " ".join(stderr_lines)
            assert (await rag.stats(kb)).communities == 0
        stdout = await asyncio.to_thread(process.stdout.read)
        assert await asyncio.to_thread(process.wait, 600) == 0, "".join(stderr_lines)[-3000:]
        reader.join(timeout=10)
        assert IngestionResult.model_validate_json(stdout).graph_rebuilt
        assert (await rag.stats(kb)).communities > 0
        await rag.delete_kb(kb)


def _ended_process() -> int:
    """The pid of a process of this host that has ended (as one killed mid-ingest)."""
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(ended.stdout)


async def test_a_dead_holders_lock_is_reported_at_once_with_its_expiry_then_the_ingest_goes_on(
    neo4j_uri: str, store: Neo4jStore, neo4j_settings: Settings, tmp_path: Path
) -> None:
    """A kill -9 leaves the lock of a process of this host that no longer runs: the next ingest says who
    holds it, when it expires and that its holder is gone, before anything else, and runs once it expired."""
    kb = f"test-lock-dead-{uuid.uuid4().hex[:8]}"
    pid = await asyncio.to_thread(_ended_process)
    holder = f"{socket.gethostname()}:{pid}:0badcafe"
    await store.write(cy.CREATE_KB_LOCK_CONSTRAINT)
    assert (await KbLock(store, kb, ttl_s=8, owner=holder).try_acquire())[0]  # never renewed nor released
    process = _ingest_process(neo4j_uri, tmp_path, kb, SAMPLE[0])
    stdout, stderr = await asyncio.to_thread(process.communicate, timeout=600)
    assert process.returncode == 0, stderr[-3000:]
    message = " ".join(stderr.split())  # the console wraps long lines
    assert message.startswith(f"waiting: knowledge base {kb!r} is being written by another process ({holder})")
    assert re.search(r"its lock expires in [0-8] s, at \d\d:\d\d:\d\d UTC", message), message
    assert f"process {pid} of this host holding it is not running" in message
    assert message.index("waiting:") < message.index("estimate:"), "said before the run's own work"
    assert IngestionResult.model_validate_json(stdout).counts.documents == 1
    async with DriftRAG(neo4j_settings) as rag:
        await rag.delete_kb(kb)
