"""Ingestion jobs of the HTTP API: `POST …/documents` answers 202 with a job at once; the job runs in the
server's own task set, not in the request, so a client that disconnects does not stop it.

    jobs = IngestJobs(rag, write_lock=backend.write_lock, max_pending=16)
    job = jobs.submit("alice", {"Chapter 1": "…"})     # queued; runs in the background
    jobs.get("alice", job.id)                          # stage progress, counts, failed chunks, final state
    await jobs.close()                                 # server shutdown: running jobs are cancelled

Jobs of one kb are serialised: a second job waits (state `queued`, `waiting_for` says behind whom) until
the first is done, in this server by the per-kb asyncio lock, across processes by the kb's write lock
in Neo4j (`store/locks.py`). Jobs live in this object, in memory: a server restart loses them (their GET
answers 404), while the ingestion work itself is checkpointed per chunk in Neo4j, so posting the same
texts again resumes and re-does nothing already done.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import uuid
from collections import OrderedDict
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from driftrag.errors import (
    BackendUnavailableError,
    DriftRAGError,
    InvalidIdentifierError,
    ModelError,
    UnsupportedServerError,
)
from driftrag.facade import DriftRAG
from driftrag.ingestion.loading import InputError
from driftrag.ingestion.requests import DocumentOutcome, IngestionResult, Progress
from driftrag.models.graph import FailedChunk, KbCounts
from driftrag.providers.usage import Usage

log = logging.getLogger("driftrag.api")

JOB_ID_PATTERN = re.compile(r"^job-[0-9a-f]{32}$")
# Finished jobs kept for their GET, per server, oldest dropped first: a bound on memory, not a policy.
KEEP_FINISHED_JOBS = 200

JobState = Literal["queued", "running", "succeeded", "failed", "cancelled"]
FINISHED_STATES: frozenset[str] = frozenset({"succeeded", "failed", "cancelled"})


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StageProgress(_Model):
    """The last progress event of one stage of the ingestion workflow."""

    stage: str = Field(description="documents, extract, summarize, reports, embed-chunk, embed-entity, …")
    done: int
    total: int
    message: str = ""


class JobError(_Model):
    code: str = Field(
        description="invalid_input, backend_unavailable, model_error, cancelled (server shutdown), internal_error"
    )
    detail: str


class IngestOutcome(_Model):
    """What a finished ingestion did: the kb's counts afterwards, and the chunks that failed."""

    documents: list[DocumentOutcome]
    counts: KbCounts
    failed_chunks: list[FailedChunk] = Field(description="Chunks whose extraction failed; the rest was ingested.")
    extracted_chunks: int
    usage: Usage
    seconds_per_stage: dict[str, float]

    @classmethod
    def from_result(cls, result: IngestionResult) -> IngestOutcome:
        return cls(
            documents=result.documents,
            counts=result.counts,
            failed_chunks=result.failed_chunks,
            extracted_chunks=result.extracted_chunks,
            usage=result.usage,
            seconds_per_stage=result.seconds_per_stage,
        )


class IngestJob(_Model):
    """One ingestion job as `GET …/jobs/{job_id}` returns it."""

    id: str = Field(description="job-… (32 hex digits).")
    kb: str
    state: JobState = Field(
        description="queued (waiting for its turn on the kb), running, then succeeded, failed or cancelled."
    )
    texts: int = Field(description="Texts in the request.")
    waiting_for: str | None = Field(
        default=None, description="While queued: the job or process that holds the kb's write lock."
    )
    stage: str | None = Field(default=None, description="The stage the last progress event came from.")
    stages: list[StageProgress] = Field(
        default_factory=list, description="Each stage seen so far, in order, with its last (done, total)."
    )
    events: int = Field(default=0, description="Progress events received so far.")
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    result: IngestOutcome | None = Field(default=None, description="Once succeeded.")
    error: JobError | None = Field(default=None, description="Once failed or cancelled.")


class JobList(_Model):
    kb: str
    jobs: list[IngestJob] = Field(description="The kb's jobs this server holds, newest first.")


def _now() -> datetime:
    return datetime.now(UTC)


def job_error(exc: BaseException) -> JobError:
    """The error a failed job reports; as the synchronous routes, it names no host or internal detail."""
    if isinstance(exc, InputError | InvalidIdentifierError):
        return JobError(code="invalid_input", detail=str(exc))
    if isinstance(exc, BackendUnavailableError | UnsupportedServerError):
        return JobError(code="backend_unavailable", detail="the graph backend (Neo4j) became unavailable")
    if isinstance(exc, ModelError):
        return JobError(code="model_error", detail="the language model failed after its retries")
    if isinstance(exc, DriftRAGError):
        return JobError(code="invalid_input", detail=str(exc))
    return JobError(code="internal_error", detail="internal error; the server log has the details")


