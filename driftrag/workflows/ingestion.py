"""`IngestionWorkflow`: files or texts into a knowledge base, as thin steps over `driftrag.ingestion`.

    workflow = IngestionWorkflow(deps)
    handler = workflow.run(start_event=IngestStart(request=IngestRequest(kb="alice", paths=[...])))
    async for event in handler.stream_events():
        if isinstance(event, IngestProgress): print(event.progress)
    result: IngestionResult = await handler

Stages: load -> store documents -> extract (checkpointed per chunk; chunk vectors beside it) -> entity
layer (merge, summaries) -> communities and reports (the entity layer written and its vectors made
beside the reports, the community vectors beside the communities' write) -> the embeddings still
missing. Progress events stream (stage, done, total).

Two halves, which `DriftRAG.ingest` runs under different locks (`driftrag.store.locks`):
`IngestStart(request=…, rebuild=False)` is the per-document half (documents, chunks, extraction
checkpoints, chunk vectors; the kb stays stale), which several processes may run at once on different
documents; `IngestStart(kb=…)` without a request is the kb-wide half (entity merge, summaries,
communities, reports, entity and report vectors), run once when the kb is stale. The default, a request
with `rebuild=True`, runs both.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator

from pydantic import Field
from workflows import Context, Workflow, step
from workflows.events import Event, StartEvent, StopEvent

from driftrag.ingestion import indexing
from driftrag.ingestion.deps import IngestionDeps
from driftrag.ingestion.requests import DocumentOutcome, IngestionResult, IngestRequest, Progress
from driftrag.models.graph import ExtractConfig, MergeResult
from driftrag.store.identifiers import validate_kb_id

DEFAULT_TIMEOUT_S = 6 * 3600.0
CHUNK_VECTORS_STAGE = "chunk embeddings (in the background)"


@contextlib.contextmanager
def _cancelled_on_error(background: asyncio.Future | None) -> Iterator[None]:
    """A step that fails cancels the run's background work (the chunk vectors), which no step would await."""
    try:
        yield
    except BaseException:
        if background is not None:
            background.cancel()
        raise


class IngestStart(StartEvent):
    request: IngestRequest | None = None
    kb: str | None = Field(default=None, description="Without a request: rebuild this kb's derived layers.")
    rebuild: bool = Field(default=True, description="False: the per-document half only (the kb stays stale).")
    extract_config: ExtractConfig | None = None


class IngestProgress(Event):
    progress: Progress


class DocumentsStored(Event):
    kb: str
    documents: list[DocumentOutcome]
    rebuild: bool = True


class ChunksExtracted(Event):
    kb: str
    documents: list[DocumentOutcome]
    extracted: int
    rebuild: bool = True
    # The chunk vectors of this run's documents, made in the background (awaited by the last step), and
    # the lock their writes share with the entity layer's (both touch the chunk nodes).
    chunk_vectors: asyncio.Future[int] | None = None
    chunk_writes: asyncio.Lock | None = None


class EntityLayerBuilt(Event):
    kb: str
    documents: list[DocumentOutcome]
    extracted: int
    rebuild: bool = True
    chunk_vectors: asyncio.Future[int] | None = None
    chunk_writes: asyncio.Lock | None = None
    merged: MergeResult | None
    summaries: int


class CommunitiesBuilt(Event):
    kb: str
    documents: list[DocumentOutcome]
    extracted: int
    rebuild: bool = True
    chunk_vectors: asyncio.Future[int] | None = None
    chunk_writes: asyncio.Lock | None = None
    merged: MergeResult | None
    summaries: int
    reports: int
    unknown_report_citations: int
    entities_embedded: int
    communities_embedded: int


