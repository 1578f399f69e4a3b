"""Ingestion jobs of the HTTP API: `POST …/documents` answers 202 with a job at once; the job runs in the
server's own task set, not in the request, so a client that disconnects does not stop it.

    jobs = IngestJobs(rag, write_lock=backend.write_lock, max_pending=16)
    jobs.start()                                             # heartbeat; resumes jobs other servers left
    job = await jobs.submit("alice", {"Chapter 1": "…"})     # recorded in Neo4j, queued; runs in the background
    await jobs.get("alice", job.id)                          # stage progress, counts, failed chunks, final state
    await jobs.close()                                       # server shutdown: running jobs are handed back

Jobs of one kb are serialised: a second job waits (state `queued`, `waiting_for` says behind whom) until
the first is done, in this server by the per-kb asyncio lock, across processes by the kb's write lock
in Neo4j (`store/locks.py`).

Jobs are durable: each is an `__IngestJob__` record beside its kb in Neo4j (`store/jobs.py`) with the
submitted texts, written when it is accepted, at each change of state, and with its progress at most
every `SAVE_EVERY_S` (never per event). The server running a job heartbeats it; a server that finds an
unfinished job silent for `kb_lock_ttl_s` (its server died) or handed back (its server shut down) takes
it over and runs the same texts again, which redoes nothing already done: ingestion is checkpointed per
chunk. A job whose server died while it ran is resumed once; the second time it is failed (`interrupted`),
as it may be what stops the servers. `GET …/jobs/{id}` reads the record, so it answers in any server and
across restarts; the last `KEEP_FINISHED_JOBS` finished jobs of each kb are kept, and deleting the kb
deletes them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from driftrag.errors import (
    BackendUnavailableError,
    DriftRAGError,
    InvalidIdentifierError,
    ModelError,
    UnsupportedServerError,
)
from driftrag.facade import DriftRAG
from driftrag.ingestion.loading import InputError
from driftrag.ingestion.requests import DocumentOutcome, IngestionResult, Progress, TextInput
from driftrag.models.estimate import ExtractionEstimate
from driftrag.models.graph import FailedChunk, KbCounts
from driftrag.models.identifiers import JOB_ID_PATTERN, lock_owner
from driftrag.models.jobs import JobKey, JobText
from driftrag.providers.usage import Usage

log = logging.getLogger("driftrag.api")

# What a job ingests: posted texts by title, or uploaded files read already (with their pages or sections).
JobTexts = dict[str, str | TextInput]
# Finished jobs kept per kb for their GET, oldest dropped first: a bound on the records, not a policy.
KEEP_FINISHED_JOBS = 200
# Progress reaches the job's record at most this often; state changes are written at once.
SAVE_EVERY_S = 1.0
# A job whose server died while running it is resumed this many times, then failed.
MAX_INTERRUPTIONS = 1

JobState = Literal["queued", "running", "succeeded", "failed"]
FINISHED_STATES: frozenset[str] = frozenset({"succeeded", "failed"})


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
        description="invalid_input, backend_unavailable, model_error, internal_error, interrupted (the servers "
        "running it stopped twice, or its texts were lost)"
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
    warnings: list[str] = Field(
        default_factory=list,
        description="What the run must not pass over, e.g. more than half of the chunks got no usable model "
        "extraction (no entity, or the offline extractor filled in).",
    )

    @classmethod
    def from_result(cls, result: IngestionResult) -> IngestOutcome:
        return cls(
            documents=result.documents,
            counts=result.counts,
            failed_chunks=result.failed_chunks,
            extracted_chunks=result.extracted_chunks,
            usage=result.usage,
            seconds_per_stage=result.seconds_per_stage,
            warnings=result.warnings,
        )


class IngestJob(_Model):
    """One ingestion job as `GET …/jobs/{job_id}` returns it."""

    id: str = Field(description="job-… (32 hex digits).")
    kb: str
    state: JobState = Field(
        description="queued (waiting for its turn on the kb, or for a server to resume it), running, then "
        "succeeded or failed."
    )
    texts: int = Field(description="Texts in the request.")
    waiting_for: str | None = Field(
        default=None,
        description="While it waits for its turn: the job of this server ahead of it (queued), or the process "
        "holding the kb's write lock in Neo4j, with when that lock expires (running).",
    )
    estimate: ExtractionEstimate | None = Field(
        default=None,
        description="Once its chunks are stored: the extraction's chunks, model calls and, when measured, time "
        "left (the latest estimate, with its basis).",
    )
    stage: str | None = Field(default=None, description="The stage the last progress event came from.")
    stages: list[StageProgress] = Field(
        default_factory=list, description="Each stage seen so far, in order, with its last (done, total)."
    )
    events: int = Field(default=0, description="Progress events received so far.")
    interrupted: int = Field(
        default=0,
        description="Times the server running the job died before it finished (a shutdown hands it back: no count).",
    )
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    result: IngestOutcome | None = Field(default=None, description="Once succeeded.")
    error: JobError | None = Field(default=None, description="Once failed.")


class JobList(_Model):
    kb: str
    jobs: list[IngestJob] = Field(
        description="The kb's jobs (the last 200 finished ones and every unfinished one), newest first."
    )


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


def _stored(texts: JobTexts) -> dict[str, JobText]:
    return {title: text if isinstance(text, str) else text.model_dump(mode="json") for title, text in texts.items()}


def _restored(texts: dict[str, JobText]) -> JobTexts:
    return {title: text if isinstance(text, str) else TextInput.model_validate(text) for title, text in texts.items()}


class _Running:
    """A job this server runs: its mutable state while its task runs; `snapshot()` is what GET returns."""

    def __init__(self, job: IngestJob, texts: JobTexts | None) -> None:
        self.job = job
        self.texts = texts  # dropped once the job ends: bodies can be large
        self.stages: OrderedDict[str, StageProgress] = OrderedDict((s.stage, s) for s in job.stages)
        self.task: asyncio.Task[None] | None = None
        self.dirty = False  # progress not yet in the record
        self.saving = asyncio.Lock()  # one write of the record at a time, each of the latest snapshot

    @property
    def key(self) -> JobKey:
        return JobKey(kb=self.job.kb, id=self.job.id)

    def progress(self, progress: Progress) -> None:
        self.stages[progress.stage] = StageProgress(**progress.model_dump(exclude={"estimate"}))
        if progress.estimate is not None:
            self.job.estimate = progress.estimate
        self.job.waiting_for = None  # work goes on: a wait for the kb's lock is over
        self.job.stage = progress.stage
        self.job.events += 1
        self.dirty = True

    def waiting(self, message: str) -> None:
        self.job.waiting_for = message
        self.dirty = True

    def snapshot(self, **update: object) -> IngestJob:
        return self.job.model_copy(update={"stages": list(self.stages.values()), **update}, deep=True)


class TooManyJobsError(Exception):
    """More jobs queued or running than the server takes (`api_max_pending_jobs`)."""


class IngestJobs:
    """The ingestion jobs of one API server (held by the app, not by the module)."""

    def __init__(self, rag: DriftRAG, *, write_lock: Callable[[str], asyncio.Lock], max_pending: int) -> None:
        self._rag = rag
        self._store = rag.stores.jobs
        self._write_lock = write_lock
        self._max_pending = max_pending
        self._owner = lock_owner()
        # Silent this long, a job's server is taken for dead: the same expiry as the kb's write lock.
        self._stale_s = rag.settings.kb_lock_ttl_s
        # The jobs this server runs, and finished ones whose last write has not reached Neo4j yet.
        self._jobs: OrderedDict[str, _Running] = OrderedDict()
        # The kb's current holder in this server, to say whom a queued job waits for.
        self._holders: dict[str, str] = {}
        self._keeper: asyncio.Task[None] | None = None

    def pending(self) -> int:
        return sum(1 for running in self._jobs.values() if running.job.state not in FINISHED_STATES)

    def start(self) -> None:
        """Start the keeper: progress writes, heartbeats, and taking over the jobs of servers gone."""
        self._keeper = asyncio.create_task(self._keep(), name="ingest-jobs-keeper")

    async def submit(self, kb: str, texts: JobTexts) -> IngestJob:
        """Record an ingestion of `texts` into `kb` and start its task; raises TooManyJobsError when full.
        A `TextInput` value is a file read already (an upload), kept with its pages or sections."""
        if self.pending() >= self._max_pending:
            raise TooManyJobsError(
                f"{self._max_pending} ingestion jobs are already queued or running on this server; retry later"
            )
        job = IngestJob(id=f"job-{uuid.uuid4().hex}", kb=kb, state="queued", texts=len(texts), created_at=_now())
        # Accepted only once recorded: a 202 is a job another server can resume.
        await self._store.create(
            kb, job.id, state=job.state, record=job.model_dump_json(), texts=_stored(texts), owner=self._owner
        )
        return self._launch(_Running(job, texts)).snapshot()

    async def get(self, kb: str, job_id: str) -> IngestJob | None:
        running = self._jobs.get(job_id)
        if running is not None:
            return running.snapshot() if running.job.kb == kb else None
        record = await self._store.get(kb, job_id)
        return IngestJob.model_validate_json(record) if record is not None else None

    async def of_kb(self, kb: str) -> list[IngestJob]:
        stored = await self._store.of_kb(kb, limit=KEEP_FINISHED_JOBS + self._max_pending)
        jobs = {job.id: job for job in map(IngestJob.model_validate_json, stored)}
        jobs.update({r.job.id: r.snapshot() for r in self._jobs.values() if r.job.kb == kb})
        return sorted(jobs.values(), key=lambda job: (job.created_at, job.id), reverse=True)

    async def close(self) -> None:
        """Stop the keeper; cancel the jobs still queued or running and wait for them (their locks are
        released, their records handed back for the next server to resume)."""
        if self._keeper is not None:
            self._keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._keeper
        tasks = [running.task for running in self._jobs.values() if running.task is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def _launch(self, running: _Running) -> _Running:
        self._jobs[running.job.id] = running
        running.task = asyncio.create_task(self._run(running), name=running.job.id)
        return running

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
                started = _now()
                try:
                    # Recorded as running before any reader can see it so: a server that dies from then on
                    # is counted as an interruption by the one that takes the job over.
                    await self._save_quietly(running, state="running", started_at=started)
                    job.state, job.started_at = "running", started
                    result = await self._rag.ingest(
                        job.kb, texts=running.texts, on_progress=running.progress, on_lock_wait=running.waiting
                    )
                finally:
                    self._holders.pop(job.kb, None)
            job.result = IngestOutcome.from_result(result)
            job.state = "succeeded"
            for warning in job.result.warnings:
                log.warning("ingestion job %s of %r: %s", job.id, job.kb, warning)
        except asyncio.CancelledError:
            # A shutdown: the job goes back to the queue of every server, to be resumed, not lost.
            if self._jobs.get(job.id) is running:
                job.state, job.waiting_for = "queued", "a server to resume it (the one running it shut down)"
                with contextlib.suppress(Exception):
                    await asyncio.shield(self._save(running, release=True))
            raise
        except Exception as exc:
            job.state = "failed"
            job.error = job_error(exc)
            if job.error.code == "internal_error":
                log.error("ingestion job %s failed", job.id, exc_info=exc)
            else:
                log.warning("ingestion job %s failed: %s", job.id, exc)
        job.waiting_for = None
        await self._finish(running)

    async def _finish(self, running: _Running) -> None:
        running.job.finished_at = _now()
        running.texts = None
        running.dirty = True
        if await self._save_quietly(running):
            with contextlib.suppress(BackendUnavailableError):
                await self._store.prune(running.job.kb, keep=KEEP_FINISHED_JOBS)

    async def _save(self, running: _Running, *, release: bool = False, **update: object) -> None:
        """Write the job's record (with `update` applied to it); a job another server took over is stopped
        here and forgotten."""
        async with running.saving:
            running.dirty = False
            job = running.snapshot(**update)
            try:
                saved = await self._store.save(
                    job.kb, job.id, state=job.state, record=job.model_dump_json(), owner=self._owner, release=release
                )
            except BaseException:
                running.dirty = True
                raise
            if saved.texts_missing and running.texts is not None and not release:
                await self._store.keep_texts(job.kb, job.id, _stored(running.texts), self._owner)
        if not saved.owned:
            self._taken_over(running)
        elif job.state in FINISHED_STATES and not running.dirty:
            self._jobs.pop(job.id, None)  # the record answers its GET from now on

    async def _save_quietly(self, running: _Running, **update: object) -> bool:
        """`_save`, a lost Neo4j logged: the keeper writes the record again once it is back."""
        try:
            await self._save(running, **update)
            return True
        except BackendUnavailableError as exc:
            log.warning("could not record ingestion job %s: %s", running.job.id, exc)
            return False

    def _taken_over(self, running: _Running) -> None:
        log.warning("ingestion job %s was taken over by another server; stopping it here", running.job.id)
        self._jobs.pop(running.job.id, None)
        if running.task is not None and running.job.state not in FINISHED_STATES:
            running.task.cancel()

    async def _keep(self) -> None:
        next_beat, unavailable = 0.0, False
        while True:
            try:
                for running in [r for r in self._jobs.values() if r.dirty]:
                    await self._save(running)
                if time.monotonic() >= next_beat:
                    await self._heartbeat()
                    await self._adopt()
                    next_beat = time.monotonic() + self._stale_s / 3
                unavailable = False
            except BackendUnavailableError as exc:
                if not unavailable:  # once per outage, not every second
                    log.warning("ingestion jobs not recorded while Neo4j is unavailable: %s", exc)
                unavailable = True
            except Exception:
                log.exception("the ingestion jobs' keeper failed; trying again")
            await asyncio.sleep(SAVE_EVERY_S)

    async def _heartbeat(self) -> None:
        unfinished = [r for r in self._jobs.values() if r.job.state not in FINISHED_STATES]
        lost = {key.id for key in await self._store.renew([r.key for r in unfinished], self._owner)}
        for running in unfinished:
            if running.job.id in lost:
                self._taken_over(running)

    async def _adopt(self) -> None:
        """Take over the unfinished jobs of servers gone silent, as many as this one has room for."""
        claimed = await self._store.claim_orphans(
            self._owner, stale_s=self._stale_s, limit=self._max_pending - self.pending()
        )
        for orphan in claimed:
            texts = None
            try:
                job = IngestJob.model_validate_json(orphan.record)
                texts = _restored(orphan.texts) if orphan.texts is not None else None
                unreadable = False
            except ValidationError:  # written by another version: failed, not retried at every scan
                job = IngestJob(id=orphan.id, kb=orphan.kb, state="running", texts=0, created_at=_now())
                unreadable = True
            died_running = job.state == "running"  # a shutdown hands its jobs back as queued
            job.interrupted += died_running
            job.state, job.waiting_for = "queued", None
            running = _Running(job, texts)
            running.dirty = True  # the record still says how the job was when its server went
            if unreadable or orphan.texts is None or job.interrupted > MAX_INTERRUPTIONS:
                job.state = "failed"
                if unreadable:
                    detail = "its record could not be read (another version of driftrag wrote it); post the texts again"
                elif orphan.texts is None:
                    detail = "its texts were not kept (its knowledge base was deleted while it ran); post them again"
                else:
                    detail = (
                        f"the server running it stopped {job.interrupted} times before it finished, so it is not "
                        "resumed again (it may be what stops the server); the work done is kept: post the same "
                        "texts again to go on"
                    )
                job.error = JobError(code="interrupted", detail=detail)
                log.warning("ingestion job %s of %r failed: %s", job.id, job.kb, job.error.detail)
                self._jobs[job.id] = running
                await self._finish(running)
                continue
            log.info(
                "resuming ingestion job %s of %r (its server %s)", job.id, job.kb, "died" if died_running else "stopped"
            )
            self._launch(running)


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
