"""`IngestionWorkflow`: files or texts into a knowledge base, as thin steps over `driftrag.ingestion`.

    workflow = IngestionWorkflow(deps)
    handler = workflow.run(start_event=IngestStart(request=IngestRequest(kb="alice", paths=[...])))
    async for event in handler.stream_events():
        if isinstance(event, IngestProgress): print(event.progress)
    result: IngestionResult = await handler

Stages: load -> store documents -> extract (checkpointed per chunk; chunk vectors beside it; the kb-wide
half also asks again for the chunks whose extraction failed) -> entity layer, communities and reports
in one step (communities detected while the summaries are made, each report started once its own
members' summaries exist, the entity layer written and its vectors made beside the reports, the
community vectors requested as soon as the last report exists) -> the embeddings still missing.
Progress events stream (stage, done, total).

Two halves, which `DriftRAG.ingest` runs under different locks (`driftrag.store.locks`):
`IngestStart(request=…, rebuild=False)` is the per-document half (documents, chunks, extraction
checkpoints, chunk vectors; the kb stays stale), which several processes may run at once on different
documents; `IngestStart(kb=…)` without a request is the kb-wide half (entity merge, summaries,
communities, reports, entity and report vectors), run once when the kb is stale or holds placeholders
of what the model failed on (summaries, reports), which it asks for again (see docs/repair.md). The
default, a request with `rebuild=True`, runs both.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

from pydantic import BaseModel, ConfigDict, Field
from workflows import Context, Workflow, step
from workflows.events import Event, StartEvent, StopEvent

from driftrag.ingestion import indexing, layers
from driftrag.ingestion.deps import IngestionDeps
from driftrag.ingestion.requests import DocumentOutcome, IngestionResult, IngestRequest, Progress
from driftrag.models.graph import ExtractConfig, MergeResult
from driftrag.models.identifiers import validate_kb_id
from driftrag.models.vector_spaces import space_for
from driftrag.providers.usage import Usage

DEFAULT_TIMEOUT_S = 6 * 3600.0
CHUNK_VECTORS_STAGE = "chunk embeddings (in the background)"


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
    retried: int = 0
    rebuild: bool = True


class LayersBuilt(ChunksExtracted):
    merged: MergeResult | None
    summaries: int
    reports: int = 0
    unknown_report_citations: int = 0
    entities_embedded: int = 0
    communities_embedded: int = 0
    # Every entity and community vector the layers need was written by the layers step (none failed).
    layers_embedded: bool = False


class IngestionState(BaseModel):
    """One run's state, in the workflow context: what it has spent and how long each stage took (data,
    serialised with the context), and the live handles of the background chunk vectors (not serialised: a
    run resumed elsewhere embeds whatever chunk vectors are still missing in its last step)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    seconds_per_stage: dict[str, float] = Field(default_factory=dict)
    usage: Usage = Field(default_factory=Usage)
    # The usage counters when the last stage ended, in this process: the next stage counts from there, so
    # background work between two stages is counted too.
    usage_mark: Usage | None = Field(default=None, exclude=True)
    # The chunk vectors of this run's documents, made in the background (awaited by the last step), and
    # the lock their writes share with the entity layer's (both touch the chunk nodes).
    chunk_vectors: asyncio.Future[int] | None = Field(default=None, exclude=True)
    chunk_writes: asyncio.Lock | None = Field(default=None, exclude=True)


