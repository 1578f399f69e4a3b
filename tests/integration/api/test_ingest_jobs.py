"""Ingestion jobs over HTTP, on a real uvicorn and the real Neo4j: 202 with a job at once, the job's
progress and outcome, a client that disconnects, two jobs on one kb, the pending cap, and a shutdown
(killed servers: test_durable_jobs.py)."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import time
import uuid
from collections.abc import Iterator

import httpx
import pytest

from driftrag.api import ApiKeys, create_app
from driftrag.api.server import BackgroundServer
from driftrag.errors import ModelError
from driftrag.facade import DriftRAG
from driftrag.settings import Settings
from driftrag.store import Neo4jStore
from driftrag.store.cypher import locks as cy
from driftrag.store.locks import KbLock
from tests.fakes.scripted_llm import ScriptedChatModel
from tests.support.api import TEXTS
from tests.support.jobs import wait_for

# Every stage of the workflow reports progress (see tests/integration/ingestion/test_ingestion_workflow.py).
STAGES = {"documents", "extract", "summarize", "reports", "embed-chunk", "embed-entity", "embed-community"}


def _kb(label: str) -> str:
    return f"test-jobs-{label}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def cleanup(admin: httpx.Client) -> Iterator[list[str]]:
    kbs: list[str] = []
    yield kbs
    for kb in kbs:
        admin.delete(f"/knowledge-bases/{kb}")


def test_a_post_answers_202_with_a_job_that_reports_stages_counts_and_its_end(
    admin: httpx.Client, reader: httpx.Client, server: BackgroundServer, cleanup: list[str]
) -> None:
    kb = _kb("one")
    cleanup.append(kb)
    started = time.monotonic()
    response = admin.post(f"/knowledge-bases/{kb}/documents", json={"texts": TEXTS})
    answered_in = time.monotonic() - started
    assert response.status_code == 202, response.text
    accepted = response.json()
    assert re.fullmatch(r"job-[0-9a-f]{32}", accepted["id"])
    assert accepted["kb"] == kb and accepted["texts"] == 2
    assert accepted["state"] in {"queued", "running"} and accepted["result"] is None
    assert response.headers["location"] == f"/api/v1/knowledge-bases/{kb}/jobs/{accepted['id']}"

    job = wait_for(admin, kb, accepted["id"])
    assert job["state"] == "succeeded", job["error"]
    assert job["error"] is None and job["waiting_for"] is None
    assert job["created_at"] <= job["started_at"] <= job["finished_at"]
    stages = {stage["stage"]: stage for stage in job["stages"]}
    assert set(stages) >= STAGES
    assert all(stage["done"] == stage["total"] for stage in stages.values()), stages
    assert stages["documents"]["total"] == 2
    assert job["events"] >= len(STAGES)
    result = job["result"]
    assert result["failed_chunks"] == [] and result["extracted_chunks"] > 0
    assert result["counts"]["documents"] == 2 and result["counts"]["relationships"] > 0
    assert {doc["status"] for doc in result["documents"]} == {"new"}
    assert set(result["seconds_per_stage"]) >= {"documents", "extract", "embeddings"}
    # The answer came long before the work ended: it did not wait for the ingestion.
    assert answered_in < (time.monotonic() - started) / 2

    # The job's counts are the kb's; the job is listed; the location URL is the job.
    assert admin.get(f"/knowledge-bases/{kb}/stats").json()["counts"] == result["counts"]
    listed = admin.get(f"/knowledge-bases/{kb}/jobs").json()
    assert [item["id"] for item in listed["jobs"]] == [job["id"]]
    assert httpx.get(f"{server.url}{response.headers['location']}", headers=admin.headers).json() == job

    # Unchanged texts: a second job changes nothing and extracts nothing.
    again = admin.post(f"/knowledge-bases/{kb}/documents", json={"texts": TEXTS[:1]}).json()
    repeated = wait_for(admin, kb, again["id"])
    assert repeated["result"]["documents"][0]["status"] == "unchanged"
    assert repeated["result"]["extracted_chunks"] == 0
    assert [item["id"] for item in admin.get(f"/knowledge-bases/{kb}/jobs").json()["jobs"]] == [
        again["id"],
        job["id"],
    ]


def _post_and_hang_up(server: BackgroundServer, key: str, kb: str, body: dict) -> None:
    """Send the whole request, then close the connection without reading a byte of the answer."""
    payload = json.dumps(body).encode()
    head = (
        f"POST /api/v1/knowledge-bases/{kb}/documents HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(head.encode() + payload)
        sock.shutdown(socket.SHUT_RDWR)


def test_a_job_survives_a_client_that_disconnects(
    admin: httpx.Client, server: BackgroundServer, keys, cleanup: list[str]
) -> None:
    kb = _kb("gone")
    cleanup.append(kb)
    _post_and_hang_up(server, keys.manage_all, kb, {"texts": TEXTS})

    deadline = time.monotonic() + 60
    jobs: list[dict] = []
    while not jobs and time.monotonic() < deadline:
        jobs = admin.get(f"/knowledge-bases/{kb}/jobs").json()["jobs"]
        time.sleep(0.05)
    assert len(jobs) == 1, "the request reached the server and became a job"
    job = wait_for(admin, kb, jobs[0]["id"])
    assert job["state"] == "succeeded", job["error"]
    assert admin.get(f"/knowledge-bases/{kb}/stats").json()["counts"]["documents"] == 2


def test_two_jobs_on_one_kb_run_one_after_the_other(admin: httpx.Client, cleanup: list[str]) -> None:
    kb = _kb("two")
    cleanup.append(kb)
    first = admin.post(f"/knowledge-bases/{kb}/documents", json={"texts": TEXTS[:1]}).json()
    second_response = admin.post(f"/knowledge-bases/{kb}/documents", json={"texts": TEXTS[1:]})
    assert second_response.status_code == 202
    second = second_response.json()
    seen = admin.get(f"/knowledge-bases/{kb}/jobs/{second['id']}").json()
    assert seen["state"] == "queued" and seen["waiting_for"] == f"job {first['id']}"
    assert seen["stages"] == []

    done_first, done_second = wait_for(admin, kb, first["id"]), wait_for(admin, kb, second["id"])
    assert done_first["state"] == done_second["state"] == "succeeded"
    assert done_second["started_at"] >= done_first["finished_at"]
    assert done_second["waiting_for"] is None
    # The second saw the first's document: the kb holds both, and its graph was rebuilt over both.
    assert done_first["result"]["counts"]["documents"] == 1
    assert done_second["result"]["counts"]["documents"] == 2
    assert done_second["result"]["counts"] == admin.get(f"/knowledge-bases/{kb}/stats").json()["counts"]


def test_job_lookups_are_checked(admin: httpx.Client, reader: httpx.Client, corpus_kb: str, make_client, server, keys):
    missing = admin.get(f"/knowledge-bases/{corpus_kb}/jobs/job-{'0' * 32}")
    assert missing.status_code == 404 and missing.json()["code"] == "job_not_found"
    assert "deleting the kb deletes them" in missing.json()["detail"]
    malformed = admin.get(f"/knowledge-bases/{corpus_kb}/jobs/job-1'OR'1")
    assert malformed.status_code == 422 and malformed.json()["code"] == "invalid_request"
    assert "1'OR'1" not in malformed.text

    kb = _kb("scope")
    accepted = admin.post(f"/knowledge-bases/{kb}/documents", json={"texts": TEXTS[:1]}).json()
    try:
        wait_for(admin, kb, accepted["id"])
        # A job is found under its own kb only, and a key must be allowed that kb.
        elsewhere = admin.get(f"/knowledge-bases/{corpus_kb}/jobs/{accepted['id']}")
        assert elsewhere.status_code == 404
        assert reader.get(f"/knowledge-bases/{kb}/jobs/{accepted['id']}").status_code == 403
        stranger = make_client(server, keys.stranger)
        assert stranger.get(f"/knowledge-bases/{kb}/jobs").status_code == 403
    finally:
        admin.delete(f"/knowledge-bases/{kb}")


def test_past_the_pending_cap_a_post_is_429(api_settings: Settings, api_keys: ApiKeys, keys, make_client) -> None:
    settings = api_settings.model_copy(update={"api_max_pending_jobs": 1})
    kb = _kb("cap")
    with BackgroundServer(create_app(DriftRAG(settings), api_keys)) as capped:
        client = make_client(capped, keys.manage_all)
        first = client.post(f"/knowledge-bases/{kb}/documents", json={"texts": TEXTS})
        assert first.status_code == 202
        refused = client.post(f"/knowledge-bases/{kb}/documents", json={"texts": TEXTS[:1]})
        assert refused.status_code == 429 and refused.json()["code"] == "too_many_jobs"
        assert int(refused.headers["retry-after"]) > 0
        assert wait_for(client, kb, first.json()["id"])["state"] == "succeeded"
        # Once it is done there is room again.
        assert client.post(f"/knowledge-bases/{kb}/documents", json={"texts": TEXTS[:1]}).status_code == 202
        client.delete(f"/knowledge-bases/{kb}")  # waits for that job: deletes take the same kb lock


async def _lock_is_free(settings: Settings, kb: str) -> bool:
    async with DriftRAG(settings) as rag:
        waits: list[str] = []
        async with rag.kb_lock(kb, on_wait=waits.append):
            pass
        return waits == []


def test_a_job_cut_by_a_shutdown_is_resumed_by_the_next_server(
    api_settings: Settings, api_keys: ApiKeys, keys, make_client, admin: httpx.Client
) -> None:
    kb = _kb("restart")
    try:
        with BackgroundServer(create_app(DriftRAG(api_settings), api_keys)) as first_server:
            client = make_client(first_server, keys.manage_all)
            accepted = client.post(f"/knowledge-bases/{kb}/documents", json={"texts": TEXTS}).json()
            deadline = time.monotonic() + 60
            while client.get(f"/knowledge-bases/{kb}/jobs/{accepted['id']}").json()["state"] == "queued":
                assert time.monotonic() < deadline
                time.sleep(0.02)
        # The shutdown stopped the running job, which released the kb's write lock in Neo4j.
        assert asyncio.run(_lock_is_free(api_settings, kb)), "the stopped job left no lock behind"

        with BackgroundServer(create_app(DriftRAG(api_settings), api_keys)) as second_server:
            client = make_client(second_server, keys.manage_all)
            # Handed back at the shutdown, the job is taken over at once (by this server or another).
            job = wait_for(client, kb, accepted["id"])
            assert job["state"] == "succeeded", job["error"]
            assert job["interrupted"] == 0, "a shutdown is no interruption"
            assert job["result"]["counts"]["documents"] == 2 and job["result"]["failed_chunks"] == []
            assert job["result"]["counts"] == client.get(f"/knowledge-bases/{kb}/stats").json()["counts"]
    finally:
        admin.delete(f"/knowledge-bases/{kb}")


def test_a_job_reports_the_chunks_that_failed(api_settings: Settings, api_keys: ApiKeys, keys, make_client) -> None:
    # The chat model's test double never answers JSON for the chunk about the tide tables.
    chat = ScriptedChatModel(misbehave={"kept the tide tables": "invalid"})
    kb = _kb("failed")
    # The offline fill-in of unusable extractions off: the chunk stays failed, as the job must report.
    strict = api_settings.model_copy(update={"extraction_offline_fallback": False})
    with BackgroundServer(create_app(DriftRAG(strict, chat=chat), api_keys)) as scripted:
        client = make_client(scripted, keys.manage_all)
        accepted = client.post(f"/knowledge-bases/{kb}/documents", json={"texts": TEXTS}).json()
        try:
            job = wait_for(client, kb, accepted["id"])
            assert job["state"] == "succeeded", job["error"]  # the run goes on past a failed chunk
            failed = job["result"]["failed_chunks"]
            assert len(failed) == 1 and failed[0]["error"]
            assert failed == client.get(f"/knowledge-bases/{kb}/stats").json()["failed_chunks"]
            listed = {s["kb"]: s for s in client.get("/knowledge-bases").json()["knowledge_bases"]}
            assert listed[kb]["mode"] == "openai"  # a language model wrote this graph
        finally:
            client.delete(f"/knowledge-bases/{kb}")


class _FailingRAG(DriftRAG):
    """The real engine whose ingestion raises `error` once the job has started."""

    error: Exception = RuntimeError("secret internal state: /etc/driftrag/keys.json")

    async def ingest(self, kb, **kwargs):
        raise self.error


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (RuntimeError("secret internal state: /etc/driftrag/keys.json"), "internal_error"),
        (ModelError("x"), "model_error"),
    ],
)
def test_a_job_that_fails_says_why_without_internals(
    api_settings: Settings, api_keys: ApiKeys, keys, make_client, error: Exception, code: str
) -> None:
    rag = _FailingRAG(api_settings)
    rag.error = error
    kb = _kb("boom")
    with BackgroundServer(create_app(rag, api_keys)) as failing:
        client = make_client(failing, keys.manage_all)
        accepted = client.post(f"/knowledge-bases/{kb}/documents", json={"texts": TEXTS[:1]})
        assert accepted.status_code == 202
        job = wait_for(client, kb, accepted.json()["id"])
    assert job["state"] == "failed" and job["result"] is None
    assert job["error"]["code"] == code
    assert "secret" not in job["error"]["detail"] and "/etc/" not in job["error"]["detail"]
    assert job["finished_at"] is not None


def _waiting_for(client: httpx.Client, kb: str, job_id: str, timeout_s: float = 60) -> str:
    """Poll the job until it says what it waits for; return that."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        job = client.get(f"/knowledge-bases/{kb}/jobs/{job_id}").json()
        if job["waiting_for"] or job["state"] in {"succeeded", "failed"}:
            return job["waiting_for"] or ""
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} said nothing within {timeout_s} s")


