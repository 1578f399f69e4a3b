"""The kb-wide layers of a full rebuild in one pass: summaries, communities and reports overlapping.

Communities depend on the graph's structure only (ids, weights, sources), never on a summary, so they
are detected while the summaries are generated, and each community's report starts as soon as the
summaries of its own members exist, not once every summary of the kb does (and once every summary has
started its model call: summaries go first for the model's slots). The entity layer is written
at once, as far as it is known (the items whose summaries are pending keep their descriptions
meanwhile), with the vectors of the entities whose text is final; the summarised items are written
again, and embedded, once their summaries exist. The communities are written once the last report and
the entity nodes exist, not after the entity vectors (the writes that lock entity nodes take turns); their
vectors are requested as soon as the last report exists. The graph, the calls and their prompts are those of
`indexing.derive_entity_layer` followed by `indexing.rebuild_communities`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import NamedTuple

from driftrag.ingestion.communities import detect_communities
from driftrag.ingestion.deps import IngestionDeps
from driftrag.ingestion.indexing import (
    embed_entities,
    plan_entity_layer,
    together,
    write_communities,
    write_entity_layer,
)
from driftrag.ingestion.merge import StartedSummaries, apply_summaries, start_summaries, with_summary
from driftrag.ingestion.reports import generate_reports
from driftrag.ingestion.requests import Progress, ProgressCallback
from driftrag.ingestion.task_adapters import ProgressSummarizer, ReusingReporter
from driftrag.models.graph import Community, CommunityReport, MergedEntity, MergedRelationship, MergeResult


class LayersBuilt(NamedTuple):
    merged: MergeResult  # the entity layer as written, summaries applied
    summaries: int  # summaries generated
    reports: int  # reports generated
    unknown_citations: int  # citations of those reports to handles their context did not show
    entities_embedded: tuple[int, int]  # (embedded, failed)
    communities_embedded: tuple[int, int]


async def build_layers(
    deps: IngestionDeps, kb: str, progress: ProgressCallback, *, chunk_writes: asyncio.Lock | None = None
) -> LayersBuilt:
    """Merge, summarise, cluster, report, write and embed the kb's derived layers (see the module
    docstring). `chunk_writes` is held while the entity layer is written (its mentions lock chunk
    nodes), when chunk vectors are written at the same time under it."""
    plan = await plan_entity_layer(deps, kb)
    settings = deps.settings
    summarizer = ProgressSummarizer(deps.tasks.summarizer, len(plan.to_generate), progress)
    summaries = start_summaries(plan.to_generate, summarizer, concurrency=settings.llm_concurrency)
    try:
        return await _build(deps, kb, plan.merged, plan.reused, summaries, progress, chunk_writes)
    finally:
        for task in summaries.tasks.values():
            task.cancel()  # a failure leaves no summary running (a no-op on finished tasks)


async def _build(
    deps: IngestionDeps,
    kb: str,
    unsummarised: MergeResult,
    reused: dict[str, str],
    summaries: StartedSummaries,
    progress: ProgressCallback,
    chunk_writes: asyncio.Lock | None,
) -> LayersBuilt:
    settings = deps.settings
    pending, failed = summaries.tasks, summaries.failed
    start = apply_summaries(unsummarised, reused)
    entities: dict[str, MergedEntity] = {e.id: e for e in start.entities}
    relationships: dict[str, MergedRelationship] = {r.id: r for r in start.relationships}
    # A community's chunks are its members' sources: their texts are read while the graph is clustered.
    chunk_ids = sorted({chunk for entity in start.entities for chunk in entity.source_chunk_ids})
    communities, chunks, known = await asyncio.gather(
        asyncio.to_thread(
            detect_communities,
            start.entities,
            start.relationships,
            max_cluster_size=settings.max_cluster_size,
            seed=settings.leiden_seed,
        ),
        deps.extractions.chunk_texts(kb, chunk_ids),
        deps.communities.community_state(kb),
    )

    async def members_ready(community: Community) -> None:
        # The community's members get their summaries in the maps the reports read.
        keys = [key for key in (*community.entity_ids, *community.relationship_ids) if key in pending]
        if keys:
            await asyncio.wait([pending[key] for key in keys])  # not `gather`: a cancelled report cancels no summary
        for key in keys:
            summary = {key: pending[key].result()}
            if key in entities:
                entities[key] = with_summary(entities[key], summary, failed)
            elif key in relationships:
                relationships[key] = with_summary(relationships[key], summary, failed)

    reporter = ReusingReporter(deps.tasks.reporter, known, len(communities), progress)
    # Writes that lock entity nodes (the layer, its vectors, the community memberships) take turns: two
    # such transactions at once could deadlock. The communities wait only for the entity nodes to exist.
    entity_writes = asyncio.Lock()
    entities_written = asyncio.Event()

    @contextlib.asynccontextmanager
    async def layer_writes() -> AsyncIterator[None]:
        # The mentions lock chunk nodes too, which the chunk vectors written meanwhile take turns on.
        async with entity_writes, chunk_writes or contextlib.nullcontext():
            yield

    async def entity_layer() -> tuple[MergeResult, tuple[int, int]]:
        # At once, while the summaries are made: the layer as far as it is known (an item whose summary
        # is pending keeps its descriptions meanwhile), and the vectors of the entities whose text is final.
        async with layer_writes():
            await write_entity_layer(deps, kb, start)
        entities_written.set()
        known_text = start.model_copy(update={"entities": [e for e in start.entities if e.id not in pending]})
        early = await embed_entities(deps, kb, known_text, progress, write_lock=entity_writes)
        # Then the summarised items again, with their summaries, and their vectors.
        if pending:
            await asyncio.wait(pending.values())
        generated = {key: task.result() for key, task in pending.items()}
        merged = apply_summaries(unsummarised, reused | generated, failed)
        late = (0, 0)
        if pending:
            summarised = merged.model_copy(
                update={
                    "entities": [e for e in merged.entities if e.id in pending],
                    "relationships": [r for r in merged.relationships if r.id in pending],
                }
            )
            async with layer_writes():
                await deps.entity_layer.upsert_entities(kb, summarised.entities)
                await deps.entity_layer.upsert_relationships(kb, summarised.relationships)
            late = await embed_entities(
                deps, kb, summarised, _counted_after(progress, early[0]), write_lock=entity_writes
            )
        return merged, (early[0] + late[0], early[1] + late[1])

    async def reports_and_communities() -> tuple[list[CommunityReport], tuple[int, int]]:
        reports = await generate_reports(
            communities,
            entities,
            relationships,
            chunks,
            reporter,
            max_tokens=settings.report_context_tokens,
            concurrency=settings.llm_concurrency,
            members_ready=members_ready,
            # Summaries first: a report's call waits for a model slot until every summary has one, since
            # a report holding a slot a summary then waits for delays every report that needs that summary.
            # Its context is made meanwhile.
            call_turn=summaries.all_called.wait,
        )
        embedded = await write_communities(
            deps,
            kb,
            communities,
            reports,
            reporter,
            known,
            progress,
            after=entities_written,
            entity_writes=entity_writes,
        )
        return reports, embedded

    (_, communities_embedded), (merged, entities_embedded) = await together(reports_and_communities(), entity_layer())
    return LayersBuilt(
        merged=merged,
        summaries=len(pending),
        reports=reporter.generated,
        unknown_citations=reporter.unknown_citations,
        entities_embedded=entities_embedded,
        communities_embedded=communities_embedded,
    )


def _counted_after(progress: ProgressCallback, before: int) -> ProgressCallback:
    """`progress` for a second batch of the same stage: its counts go on from the first batch's `before`."""

    async def report(event: Progress) -> None:
        await progress(event.model_copy(update={"done": before + event.done, "total": before + event.total}))

    return report
