"""The records of HTTP ingestion jobs in Neo4j (`store/cypher/jobs.py`), so a job outlives its server.

The store holds what the API layer gives it (the job as JSON, the submitted texts) and knows who owns
each unfinished job: the server that heartbeats it. A server silent for longer than the stale time
(dead, or shut down and handed its jobs back) loses them to whichever server claims them first.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from driftrag.models.identifiers import validate_job_id, validate_kb_id
from driftrag.models.jobs import ClaimedJob, JobKey, JobText, SavedJob
from driftrag.store.cypher import jobs as cy
from driftrag.store.neo4j_store import Neo4jStore


class JobStore:
    def __init__(self, store: Neo4jStore) -> None:
        self._store = store

    async def create(
        self, kb: str, job_id: str, *, state: str, record: str, texts: dict[str, JobText], owner: str
    ) -> None:
        await self._store.write(
            cy.CREATE_JOB,
            kb=validate_kb_id(kb),
            id=validate_job_id(job_id),
            state=state,
            record=record,
            texts=json.dumps(texts, ensure_ascii=False),
            owner=owner,
        )

    async def save(
        self, kb: str, job_id: str, *, state: str, record: str, owner: str, release: bool = False
    ) -> SavedJob:
        """Write the job's record and heartbeat (a finished state drops its texts); only its owner writes."""
        rows = await self._store.write(
            cy.SAVE_JOB,
            kb=validate_kb_id(kb),
            id=validate_job_id(job_id),
            state=state,
            record=record,
            owner=owner,
            release=release,
        )
        return SavedJob(**rows[0])

    async def keep_texts(self, kb: str, job_id: str, texts: dict[str, JobText], owner: str) -> None:
        await self._store.write(
            cy.KEEP_JOB_TEXTS,
            kb=validate_kb_id(kb),
            id=validate_job_id(job_id),
            texts=json.dumps(texts, ensure_ascii=False),
            owner=owner,
        )

    async def renew(self, jobs: Sequence[JobKey], owner: str) -> list[JobKey]:
        """Heartbeat `jobs`; returns those whose record another server owns now."""
        if not jobs:
            return []
        rows = await self._store.write(
            cy.RENEW_JOBS, jobs=[{"kb": validate_kb_id(j.kb), "id": validate_job_id(j.id)} for j in jobs], owner=owner
        )
        return [JobKey(kb=row["kb"], id=row["id"]) for row in rows if row["owner"] != owner]

    async def claim_orphans(self, owner: str, *, stale_s: float, limit: int) -> list[ClaimedJob]:
        """Take over at most `limit` unfinished jobs whose server was silent for `stale_s`, oldest first."""
        if limit < 1:
            return []
        rows = await self._store.write(cy.CLAIM_ORPHANED_JOBS, owner=owner, stale_ms=int(stale_s * 1000), limit=limit)
        return [
            ClaimedJob(
                kb=row["kb"],
                id=row["id"],
                record=row["record"],
                texts=json.loads(row["texts"]) if row["texts"] is not None else None,
            )
            for row in rows
        ]

    async def get(self, kb: str, job_id: str) -> str | None:
        """The job's record (JSON), or None."""
        rows = await self._store.read(cy.MATCH_JOB, kb=validate_kb_id(kb), id=validate_job_id(job_id))
        return rows[0]["record"] if rows else None

    async def of_kb(self, kb: str, *, limit: int) -> list[str]:
        """The kb's job records (JSON), newest first."""
        rows = await self._store.read(cy.MATCH_JOBS, kb=validate_kb_id(kb), limit=limit)
        return [row["record"] for row in rows]

    async def prune(self, kb: str, *, keep: int) -> None:
        """Delete the kb's finished jobs but the `keep` newest."""
        await self._store.write(cy.PRUNE_FINISHED_JOBS, kb=validate_kb_id(kb), keep=keep)
