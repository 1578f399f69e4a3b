"""The stages of an ingestion run, as plain async functions the workflow steps call.

Crash safety: documents and chunks are written first, each chunk's extraction is checkpointed on the
chunk as soon as it finishes, and the derived layers (entities, relationships, communities, reports,
embeddings) are rebuilt from those checkpoints, reusing every summary, report and embedding whose
inputs did not change. A run killed at any point and started again therefore repeats no finished
model call and ends with the same graph as an uninterrupted run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, NamedTuple, TypeVar

from driftrag.ingestion.chunking import iter_chunks
from driftrag.ingestion.communities import detect_communities, finest_community_by_entity
from driftrag.ingestion.community_refresh import refresh_communities
from driftrag.ingestion.deps import IngestionDeps
from driftrag.ingestion.embedding import community_text, embed_changed, embed_rows
from driftrag.ingestion.estimate import announced
from driftrag.ingestion.extraction import extract_all
from driftrag.ingestion.incremental import (
    DeletedChunks,
    LayerChange,
    can_update_incrementally,
    listing_removed_chunks,
    update_after_delete,
)
from driftrag.ingestion.loading import InputError, load_document, reader_options
from driftrag.ingestion.merge import (
    apply_summaries,
    extracted_chunk_count,
    merge_extractions,
    needs_summary,
    summarize_all,
    summary_items,
)
from driftrag.ingestion.parsing import ParseWorkers
from driftrag.ingestion.reports import generate_reports
from driftrag.ingestion.requests import DocumentOutcome, IngestRequest, Progress, ProgressCallback
from driftrag.ingestion.task_adapters import CheckpointingExtractor, ProgressSummarizer, ReusingReporter
from driftrag.models.graph import (
    Community,
    CommunityReport,
    ExtractConfig,
    MergeResult,
    SourceDocument,
    StoredState,
    descriptions_hash,
)
from driftrag.models.identifiers import validate_kb_id
from driftrag.providers.tokens import get_encoding
from driftrag.settings import Settings

log = logging.getLogger(__name__)
A = TypeVar("A")
B = TypeVar("B")


async def load_documents(
    request: IngestRequest,
    settings: Settings,
    check: Callable[[SourceDocument], None] | None = None,
    parsers: ParseWorkers | None = None,
) -> list[SourceDocument]:
    """Read and validate every input before anything is written: one bad file stops the run cleanly.
    `check` (the mode's `IngestionTasks.document_check`) may refuse a document the mode cannot read.
    `parsers` reads PDF, DOCX, EPUB and HTML files in its worker processes (else a thread reads them)."""
    kb = validate_kb_id(request.kb)
    max_bytes = int(settings.max_file_mb * 1024 * 1024)
    options = reader_options(settings)
    if parsers is not None:
        documents = [
            await parsers.load_document(path, kb, max_bytes=max_bytes, options=options) for path in request.paths
        ]
    else:
        documents = [
            await asyncio.to_thread(load_document, path, kb, max_bytes=max_bytes, options=options)
            for path in request.paths
        ]
    documents += [item.document(kb) for item in request.texts]
    for warning in (warning for document in documents for warning in document.warnings):
        log.info("%s", warning)
    if check is not None:
        for document in documents:
            await asyncio.to_thread(check, document)
    return documents


async def load_tokenizer() -> None:
    """Load the chunker's tokenizer in a thread: its first load reads and indexes the encoding file, which
    would otherwise stall the event loop inside the first chunking."""
    await asyncio.to_thread(get_encoding)


def _source(document: SourceDocument) -> str:
    return document.path or document.title


async def store_documents(
    deps: IngestionDeps,
    kb: str,
    documents: Sequence[SourceDocument],
    progress: ProgressCallback,
) -> list[DocumentOutcome]:
    """Write new documents with their chunks; drop older versions of the same source. A new or replaced
    document marks the kb stale and records the profile (mode, embedder) it was stored with."""
    outcomes: list[DocumentOutcome] = []
    marked: asyncio.Future[Any] | None = None
    try:
        for done, document in enumerate(documents, start=1):
            existing = await deps.extractions.documents_by_source(kb, _source(document))
            older = sorted(row["id"] for row in existing if row["id"] != document.id)
            unchanged = any(row["id"] == document.id for row in existing)
            status = "replaced" if older else "unchanged" if unchanged else "new"
            if status != "unchanged" and marked is None:
                # Beside the document's writes (stale before the chunks change is the safe order anyway).
                marked = asyncio.gather(deps.kbs.mark_stale(kb, True), deps.kbs.set_profile(kb, deps.profile))
            for old_id in older:
                await deps.extractions.delete_document(kb, old_id)
            chunk_size, chunk_overlap = deps.chunking()
            # Cut as they are written, a batch at a time: a large file's chunks are never all held.
            chunks = await deps.documents.upsert_document(
                document, iter_chunks(document, chunk_size=chunk_size, chunk_overlap=chunk_overlap)
            )
            outcomes.append(
                DocumentOutcome(
                    document_id=document.id,
                    source=_source(document),
                    status=status,
                    chunks=chunks,
                    replaced_ids=older,
                    warnings=document.warnings,
                )
            )
            await progress(Progress(stage="documents", done=done, total=len(documents), message=_source(document)))
    except BaseException:
        if marked is not None:
            await asyncio.gather(marked, return_exceptions=True)  # the write's own error is raised, not this one's
        raise
    if marked is not None:
        await marked
    return outcomes


async def extract_pending(
    deps: IngestionDeps,
    kb: str,
    document_ids: Sequence[str],
    config: ExtractConfig,
    progress: ProgressCallback,
) -> int:
    """Extract every chunk that has no checkpoint yet; each result is saved as soon as it exists.

    With either switch off (the global `graph_extraction` setting, the kb's `config.enabled`) nothing is
    extracted and nothing checkpointed: the chunks stay pending, for the first run with both on."""
    if not (deps.settings.graph_extraction and config.enabled):
        return 0
    pending = [chunk for doc_id in document_ids for chunk in await deps.extractions.chunks_to_extract(kb, doc_id)]
    progress = await _announced(deps, len(pending), progress)
    extractor = CheckpointingExtractor(deps.tasks.extractor, deps.extractions, kb, len(pending), progress)
    try:
        await extract_all(pending, config, extractor, concurrency=deps.settings.llm_concurrency)
    finally:
        await extractor.flush()  # also after a failure: what was extracted is kept
    return len(pending)


async def _announced(deps: IngestionDeps, chunks: int, progress: ProgressCallback) -> ProgressCallback:
    """Say what extracting `chunks` chunks will cost before the first one (see `estimate.py`)."""
    settings = deps.settings
    return await announced(
        progress,
        chunks=chunks,
        mode=deps.profile.mode,
        gleanings=settings.max_gleanings,
        attempts=settings.extraction_attempts,
    )


async def retry_failed_chunks(
    deps: IngestionDeps, kb: str, config: ExtractConfig, progress: ProgressCallback
) -> tuple[int, int]:
    """(retried, recovered): every chunk of the kb whose extraction failed is extracted once more, with the
    extractor's usual bounded re-asks and the model client's retries and backoff; each outcome is
    checkpointed as it comes (a chunk that fails again stays failed, for the next run or repair)."""
    failed = await deps.extractions.failed_chunks_to_extract(kb)
    if not failed:
        return 0, 0
    progress = await _announced(deps, len(failed), progress)
    extractor = CheckpointingExtractor(deps.tasks.extractor, deps.extractions, kb, len(failed), progress)
    try:
        outcomes = await extract_all(failed, config, extractor, concurrency=deps.settings.llm_concurrency)
    finally:
        await extractor.flush()
    await deps.extractions.save_extractions(kb, [outcome for outcome in outcomes if outcome.skipped_reason])
    recovered = sum(not outcome.failed for outcome in outcomes)
    log.info("kb %s: %d failed chunks extracted again, %d of them now extracted", kb, len(failed), recovered)
    return len(failed), recovered


async def needs_rebuild(deps: IngestionDeps, kb: str) -> bool:
    """Whether the kb-wide layers are to be rebuilt: the kb is stale (its chunks changed), or holds
    placeholders of summaries or reports the model failed on, which the rebuild asks for again."""
    if await deps.kbs.is_stale(kb):
        return True
    counts = await deps.kbs.counts(kb)
    return bool(counts.placeholder_summaries or counts.placeholder_reports)


class EntityLayerPlan(NamedTuple):
    """The kb's checkpoints merged and refined, before any summary is generated."""

    merged: MergeResult
    reused: dict[str, str]  # stored summaries whose descriptions did not change, by key
    to_generate: list[tuple[str, str, list[str]]]  # (key, name, descriptions) the model is to summarise


async def plan_entity_layer(deps: IngestionDeps, kb: str) -> EntityLayerPlan:
    """Merge all checkpointed extractions of the kb, refine, and sort the summaries into reused and to
    generate; nothing is written and no model is called."""
    outcomes, entity_state, relationship_state = await asyncio.gather(
        deps.extractions.extractions(kb), deps.entity_layer.entity_state(kb), deps.entity_layer.relationship_state(kb)
    )
    merged = merge_extractions(outcomes)
    if deps.tasks.refiner is not None:
        merged = await deps.tasks.refiner.refine(merged, extracted_chunk_count(outcomes))
    known = {**entity_state, **relationship_state}
    reused: dict[str, str] = {}
    to_generate = []
    for key, name, descriptions in summary_items(merged):
        state = known.get(key)
        if not needs_summary(descriptions):
            continue
        if state is not None and state.input_hash == descriptions_hash(descriptions) and state.output:
            reused[key] = state.output
        else:
            to_generate.append((key, name, descriptions))
    return EntityLayerPlan(merged, reused, to_generate)


async def derive_entity_layer(deps: IngestionDeps, kb: str, progress: ProgressCallback) -> tuple[MergeResult, int]:
    """Merge all checkpointed extractions of the kb, refine, summarise what changed; nothing is written
    (`write_entity_layer` does, or `rebuild_communities` beside the reports)."""
    plan = await plan_entity_layer(deps, kb)
    summarizer = ProgressSummarizer(deps.tasks.summarizer, len(plan.to_generate), progress)
    generated, failed = await summarize_all(plan.to_generate, summarizer, concurrency=deps.settings.llm_concurrency)
    return apply_summaries(plan.merged, plan.reused | generated, failed), len(plan.to_generate)


async def write_entity_layer(deps: IngestionDeps, kb: str, merged: MergeResult) -> None:
    await deps.entity_layer.replace_entity_layer(
        kb, merged.entities, merged.relationships, total_chunks=merged.total_chunks
    )


async def rebuild_communities(
    deps: IngestionDeps,
    kb: str,
    merged: MergeResult,
    progress: ProgressCallback,
    *,
    chunk_writes: asyncio.Lock | None = None,
) -> tuple[int, int, tuple[int, int], tuple[int, int]]:
    """Cluster, then report bottom-up; a community whose context is unchanged keeps its report.

    The entity layer of `merged` (from `derive_entity_layer`) is written while the reports are
    generated, then its vectors are made; the community vectors are requested while the communities are
    written, and stored once they are. Returns (reports generated, citations of those reports to
    handles their context did not show, (entities embedded, failed), (communities embedded, failed)).
    `chunk_writes` is held while the entity layer is written (its mentions lock chunk nodes), when chunk
    vectors are written at the same time under it.
    """
    settings = deps.settings
    communities = await asyncio.to_thread(
        detect_communities,
        merged.entities,
        merged.relationships,
        max_cluster_size=settings.max_cluster_size,
        seed=settings.leiden_seed,
    )
    chunk_ids = sorted({chunk for c in communities for chunk in c.chunk_ids})
    chunks, known = await asyncio.gather(
        deps.extractions.chunk_texts(kb, chunk_ids), deps.communities.community_state(kb)
    )
    reporter = ReusingReporter(deps.tasks.reporter, known, len(communities), progress)
    reporting = generate_reports(
        communities,
        merged.entities,
        merged.relationships,
        chunks,
        reporter,
        max_tokens=settings.report_context_tokens,
        concurrency=settings.llm_concurrency,
    )

    async def entity_layer() -> tuple[int, int]:
        # Written before anything of the communities is (their memberships need the entities).
        async with chunk_writes or contextlib.nullcontext():
            await write_entity_layer(deps, kb, merged)
        return await embed_entities(deps, kb, merged, progress)

    reports, entities_embedded = await together(reporting, entity_layer())
    communities_embedded = await write_communities(deps, kb, communities, reports, reporter, known, progress)
    return reporter.generated, reporter.unknown_citations, entities_embedded, communities_embedded


async def write_communities(
    deps: IngestionDeps,
    kb: str,
    communities: Sequence[Community],
    reports: Sequence[CommunityReport],
    reporter: ReusingReporter,
    known: dict[str, StoredState],
    progress: ProgressCallback,
    *,
    after: asyncio.Event | None = None,
    entity_writes: asyncio.Lock | None = None,
) -> tuple[int, int]:
    """Replace the kb's communities with `communities` and their reports, and store the reports' vectors:
    (embedded, failed). The vectors are requested at once; they are stored once the communities are
    written, which waits for `after` when given (the entity nodes the memberships need) and happens under
    `entity_writes` when given (the memberships lock entity nodes that other writes of the run touch)."""
    written = asyncio.Event()

    async def communities_written() -> None:
        if after is not None:
            await after.wait()
        async with entity_writes or contextlib.nullcontext():
            await deps.communities.replace_communities(
                kb,
                communities,
                {report.community_id: report for report in reports},
                reporter.context_hashes,
                finest_community_by_entity(communities),
            )
        written.set()

    texts = {report.community_id: community_text(report) for report in reports}
    _, embedded = await together(
        communities_written(), embed_changed(deps, kb, "community", texts, known, progress, nodes_written=written)
    )
    return embedded


async def together(first: Awaitable[A], second: Awaitable[B]) -> tuple[A, B]:
    """Both results; when one fails the other is cancelled (it may wait for what the failed one would
    have done) and the error raised."""
    tasks = [asyncio.ensure_future(first), asyncio.ensure_future(second)]
    try:
        a, b = await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        raise
    return a, b


async def embed_missing(
    deps: IngestionDeps, kb: str, merged: MergeResult, progress: ProgressCallback, *, layers_embedded: bool = False
) -> dict[str, int]:
    """Embed chunks without a vector, and entities/communities whose embedded text changed.
    `layers_embedded`: the entity and community vectors were all just written (none failed), so only
    chunks are looked at (another run's documents, a failed batch)."""
    if layers_embedded:
        chunks, failed = await embed_chunks(deps, kb, progress)
        return {"chunk": chunks, "entity": 0, "community": 0, "failed": failed}

    async def communities() -> tuple[int, int]:
        state = await deps.communities.community_state(kb)
        texts = {
            community_id: community_text(CommunityReport.model_validate_json(item.output))
            for community_id, item in state.items()
            if item.output
        }
        return await embed_changed(deps, kb, "community", texts, state, progress)

    # Different node kinds: the three never write the same nodes.
    chunk, entity, community = await asyncio.gather(
        embed_chunks(deps, kb, progress), embed_entities(deps, kb, merged, progress), communities()
    )
    return {
        "chunk": chunk[0],
        "entity": entity[0],
        "community": community[0],
        "failed": chunk[1] + entity[1] + community[1],
    }


async def embed_chunks(
    deps: IngestionDeps,
    kb: str,
    progress: ProgressCallback,
    document_ids: Sequence[str] | None = None,
    *,
    write_lock: asyncio.Lock | None = None,
) -> tuple[int, int]:
    """(embedded, failed) chunks that had no vector, of the kb or of `document_ids`. A chunk's vector
    depends on its text alone, so the workflow runs this in the background of the other stages (each
    batch written under `write_lock`); what fails is embedded again by `embed_missing`."""
    rows = await deps.extractions.chunks_without_embedding(kb, document_ids)
    embedded = await embed_rows(deps, kb, "chunk", rows, progress, write_lock=write_lock)
    return len(embedded), len(rows) - len(embedded)


async def embed_entities(
    deps: IngestionDeps,
    kb: str,
    merged: MergeResult,
    progress: ProgressCallback,
    *,
    all_entities: bool = True,
    write_lock: asyncio.Lock | None = None,
) -> tuple[int, int]:
    """(embedded, failed) entities whose text (`name: summary`) changed since their vector was made;
    `all_entities=False`: `merged` holds only some of the kb's entities (their state alone is read).
    `write_lock`: held while the vectors are written."""
    entity_texts = {
        e.id: f"{e.name}: {e.summary or (e.descriptions[0] if e.descriptions else '')}" for e in merged.entities
    }
    state = (
        await deps.entity_layer.entity_state(kb)
        if all_entities
        else await deps.entity_layer.entity_state_of(kb, sorted(entity_texts))
    )
    return await embed_changed(deps, kb, "entity", entity_texts, state, progress, write_lock=write_lock)


async def refresh_derived_layers(
    deps: IngestionDeps, kb: str, progress: ProgressCallback, deleted: DeletedChunks | None = None
) -> None:
    """Rebuild entities, communities, reports and embeddings after chunks changed (e.g. a delete).

    `deleted`: what a delete read before removing its chunks, when that is the only change. Where that
    equals a full rebuild, the entity layer is then updated for what they touched and the kb-wide
    steps after it page through the store (`community_refresh`), never holding the whole layer."""
    await deps.kbs.mark_stale(kb, True)
    started = time.perf_counter()
    if deleted is not None and can_update_incrementally(deps):
        change = await update_after_delete(deps, kb, deleted, progress)
        layer_done = time.perf_counter()
        refreshed = await refresh_communities(deps, kb, change, progress, keep_unchanged=deleted.communities_current)
        communities_done = time.perf_counter()
        failed = refreshed.embedded[1] + (await embed_after_update(deps, kb, change, progress))
        mode = "incremental"
    else:
        merged, _ = await derive_entity_layer(deps, kb, progress)
        layer_done = time.perf_counter()
        await rebuild_communities(deps, kb, merged, progress)
        communities_done = time.perf_counter()
        failed = (await embed_missing(deps, kb, merged, progress))["failed"]
        mode = "full rebuild"
    if not failed:
        await deps.kbs.mark_stale(kb, False)
    log.info(
        "derived layers of %s: entity layer (%s) %.1f s, communities and reports %.1f s, embeddings %.1f s",
        kb,
        mode,
        layer_done - started,
        communities_done - layer_done,
        time.perf_counter() - communities_done,
    )


async def embed_after_update(deps: IngestionDeps, kb: str, change: LayerChange, progress: ProgressCallback) -> int:
    """After an incremental update: embed chunks without a vector and the written entities whose text
    changed (no other entity's text did); returns how many failed."""
    merged = MergeResult(entities=change.entities, relationships=[])
    chunk, entity = await asyncio.gather(
        embed_chunks(deps, kb, progress), embed_entities(deps, kb, merged, progress, all_entities=False)
    )
    return chunk[1] + entity[1]


async def delete_document(deps: IngestionDeps, kb: str, document_id: str, progress: ProgressCallback) -> None:
    """Remove a document's chunks; entities and relationships left without sources go with them."""
    if not any(row["id"] == document_id for row in await deps.extractions.documents(validate_kb_id(kb))):
        raise InputError(f"document {document_id!r} not found in knowledge base {kb!r}; nothing deleted")
    # Stale before the delete: a run killed in between still rebuilds the derived layers next time
    # (fully: the deleted checkpoints an incremental update needs are gone with the chunks).
    # An incremental update starts from an entity layer derived from every checkpoint: not from a kb
    # whose entity layer is stale (a kb stale only for its communities is fine).
    deleted = None
    if can_update_incrementally(deps) and not await deps.kbs.is_entity_layer_stale(kb):
        removed = await deps.extractions.document_extractions(kb, document_id)
        deleted = DeletedChunks(
            removed=removed,
            stored=await deps.entity_layer.entity_keys(kb),
            communities_current=not await deps.kbs.is_stale(kb),
        )
    await deps.kbs.mark_stale(kb, True)
    listing = listing_removed_chunks(deleted.removed, deleted.stored) if deleted is not None else None
    await deps.extractions.delete_document(kb, document_id, listing)
    await refresh_derived_layers(deps, kb, progress, deleted)
