"""Ingestion jobs outlive their server: the API (`tests/fakes/serve_slowly.py`, whose chat model sleeps before
each answer) is killed with SIGKILL in the middle of a job and another is started on the same Neo4j; the
job's GET keeps answering, and the job is resumed, or failed with the reason once its servers died twice.
Also: deleting a kb deletes its job records."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from driftrag.facade import DriftRAG
from driftrag.settings import Settings
from tests.fakes.harbor_corpus import CORPUS, DescriptiveChatModel
from tests.support.api import TEXTS
from tests.support.jobs import wait_for
from tests.support.ports import free_port

# Slow end to end (own servers, subprocesses, a browser or the whole book): `-m "not slow"` skips it.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]
HARBOR = [{"title": title, "text": text} for title, text in CORPUS.items()]
# The servers here take a job (and a kb lock) of a server silent this long for dead: the test waits
# seconds, not the default minute. The other servers of the test session keep the default.
TTL_S = 2
SERVER_SETTINGS = {"chunk_size": 120, "chunk_overlap": 10, "llm_concurrency": 1, "kb_lock_ttl_s": TTL_S}


@contextmanager
def slow_server(settings: Settings, home: Path, delay_s: float) -> Iterator[tuple[subprocess.Popen, httpx.Client]]:
    """A server process on a free port, with a client on its /api/v1 once it answers; killed at the end."""
    port = free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith(("DRIFTRAG_", "OPENAI_"))}
    env.update(
        NEO4J_URI=settings.bolt_uri,
        PYTHONPATH=str(ROOT),
        DRIFTRAG_HOME=str(home),
        DRIFTRAG_LLM_PROVIDER="offline",
        **{f"DRIFTRAG_{key.upper()}": str(value) for key, value in SERVER_SETTINGS.items()},
    )
    log = (home / f"server-{port}.log").open("w")  # read it when a test fails
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "fakes" / "serve_slowly.py"), str(port), str(delay_s)],
        env=env,
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}/api/v1", timeout=60)
    try:
        deadline = time.monotonic() + 180
        while True:
            assert process.poll() is None, "the server stopped during start-up"
            try:
                if client.get("/system").json().get("graph_engine") == "Neo4j":
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the server did not answer within 180 s"
            time.sleep(0.2)
        yield process, client
    finally:
        client.close()
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)
        log.close()


def _kill(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGKILL)
    assert process.wait(timeout=30) == -signal.SIGKILL


def _wait_until(client: httpx.Client, kb: str, job_id: str, check, timeout_s: float = 120) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        job = client.get(f"/knowledge-bases/{kb}/jobs/{job_id}").json()
        if check(job):
            return job
        assert job["state"] not in {"succeeded", "failed"}, job
        assert time.monotonic() < deadline, job
        time.sleep(0.05)


def _extracting(job: dict) -> bool:
    """Running, and at least one chunk extracted but not all: a kill now cuts the job in the middle."""
    extract = next((stage for stage in job["stages"] if stage["stage"] == "extract"), None)
    return job["state"] == "running" and extract is not None and 1 <= extract["done"] < extract["total"] - 1


@pytest.fixture
def harbor_settings(neo4j_settings: Settings) -> Settings:
    return neo4j_settings.model_copy(update=SERVER_SETTINGS)


def _ingest_in_process(settings: Settings, kb: str):
    async def ingest():
        async with DriftRAG(settings, chat=DescriptiveChatModel()) as rag:
            return await rag.ingest(kb, texts=CORPUS)

    return asyncio.run(ingest())


def _delete(settings: Settings, *kbs: str) -> None:
    async def delete():
        async with DriftRAG(settings) as rag:
            for kb in kbs:
                await rag.delete_kb(kb)

    asyncio.run(delete())


def test_a_job_whose_server_is_killed_is_resumed_by_the_next_server(harbor_settings: Settings, tmp_path: Path) -> None:
    kb, clean_kb = f"test-durable-{uuid.uuid4().hex[:8]}", f"test-durable-clean-{uuid.uuid4().hex[:8]}"
    clean = _ingest_in_process(harbor_settings, clean_kb)  # the same corpus, never interrupted
    try:
        with slow_server(harbor_settings, tmp_path, delay_s=0.4) as (process, client):
            accepted = client.post(f"/knowledge-bases/{kb}/documents", json={"texts": HARBOR}).json()
            _wait_until(client, kb, accepted["id"], _extracting)
            time.sleep(1.5)  # the job's progress reaches its record (throttled to once a second)
            _kill(process)

        with slow_server(harbor_settings, tmp_path, delay_s=0.0) as (_, client):
            # The record answers at once, whether the new server has taken the job over yet or not.
            seen = client.get(f"/knowledge-bases/{kb}/jobs/{accepted['id']}")
            assert seen.status_code == 200, seen.text
            assert seen.json()["state"] in {"queued", "running"}
            assert any(stage["stage"] == "extract" and stage["done"] >= 1 for stage in seen.json()["stages"])

            job = wait_for(client, kb, accepted["id"])
            assert job["state"] == "succeeded", job["error"]
            assert job["interrupted"] == 1 and job["error"] is None
            result = job["result"]
            # Resumed, not redone: the chunks the killed server extracted were not extracted again.
            assert 0 < result["extracted_chunks"] < clean.extracted_chunks
            assert result["failed_chunks"] == []
            assert result["counts"] == clean.counts.model_dump()
            assert client.get(f"/knowledge-bases/{kb}/stats").json()["counts"] == result["counts"]
            assert [listed["id"] for listed in client.get(f"/knowledge-bases/{kb}/jobs").json()["jobs"]] == [job["id"]]
    finally:
        _delete(harbor_settings, kb, clean_kb)


def test_a_job_whose_servers_die_twice_is_failed_with_the_reason(harbor_settings: Settings, tmp_path: Path) -> None:
    kb = f"test-durable-twice-{uuid.uuid4().hex[:8]}"
    try:
        with slow_server(harbor_settings, tmp_path, delay_s=0.4) as (process, client):
            accepted = client.post(f"/knowledge-bases/{kb}/documents", json={"texts": HARBOR}).json()
            _wait_until(client, kb, accepted["id"], _extracting)
            _kill(process)
        with slow_server(harbor_settings, tmp_path, delay_s=0.4) as (process, client):
            # Taken over, the job is queued (interrupted once, its stages kept) until its record says it runs.
            def taken_over(job: dict) -> bool:
                return job["interrupted"] == 1 and bool(job["stage"]) and job["state"] != "queued"

            resumed = _wait_until(client, kb, accepted["id"], taken_over)
            assert resumed["state"] == "running"
            _kill(process)

        with slow_server(harbor_settings, tmp_path, delay_s=0.0) as (_, client):
            job = wait_for(client, kb, accepted["id"])
            assert job["state"] == "failed" and job["interrupted"] == 2 and job["result"] is None
            assert job["error"]["code"] == "interrupted"
            assert "stopped 2 times" in job["error"]["detail"] and "post the same texts" in job["error"]["detail"]
            assert job["finished_at"] is not None

            # The work done is kept: posting the same texts again finishes the kb without redoing it.
            again = client.post(f"/knowledge-bases/{kb}/documents", json={"texts": HARBOR}).json()
            done = wait_for(client, kb, again["id"])
            assert done["state"] == "succeeded", done["error"]
            assert done["result"]["failed_chunks"] == [] and done["result"]["counts"]["documents"] == 3
            jobs = client.get(f"/knowledge-bases/{kb}/jobs").json()["jobs"]
            assert [(listed["id"], listed["state"]) for listed in jobs] == [
                (again["id"], "succeeded"),
                (accepted["id"], "failed"),
            ]
    finally:
        _delete(harbor_settings, kb)


def test_deleting_a_kb_deletes_its_job_records(admin: httpx.Client, api_settings: Settings) -> None:
    by_http, by_cli_path = (f"test-durable-delete-{uuid.uuid4().hex[:8]}" for _ in range(2))
    jobs = {}
    for kb in (by_http, by_cli_path):
        jobs[kb] = admin.post(f"/knowledge-bases/{kb}/documents", json={"texts": TEXTS[:1]}).json()["id"]
        assert wait_for(admin, kb, jobs[kb])["state"] == "succeeded"
        # A job record is no kb content: the counts are the documents' alone.
        assert admin.get(f"/knowledge-bases/{kb}/stats").json()["counts"]["documents"] == 1

    async def records(kb: str) -> list[str]:
        async with DriftRAG(api_settings) as rag:
            return await rag.stores.jobs.of_kb(kb, limit=1000)

    assert len(asyncio.run(records(by_http))) == 1
    assert admin.delete(f"/knowledge-bases/{by_http}").status_code == 200
    _delete(api_settings, by_cli_path)  # what `driftrag delete --kb` runs

    for kb in (by_http, by_cli_path):
        assert asyncio.run(records(kb)) == []
        gone = admin.get(f"/knowledge-bases/{kb}/jobs/{jobs[kb]}")
        assert gone.status_code == 404 and gone.json()["code"] == "job_not_found"
        assert admin.get(f"/knowledge-bases/{kb}/jobs").json()["jobs"] == []
    listed = {summary["kb"] for summary in admin.get("/knowledge-bases").json()["knowledge_bases"]}
    assert not listed & {by_http, by_cli_path}