class IngestionWorkflow(Workflow):
    def __init__(self, deps: IngestionDeps, *, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        super().__init__(timeout=timeout)
        self._deps = deps
        self._timings: dict[str, float] = {}
        self._usage_start = deps.usage.snapshot()

    def _progress(self, ctx: Context):
        async def report(progress: Progress) -> None:
            ctx.write_event_to_stream(IngestProgress(progress=progress))

        return report

    def _time(self, stage: str, started: float) -> None:
        self._timings[stage] = round(self._timings.get(stage, 0.0) + time.monotonic() - started, 3)

    @step
    async def store_documents(self, ctx: Context, ev: IngestStart) -> DocumentsStored:
        started = time.monotonic()
        self._timings = {}  # a workflow object may run several times
        self._usage_start = self._deps.usage.snapshot()
        if ev.request is None:
            if ev.kb is None:
                raise ValueError("IngestStart needs a request, or the kb whose derived layers to rebuild")
            await self._deps.stores.database.ensure_schema(self._deps.embedding_dimension)
            return DocumentsStored(kb=validate_kb_id(ev.kb), documents=[])
        kb = ev.request.kb
        # The tokenizer loads in a thread (up to a second, the first time) while the schema is checked.
        tokenizer = asyncio.ensure_future(indexing.load_tokenizer())
        try:
            documents = await indexing.load_documents(
                ev.request, self._deps.settings.max_file_mb, self._deps.tasks.document_check
            )
            await self._deps.stores.database.ensure_schema(self._deps.embedding_dimension)
            if ev.extract_config is not None:
                await self._deps.graph.set_extract_config(kb, ev.extract_config)
        finally:
            await tokenizer
        outcomes = await indexing.store_documents(self._deps, kb, documents, self._progress(ctx))
        if any(outcome.status != "unchanged" for outcome in outcomes):
            await self._deps.graph.mark_stale(kb, True)
            await self._deps.graph.set_profile(kb, self._deps.profile)  # the mode and embedder of what changed
        self._time("documents", started)
        return DocumentsStored(kb=kb, documents=outcomes, rebuild=ev.rebuild)

    @step
    async def extract(self, ctx: Context, ev: DocumentsStored) -> ChunksExtracted:
        started = time.monotonic()
        config = await self._deps.graph.extract_config(ev.kb) or ExtractConfig()
        ids = [outcome.document_id for outcome in ev.documents]
        chunk_writes = asyncio.Lock()

        async def chunk_vectors() -> int:
            # In the background until the last step: model calls leave room for it, and nothing before
            # the last step needs chunk vectors (with an embedder on the local cores: until extraction ends).
            # Only this run's documents: a worker of a split ingestion leaves the others' chunks alone.
            if not ids:
                return 0
            chunk_started = time.monotonic()
            embedded, _ = await indexing.embed_chunks(
                self._deps, ev.kb, self._progress(ctx), ids, write_lock=chunk_writes
            )
            self._time(CHUNK_VECTORS_STAGE, chunk_started)
            return embedded

        background = asyncio.ensure_future(chunk_vectors())
        try:
            extracted = await indexing.extract_pending(self._deps, ev.kb, ids, config, self._progress(ctx))
            if extracted:
                await self._deps.graph.mark_stale(ev.kb, True)
            if self._deps.embedder_on_local_cpu:
                await asyncio.shield(background)  # the last step reads its result
        except BaseException:
            background.cancel()
            raise
        self._time("extract", started)
        return ChunksExtracted(
            kb=ev.kb,
            documents=ev.documents,
            extracted=extracted,
            rebuild=ev.rebuild,
            chunk_vectors=background,
            chunk_writes=chunk_writes,
        )

    @step
    async def build_entity_layer(self, ctx: Context, ev: ChunksExtracted) -> EntityLayerBuilt:
        started = time.monotonic()
        merged, summaries = None, 0
        with _cancelled_on_error(ev.chunk_vectors):
            if ev.rebuild and await self._deps.graph.is_stale(ev.kb):
                merged, summaries = await indexing.derive_entity_layer(self._deps, ev.kb, self._progress(ctx))
        self._time("entities", started)
        return EntityLayerBuilt(**ev.model_dump(), merged=merged, summaries=summaries)

    @step
    async def build_communities(self, ctx: Context, ev: EntityLayerBuilt) -> CommunitiesBuilt:
        started = time.monotonic()
        reports = unknown = entities_embedded = communities_embedded = 0
        if ev.merged is not None:
            # The entity layer is written, and its vectors made, while the reports are generated; the
            # community vectors are requested while the communities are written.
            with _cancelled_on_error(ev.chunk_vectors):
                reports, unknown, entity_vectors, community_vectors = await indexing.rebuild_communities(
                    self._deps, ev.kb, ev.merged, self._progress(ctx), chunk_writes=ev.chunk_writes
                )
            entities_embedded, communities_embedded = entity_vectors[0], community_vectors[0]
        self._time("communities", started)
        return CommunitiesBuilt(
            **ev.model_dump(),
            reports=reports,
            unknown_report_citations=unknown,
            entities_embedded=entities_embedded,
            communities_embedded=communities_embedded,
        )

    @step
    async def embed(self, ctx: Context, ev: CommunitiesBuilt) -> StopEvent:
        started = time.monotonic()
        # First the background chunk vectors: what is missing after them is embedded again below.
        chunks_embedded = await ev.chunk_vectors if ev.chunk_vectors is not None else 0
        embedded: dict[str, int] = {}
        if ev.merged is not None:
            embedded = await indexing.embed_missing(self._deps, ev.kb, ev.merged, self._progress(ctx))
            embedded["chunk"] += chunks_embedded
            embedded["entity"] += ev.entities_embedded
            embedded["community"] += ev.communities_embedded
            if not embedded["failed"]:  # else the kb stays stale: the next run embeds what is missing
                await self._deps.graph.mark_stale(ev.kb, False)
        elif not ev.rebuild:  # the per-document half: its chunk vectors (made in the background); retry what failed
            ids = [outcome.document_id for outcome in ev.documents]
            retried, failed = (
                await indexing.embed_chunks(self._deps, ev.kb, self._progress(ctx), ids) if ids else (0, 0)
            )
            embedded = {"chunk": chunks_embedded + retried, "failed": failed}
        self._time("embeddings", started)
        graph = self._deps.graph
        counts, failed_chunks, stale = await asyncio.gather(
            graph.counts(ev.kb), graph.failed_chunks(ev.kb), graph.is_stale(ev.kb)
        )
        result = IngestionResult(
            kb=ev.kb,
            documents=ev.documents,
            counts=counts,
            extracted_chunks=ev.extracted,
            failed_chunks=failed_chunks,
            graph_rebuilt=ev.merged is not None,
            stale=stale,
            summaries_generated=ev.summaries,
            reports_generated=ev.reports,
            unknown_report_citations=ev.unknown_report_citations,
            embedded=embedded,
            usage=self._deps.usage.since(self._usage_start),
            seconds_per_stage=dict(self._timings),
        )
        return StopEvent(result=result)
