"""The stages of an ingestion run, as plain async functions the workflow steps call.

Crash safety: documents and chunks are written first, each chunk's extraction is checkpointed on the
chunk as soon as it finishes, and the derived layers (entities, relationships, communities, reports,
embeddings) are rebuilt from those checkpoints, reusing every summary, report and embedding whose
inputs did not change. A run killed at any point and started again therefore repeats no finished
model call and ends with the same graph as an uninterrupted run.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Sequence
from typing import TypeVar

from driftrag.ingestion.chunking import chunk_document
from driftrag.ingestion.communities import detect_communities, finest_community_by_entity
from driftrag.ingestion.deps import IngestionDeps
from driftrag.ingestion.extraction import extract_all
from driftrag.ingestion.incremental import can_update_incrementally, update_after_delete
from driftrag.ingestion.loading import InputError, document_from_text, load_document
from driftrag.ingestion.merge import (
    apply_summaries,
    extracted_chunk_count,
    merge_extractions,
    needs_summary,
    summarize_all,
    summary_items,
)
from driftrag.ingestion.reports import generate_reports
from driftrag.ingestion.requests import DocumentOutcome, IngestRequest, Progress, ProgressCallback
from driftrag.ingestion.task_adapters import CheckpointingExtractor, ProgressSummarizer, ReusingReporter
from driftrag.models.graph import (
    CommunityReport,
    ExtractConfig,
    ExtractionOutcome,
    MergeResult,
    SourceDocument,
    stable_hash,
)
from driftrag.store.graph import descriptions_hash
from driftrag.store.identifiers import validate_kb_id

log = logging.getLogger(__name__)
T = TypeVar("T")


async def load_documents(request: IngestRequest, max_file_mb: float) -> list[SourceDocument]:
    """Read and validate every input before anything is written: one bad file stops the run cleanly."""
    kb = validate_kb_id(request.kb)
    max_bytes = int(max_file_mb * 1024 * 1024)
    documents = [await asyncio.to_thread(load_document, path, kb, max_bytes=max_bytes) for path in request.paths]
    documents += [document_from_text(item.text, kb, item.title) for item in request.texts]
    return documents


def _source(document: SourceDocument) -> str:
    return document.path or document.title


async def store_documents(
    deps: IngestionDeps, kb: str, documents: Sequence[SourceDocument], progress: ProgressCallback
) -> list[DocumentOutcome]:
    """Write new documents with their chunks; drop older versions of the same source."""
    outcomes = []
    for done, document in enumerate(documents, start=1):
        existing = await deps.graph.documents_by_source(kb, _source(document))
        older = sorted(row["id"] for row in existing if row["id"] != document.id)
        for old_id in older:
            await deps.graph.delete_document(kb, old_id)
        chunk_size, chunk_overlap = deps.chunking()
        chunks = chunk_document(document, chunk_size=chunk_size, chunk_overlap=chunk_overlap)
        unchanged = any(row["id"] == document.id for row in existing)
        await deps.documents.upsert_document(document, chunks)
        status = "replaced" if older else "unchanged" if unchanged else "new"
        outcomes.append(
            DocumentOutcome(
                document_id=document.id,
                source=_source(document),
                status=status,
                chunks=len(chunks),
                replaced_ids=older,
            )
        )
        await progress(Progress(stage="documents", done=done, total=len(documents), message=_source(document)))
    return outcomes


async def extract_pending(
    deps: IngestionDeps,
    kb: str,
    document_ids: Sequence[str],
    config: ExtractConfig,
    progress: ProgressCallback,
) -> int:
    """Extract every chunk that has no checkpoint yet; each result is saved as soon as it exists."""
    pending = [chunk for doc_id in document_ids for chunk in await deps.graph.chunks_to_extract(kb, doc_id)]
    extractor = CheckpointingExtractor(deps.tasks.extractor, deps.graph, kb, len(pending), progress)
    outcomes = await extract_all(pending, config, extractor, concurrency=deps.settings.llm_concurrency)
    # Chunks skipped without a model call (extraction disabled) never reached the extractor.
    await deps.graph.save_extractions(kb, [outcome for outcome in outcomes if outcome.skipped_reason])
    return len(pending)


async def rebuild_entity_layer(deps: IngestionDeps, kb: str, progress: ProgressCallback) -> tuple[MergeResult, int]:
    """Merge all checkpointed extractions of the kb, refine, summarise what changed, write the layer."""
    outcomes = await deps.graph.extractions(kb)
    merged = merge_extractions(outcomes)
    if deps.tasks.refiner is not None:
        merged = await deps.tasks.refiner.refine(merged, extracted_chunk_count(outcomes))
    known = {**await deps.graph.entity_state(kb), **await deps.graph.relationship_state(kb)}
    summaries: dict[str, str] = {}
    to_generate = []
    for key, name, descriptions in summary_items(merged):
        state = known.get(key)
        if not needs_summary(descriptions):
            continue
        if state is not None and state.input_hash == descriptions_hash(descriptions) and state.output:
            summaries[key] = state.output
        else:
            to_generate.append((key, name, descriptions))
    summarizer = ProgressSummarizer(deps.tasks.summarizer, len(to_generate), progress)
    summaries |= await summarize_all(to_generate, summarizer, concurrency=deps.settings.llm_concurrency)
    merged = apply_summaries(merged, summaries)
    await deps.graph.replace_entity_layer(kb, merged.entities, merged.relationships)
    return merged, len(to_generate)


async def rebuild_communities(
    deps: IngestionDeps,
    kb: str,
    merged: MergeResult,
    progress: ProgressCallback,
    beside_reports: Awaitable[T] | None = None,
) -> tuple[int, int, T | None]:
    """Cluster, then report bottom-up; a community whose context is unchanged keeps its report.

    Returns (reports generated, citations of those reports to handles their context did not show, the
    result of `beside_reports`). `beside_reports` (e.g. the entity vectors) runs while the reports are
    generated, before anything of the communities is written, so the two never write the same nodes at once.
    """
    settings = deps.settings
    communities = detect_communities(
        merged.entities, merged.relationships, max_cluster_size=settings.max_cluster_size, seed=settings.leiden_seed
    )
    chunk_ids = sorted({chunk for c in communities for chunk in c.chunk_ids})
    chunks = await deps.graph.chunk_texts(kb, chunk_ids)
    reporter = ReusingReporter(deps.tasks.reporter, await deps.graph.community_state(kb), len(communities), progress)
    reporting = generate_reports(
        communities,
        merged.entities,
        merged.relationships,
        chunks,
        reporter,
        max_tokens=settings.report_context_tokens,
        concurrency=settings.llm_concurrency,
    )
    beside_result = None
    if beside_reports is None:
        reports = await reporting
    else:
        reports, beside_result = await asyncio.gather(reporting, beside_reports)
    await deps.graph.replace_communities(
        kb,
        communities,
        {report.community_id: report for report in reports},
        reporter.context_hashes,
        finest_community_by_entity(communities),
    )
    return reporter.generated, reporter.unknown_citations, beside_result


async def embed_missing(
    deps: IngestionDeps, kb: str, merged: MergeResult, progress: ProgressCallback
) -> dict[str, int]:
    """Embed chunks without a vector, and entities/communities whose embedded text changed."""
    counts = {"chunk": 0, "entity": 0, "community": 0, "failed": 0}
    counts["chunk"], counts["failed"] = await embed_chunks(deps, kb, progress)
    counts["entity"], failed = await embed_entities(deps, kb, merged, progress)
    counts["failed"] += failed

    community_state = await deps.graph.community_state(kb)
    community_texts = {}
    for community_id, state in community_state.items():
        if state.output:
            report = CommunityReport.model_validate_json(state.output)
            community_texts[community_id] = f"{report.title}\n{report.summary}"
    counts["community"], failed = await _embed_changed(
        deps, kb, "community", community_texts, community_state, progress
    )
    counts["failed"] += failed
    return counts


async def embed_chunks(
    deps: IngestionDeps, kb: str, progress: ProgressCallback, document_ids: Sequence[str] | None = None
) -> tuple[int, int]:
    """(embedded, failed) chunks that had no vector, of the kb or of `document_ids`. A chunk's vector
    depends on its text alone, so the workflow runs this beside extraction; what fails is embedded again
    by `embed_missing`."""
    rows = await deps.graph.chunks_without_embedding(kb, document_ids)
    embedded = await _embed(deps, kb, "chunk", rows, progress)
    return len(embedded), len(rows) - len(embedded)


async def embed_entities(
    deps: IngestionDeps, kb: str, merged: MergeResult, progress: ProgressCallback
) -> tuple[int, int]:
    """(embedded, failed) entities whose text (`name: summary`) changed since their vector was made."""
    entity_texts = {
        e.id: f"{e.name}: {e.summary or (e.descriptions[0] if e.descriptions else '')}" for e in merged.entities
    }
    return await _embed_changed(deps, kb, "entity", entity_texts, await deps.graph.entity_state(kb), progress)


async def _embed_changed(deps, kb, kind, texts: dict[str, str], state, progress) -> tuple[int, int]:
    """(embedded, failed): only what was embedded gets its hash, so a failed batch is embedded next run."""
    hashes = {node_id: stable_hash(text, length=32) for node_id, text in texts.items()}
    stale = sorted(
        node_id
        for node_id, value in hashes.items()
        if node_id not in state or not state[node_id].embedded or state[node_id].embedding_hash != value
    )
    embedded = await _embed(deps, kb, kind, [(node_id, texts[node_id]) for node_id in stale], progress)
    await deps.graph.set_embedding_hashes(kind, kb, {node_id: hashes[node_id] for node_id in embedded})
    return len(embedded), len(stale) - len(embedded)


async def _embed(deps, kb, kind, rows: list[tuple[str, str]], progress) -> set[str]:
    """Embed in batches, several requests in flight (bounded like model calls); returns the ids embedded.

    A batch whose request fails after the embedder's retries is left out, not fatal: the kb then stays
    stale, so the next run embeds it (everything else is reused).
    """
    batch = deps.settings.embed_batch_size
    parts = [rows[start : start + batch] for start in range(0, len(rows), batch)]
    limit = asyncio.Semaphore(deps.settings.llm_concurrency)
    done = 0
    embedded: set[str] = set()

    async def one(part: list[tuple[str, str]]) -> None:
        nonlocal done
        async with limit:
            try:
                vectors = await deps.embedder.aget_text_embedding_batch([text for _, text in part])
            except Exception as exc:  # the provider boundary: any failure of the request
                log.warning(
                    "embedding %d %s texts failed after retries, left for the next run: %s", len(part), kind, exc
                )
                return
        await deps.documents.set_embeddings(
            kind, kb, [(node_id, vector) for (node_id, _), vector in zip(part, vectors, strict=True)]
        )
        embedded.update(node_id for node_id, _ in part)
        done += len(part)
        await progress(Progress(stage=f"embed-{kind}", done=done, total=len(rows)))

    await asyncio.gather(*(one(part) for part in parts))
    return embedded


async def refresh_derived_layers(
    deps: IngestionDeps, kb: str, progress: ProgressCallback, removed: Sequence[ExtractionOutcome] | None = None
) -> None:
    """Rebuild entities, communities, reports and embeddings after chunks changed (e.g. a delete).

    `removed`: the checkpoints of the chunks just deleted, when that is the only change; the entity
    layer is then updated for what they touched (`incremental`), where that equals a full rebuild."""
    await deps.graph.mark_stale(kb, True)
    started = time.perf_counter()
    incremental = removed is not None and can_update_incrementally(deps)
    if incremental:
        merged, _ = await update_after_delete(deps, kb, removed, progress)
    else:
        merged, _ = await rebuild_entity_layer(deps, kb, progress)
    layer_done = time.perf_counter()
    await rebuild_communities(deps, kb, merged, progress)
    communities_done = time.perf_counter()
    failed = (await embed_missing(deps, kb, merged, progress))["failed"]
    if not failed:
        await deps.graph.mark_stale(kb, False)
    log.info(
        "derived layers of %s: entity layer (%s) %.1f s, communities and reports %.1f s, embeddings %.1f s",
        kb,
        "incremental" if incremental else "full rebuild",
        layer_done - started,
        communities_done - layer_done,
        time.perf_counter() - communities_done,
    )


async def delete_document(deps: IngestionDeps, kb: str, document_id: str, progress: ProgressCallback) -> None:
    """Remove a document's chunks; entities and relationships left without sources go with them."""
    if not any(row["id"] == document_id for row in await deps.graph.documents(validate_kb_id(kb))):
        raise InputError(f"document {document_id!r} not found in knowledge base {kb!r}; nothing deleted")
    # Stale before the delete: a run killed in between still rebuilds the derived layers next time
    # (fully: the deleted checkpoints an incremental update needs are gone with the chunks).
    # An incremental update starts from a layer derived from every checkpoint: not from a stale kb.
    removed = None if await deps.graph.is_stale(kb) else await deps.graph.document_extractions(kb, document_id)
    await deps.graph.mark_stale(kb, True)
    await deps.graph.delete_document(kb, document_id)
    await refresh_derived_layers(deps, kb, progress, removed)
