"""The records of HTTP ingestion jobs in the real Neo4j: only the owner writes, a silent owner's jobs are
claimed by exactly one server, a finished job drops its texts, retention, and the kb's delete."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest

from driftrag.errors import InvalidIdentifierError
from driftrag.models.jobs import JobKey, SavedJob
from driftrag.store import Neo4jStore
from driftrag.store.graph import GraphStore
from driftrag.store.jobs import JobStore

TEXTS = {"Harbour log": "Harbourmaster Ilse Varn lit the lamp at Cinder Point."}


@pytest.fixture
async def jobs(store: Neo4jStore, kb: str) -> AsyncIterator[JobStore]:
    """The job store; the kb's records are deleted at the end, so no server of the session claims them."""
    yield JobStore(store)
    await GraphStore(store).delete_kb(kb)


def _job_id() -> str:
    return f"job-{uuid.uuid4().hex}"


async def _create(jobs: JobStore, kb: str, owner: str = "server-a") -> str:
    job_id = _job_id()
    await jobs.create(kb, job_id, state="queued", record=f'{{"id": "{job_id}"}}', texts=TEXTS, owner=owner)
    return job_id


async def test_only_the_owner_writes_and_a_finished_job_drops_its_texts(
    store: Neo4jStore, jobs: JobStore, kb: str
) -> None:
    job_id = await _create(jobs, kb)

    mine = await jobs.save(kb, job_id, state="running", record="mine", owner="server-a")
    theirs = await jobs.save(kb, job_id, state="failed", record="theirs", owner="server-b")
    assert mine == SavedJob(owned=True, texts_missing=False) and theirs.owned is False
    assert await jobs.get(kb, job_id) == "mine"
    assert await jobs.renew([JobKey(kb=kb, id=job_id)], "server-b") == [JobKey(kb=kb, id=job_id)]
    assert await jobs.renew([JobKey(kb=kb, id=job_id)], "server-a") == []

    await jobs.save(kb, job_id, state="succeeded", record="done", owner="server-a")
    assert await jobs.get(kb, job_id) == "done"
    rows = await store.read("MATCH (j:__IngestJob__ {kb: $kb}) RETURN j.texts AS texts, j.finished_at AS at", kb=kb)
    assert rows[0]["texts"] is None and rows[0]["at"] is not None


async def test_a_silent_owners_job_is_claimed_once_with_its_texts(store: Neo4jStore, jobs: JobStore, kb: str) -> None:
    job_id = await _create(jobs, kb)
    # Just heartbeaten: nobody takes it.
    assert not [c for c in await jobs.claim_orphans("server-b", stale_s=60, limit=100) if c.kb == kb]

    await asyncio.sleep(0.3)
    claims = await asyncio.gather(*(jobs.claim_orphans(f"server-{n}", stale_s=0.2, limit=100) for n in "bcdef"))
    mine = [claim for claimed in claims for claim in claimed if claim.kb == kb]
    assert len(mine) == 1 and mine[0].id == job_id and mine[0].texts == TEXTS
    owner = "server-" + "bcdef"[next(i for i, claimed in enumerate(claims) if any(c.kb == kb for c in claimed))]
    # The old owner learns it lost the job; the new one writes.
    assert (await jobs.save(kb, job_id, state="running", record="old", owner="server-a")).owned is False
    assert (await jobs.save(kb, job_id, state="running", record="new", owner=owner)).owned is True

    # Handed back (a shutdown): stale for everyone at once.
    await jobs.save(kb, job_id, state="queued", record="back", owner=owner, release=True)
    again = [c for c in await jobs.claim_orphans("server-z", stale_s=60, limit=100) if c.kb == kb]
    assert [(c.id, c.record) for c in again] == [(job_id, "back")]


async def test_the_newest_finished_jobs_are_kept_and_the_kb_delete_takes_them(
    store: Neo4jStore, jobs: JobStore, kb: str
) -> None:
    finished = []
    for _ in range(3):
        job_id = await _create(jobs, kb)
        await jobs.save(kb, job_id, state="succeeded", record=job_id, owner="server-a")
        finished.append(job_id)
        await asyncio.sleep(0.01)
    unfinished = await _create(jobs, kb)

    await jobs.prune(kb, keep=2)
    assert sorted(await jobs.of_kb(kb, limit=10)) == sorted([*finished[1:], f'{{"id": "{unfinished}"}}'])

    await GraphStore(store).delete_kb(kb)
    assert await jobs.of_kb(kb, limit=10) == []


async def test_job_ids_are_checked(store: Neo4jStore, jobs: JobStore, kb: str) -> None:
    for hostile in ["job-1'OR'1", "job-" + "0" * 31, "}) DETACH DELETE n //", ""]:
        with pytest.raises(InvalidIdentifierError):
            await jobs.get(kb, hostile)