class IngestionWorkflow(Workflow):
    """Run with `IngestionWorkflow(deps).run(start_event=IngestStart(request=…))`; one instance may run
    several times at once (a run's state is in its context). A stopped run resumes from its context:
    `workflow.run(ctx=Context.from_dict(workflow, saved))` re-runs the step it was stopped in (every step
    is idempotent: extraction is checkpointed per chunk) and goes on."""

    def __init__(self, deps: IngestionDeps, *, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        super().__init__(timeout=timeout)
        self._deps = deps

    def _progress(self, ctx: Context):
        async def report(progress: Progress) -> None:
            ctx.write_event_to_stream(IngestProgress(progress=progress))

        return report

    async def _claim_vector_space(self, kb: str) -> None:
        """The kb's embeddings go to its embedder's vector space; a kb embedded by another is refused
        before anything is written."""
        profile = self._deps.profile
        await self._deps.stores.database.claim_vector_space(
            kb, space_for(profile.embedder, profile.embedding_dimension)
        )

    @contextlib.asynccontextmanager
    async def _stage(self, ctx: Context[IngestionState], stage: str) -> AsyncIterator[None]:
        """Adds the stage's wall time and model/embedding usage to the run's state once it finishes."""
        started = time.monotonic()
        before = (await ctx.store.get_state()).usage_mark or self._deps.usage.snapshot()
        yield
        async with ctx.store.edit_state() as state:
            seconds = state.seconds_per_stage.get(stage, 0.0) + time.monotonic() - started
            state.seconds_per_stage[stage] = round(seconds, 3)
            state.usage_mark = self._deps.usage.snapshot()
            state.usage = state.usage + (state.usage_mark - before)

    @step
    async def store_documents(self, ctx: Context[IngestionState], ev: IngestStart) -> DocumentsStored:
        async with self._stage(ctx, "documents"):
            if ev.request is None:
                if ev.kb is None:
                    raise ValueError("IngestStart needs a request, or the kb whose derived layers to rebuild")
                kb = validate_kb_id(ev.kb)
                await self._deps.stores.database.ensure_schema()
                await self._claim_vector_space(kb)
                return DocumentsStored(kb=kb, documents=[])
            kb = ev.request.kb
            # The tokenizer loads in a thread (up to a second, the first time) while the schema is checked.
            tokenizer = asyncio.ensure_future(indexing.load_tokenizer())
            try:
                # The schema is no kb's data: it is checked while the inputs are read and validated.
                documents, _ = await asyncio.gather(
                    indexing.load_documents(
                        ev.request, self._deps.settings, self._deps.tasks.document_check, self._deps.parsers
                    ),
                    self._deps.stores.database.ensure_schema(),
                )
                await self._claim_vector_space(kb)
                if ev.extract_config is not None:
                    await self._deps.kbs.set_extract_config(kb, ev.extract_config)
            finally:
                await tokenizer
            outcomes = await indexing.store_documents(self._deps, kb, documents, self._progress(ctx))
        return DocumentsStored(kb=kb, documents=outcomes, rebuild=ev.rebuild)

    @step
    async def extract(self, ctx: Context[IngestionState], ev: DocumentsStored) -> ChunksExtracted:
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
            async with ctx.store.edit_state() as state:
                seconds = state.seconds_per_stage.get(CHUNK_VECTORS_STAGE, 0.0) + time.monotonic() - chunk_started
                state.seconds_per_stage[CHUNK_VECTORS_STAGE] = round(seconds, 3)
            return embedded

        async with self._stage(ctx, "extract"):
            config = await self._deps.kbs.extract_config(ev.kb) or ExtractConfig()
            background = asyncio.ensure_future(chunk_vectors())
            async with ctx.store.edit_state() as state:
                state.chunk_vectors, state.chunk_writes = background, chunk_writes
            try:
                extracted = await indexing.extract_pending(self._deps, ev.kb, ids, config, self._progress(ctx))
                retried = recovered = 0
                if ev.rebuild:  # the kb-wide half (exclusive lock): the kb's failed chunks are asked for again
                    retried, recovered = await indexing.retry_failed_chunks(
                        self._deps, ev.kb, config, self._progress(ctx)
                    )
                if extracted or recovered:
                    await self._deps.kbs.mark_stale(ev.kb, True)
            except BaseException:
                background.cancel()
                raise
        if self._deps.embedder_on_local_cpu:
            # After the stage: the wait is the chunk vectors' time (their own stage), not extraction's.
            try:
                await asyncio.shield(background)  # the last step reads its result
            except BaseException:
                background.cancel()
                raise
        return ChunksExtracted(
            kb=ev.kb, documents=ev.documents, extracted=extracted, retried=retried, rebuild=ev.rebuild
        )

    @step
    async def build_layers(self, ctx: Context[IngestionState], ev: ChunksExtracted) -> LayersBuilt:
        """Entity layer, communities and reports in one step: each report starts once its own members'
        summaries exist (`driftrag.ingestion.layers`)."""
        built = None
        async with self._stage(ctx, "entities and communities"), self._cancelled_on_error(ctx):
            if ev.rebuild and await indexing.needs_rebuild(self._deps, ev.kb):
                chunk_writes = (await ctx.store.get_state()).chunk_writes
                built = await layers.build_layers(self._deps, ev.kb, self._progress(ctx), chunk_writes=chunk_writes)
        if built is None:
            return LayersBuilt(**ev.model_dump(), merged=None, summaries=0)
        return LayersBuilt(
            **ev.model_dump(),
            merged=built.merged,
            summaries=built.summaries,
            reports=built.reports,
            unknown_report_citations=built.unknown_citations,
            entities_embedded=built.entities_embedded[0],
            communities_embedded=built.communities_embedded[0],
            layers_embedded=not (built.entities_embedded[1] or built.communities_embedded[1]),
        )

    @step
    async def embed(self, ctx: Context[IngestionState], ev: LayersBuilt) -> StopEvent:
        async with self._stage(ctx, "embeddings"):
            # First the background chunk vectors: what is missing after them is embedded again below. A
            # resumed run has none (they stayed with the stopped process): what they lack is embedded below.
            background = (await ctx.store.get_state()).chunk_vectors
            chunks_embedded = await background if background is not None else 0
            ids = [outcome.document_id for outcome in ev.documents]
            embedded: dict[str, int] = {}
            if ev.merged is not None:
                embedded = await indexing.embed_missing(
                    self._deps, ev.kb, ev.merged, self._progress(ctx), layers_embedded=ev.layers_embedded
                )
                embedded["chunk"] += chunks_embedded
                embedded["entity"] += ev.entities_embedded
                embedded["community"] += ev.communities_embedded
            elif not ev.rebuild:  # the per-document half: its chunk vectors (made in the background); retry what failed
                retried, failed = (
                    await indexing.embed_chunks(self._deps, ev.kb, self._progress(ctx), ids) if ids else (0, 0)
                )
                embedded = {"chunk": chunks_embedded + retried, "failed": failed}

        async def current() -> bool:
            if ev.merged is not None and not embedded["failed"]:  # else the next run embeds what is missing
                await self._deps.kbs.mark_stale(ev.kb, False)
            return await self._deps.kbs.is_stale(ev.kb)

        counts, failed_chunks, stale = await asyncio.gather(
            self._deps.kbs.counts(ev.kb), self._deps.extractions.failed_chunks(ev.kb), current()
        )
        state = await ctx.store.get_state()
        result = IngestionResult(
            kb=ev.kb,
            documents=ev.documents,
            counts=counts,
            extracted_chunks=ev.extracted,
            retried_chunks=ev.retried,
            failed_chunks=failed_chunks,
            graph_rebuilt=ev.merged is not None,
            stale=stale,
            summaries_generated=ev.summaries,
            reports_generated=ev.reports,
            unknown_report_citations=ev.unknown_report_citations,
            embedded=embedded,
            usage=state.usage,
            seconds_per_stage=dict(state.seconds_per_stage),
            warnings=counts.warnings(),
        )
        return StopEvent(result=result)

    @contextlib.asynccontextmanager
    async def _cancelled_on_error(self, ctx: Context[IngestionState]) -> AsyncIterator[None]:
        """A step that fails cancels the run's background work (the chunk vectors), which no step would await."""
        try:
            yield
        except BaseException:
            background = (await ctx.store.get_state()).chunk_vectors
            if background is not None:
                background.cancel()
            raise