class _Running:
    """A job's mutable state while its task runs; `snapshot()` is what GET returns."""

    def __init__(self, kb: str, texts: dict[str, str]) -> None:
        self.job = IngestJob(id=f"job-{uuid.uuid4().hex}", kb=kb, state="queued", texts=len(texts), created_at=_now())
        self.texts: dict[str, str] | None = texts  # dropped once the job ends: bodies can be large
        self.stages: OrderedDict[str, StageProgress] = OrderedDict()
        self.task: asyncio.Task[None] | None = None

    def progress(self, progress: Progress) -> None:
        self.stages[progress.stage] = StageProgress(**progress.model_dump())
        self.job.stage = progress.stage
        self.job.events += 1

    def waiting(self, message: str) -> None:
        self.job.waiting_for = message

    def snapshot(self) -> IngestJob:
        return self.job.model_copy(update={"stages": list(self.stages.values())}, deep=True)


class TooManyJobsError(Exception):
    """More jobs queued or running than the server takes (`api_max_pending_jobs`)."""


class IngestJobs:
    """The ingestion jobs of one API server (held by the app, not by the module)."""

    def __init__(self, rag: DriftRAG, *, write_lock: Callable[[str], asyncio.Lock], max_pending: int) -> None:
        self._rag = rag
        self._write_lock = write_lock
        self._max_pending = max_pending
        self._jobs: OrderedDict[str, _Running] = OrderedDict()
        # The kb's current holder in this server, to say whom a queued job waits for.
        self._holders: dict[str, str] = {}

    def pending(self) -> int:
        return sum(1 for running in self._jobs.values() if running.job.state not in FINISHED_STATES)

    def submit(self, kb: str, texts: dict[str, str]) -> IngestJob:
        """Queue an ingestion of `texts` into `kb` and start its task; raises TooManyJobsError when full."""
        if self.pending() >= self._max_pending:
            raise TooManyJobsError(
                f"{self._max_pending} ingestion jobs are already queued or running on this server; retry later"
            )
        running = _Running(kb, texts)
        self._jobs[running.job.id] = running
        running.task = asyncio.create_task(self._run(running), name=running.job.id)
        self._forget_old()
        return running.snapshot()

    def get(self, kb: str, job_id: str) -> IngestJob | None:
        running = self._jobs.get(job_id)
        return running.snapshot() if running is not None and running.job.kb == kb else None

    def of_kb(self, kb: str) -> list[IngestJob]:
        return [running.snapshot() for running in reversed(self._jobs.values()) if running.job.kb == kb]

    async def close(self) -> None:
        """Cancel the jobs still queued or running and wait for them (their locks are released)."""
        tasks = [running.task for running in self._jobs.values() if running.task is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self, running: _Running) -> None:
        job = running.job
        lock = self._write_lock(job.kb)
        try:
            if lock.locked():
                holder = self._holders.get(job.kb)
                running.waiting(f"job {holder}" if holder else "another request writing this knowledge base")
            async with lock:
                self._holders[job.kb] = job.id
                job.waiting_for = None
                job.state, job.started_at = "running", _now()
                try:
                    result = await self._rag.ingest(
                        job.kb, texts=running.texts, on_progress=running.progress, on_lock_wait=running.waiting
                    )
                finally:
                    self._holders.pop(job.kb, None)
            job.result = IngestOutcome.from_result(result)
            job.state = "succeeded"
        except asyncio.CancelledError:
            job.state = "cancelled"
            job.error = JobError(code="cancelled", detail="the server shut down before the job finished")
            raise
        except Exception as exc:
            job.state = "failed"
            job.error = job_error(exc)
            if job.error.code == "internal_error":
                log.error("ingestion job %s failed", job.id, exc_info=exc)
            else:
                log.warning("ingestion job %s failed: %s", job.id, exc)
        finally:
            job.finished_at = _now()
            job.waiting_for = None
            running.texts = None

    def _forget_old(self) -> None:
        finished = [job_id for job_id, running in self._jobs.items() if running.job.state in FINISHED_STATES]
        for job_id in finished[: max(0, len(finished) - KEEP_FINISHED_JOBS)]:
            del self._jobs[job_id]


__all__ = [
    "JOB_ID_PATTERN",
    "IngestJob",
    "IngestJobs",
    "IngestOutcome",
    "JobList",
    "StageProgress",
    "TooManyJobsError",
    "job_error",
]