async def test_a_job_names_a_dead_lock_it_waits_for_then_carries_its_extraction_estimate(
    admin: httpx.Client, store: Neo4jStore, cleanup: list[str]
) -> None:
    """A lock left by a killed writer (another host's, never renewed): the job says at once whom it waits
    for and when that lock expires, then runs; its record carries the estimate of its extraction."""
    kb = _kb("lease")
    cleanup.append(kb)
    holder = "elsewhere-host:4242:0badcafe"
    await store.write(cy.CREATE_KB_LOCK_CONSTRAINT)
    assert (await KbLock(store, kb, ttl_s=10, owner=holder).try_acquire())[0]
    posted = await asyncio.to_thread(admin.post, f"/knowledge-bases/{kb}/documents", json={"texts": TEXTS})
    accepted = posted.json()
    message = await asyncio.to_thread(_waiting_for, admin, kb, accepted["id"])
    assert f"is being written by another process ({holder})" in message
    assert re.search(r"its lock expires in \d+ s, at \d\d:\d\d:\d\d UTC", message), message

    job = await asyncio.to_thread(wait_for, admin, kb, accepted["id"])
    assert job["state"] == "succeeded", job["error"]
    assert job["waiting_for"] is None, "the wait is over"
    estimate = job["estimate"]
    stored = sum(document["chunks"] for document in job["result"]["documents"])
    assert estimate["chunks"] == stored == job["result"]["extracted_chunks"] > 0
    assert estimate["model_calls"] == 0 and "offline extractive mode" in estimate["calls_basis"]
    assert estimate["seconds_left"] is None or estimate["done"] > 0, "a duration only from a measured rate"
