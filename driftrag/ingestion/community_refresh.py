"""Communities, reports and their vectors after an incremental update of the entity layer, through
the store: the kb-wide steps of a delete without the whole layer in memory.

1. Leiden runs on the stored graph read as integer columns (`read_community_graph`), as for a full
   rebuild: the same graph gives the same communities.
2. A community is kept as stored (no context, no report, no write) when the store holds the same
   community (`structure_hash`: id, level, hierarchy, members, relationships, chunks) with a report
   that did not fail, and none of its entities and relationships was written or deleted by the
   update: its context, and so its report, would be the same. Every other community, and every
   ancestor of one (a sub-report enters its parent's context), is reported again.
3. Those are reported finest level first, in batches bounded by their members: each batch reads
   only its entities and relationships (without their source lists), the chunk texts its excerpts
   can use, and its children's reports from the store, where the finer level was just written. A
   report whose context is unchanged is reused, as in the full rebuild (`ReusingReporter`).
4. Each batch is written and its changed report texts embedded before the next; then stale
   communities are deleted and memberships and the hierarchy written.

When the kb's communities were not current before the delete (a run stopped in between), nothing
is kept by step 2: every community is reported again, still batch by batch.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from driftrag.ingestion.communities import detect_graph_communities, finest_community_by_entity, read_community_graph
from driftrag.ingestion.deps import IngestionDeps
from driftrag.ingestion.embedding import community_text, embed_changed
from driftrag.ingestion.incremental import LayerChange
from driftrag.ingestion.reports import DEFAULT_EXCERPT_SHARE, build_report_context, report_levels
from driftrag.ingestion.requests import ProgressCallback
from driftrag.ingestion.task_adapters import ReusingReporter
from driftrag.models.graph import Community, CommunityReport, StoredState, community_structure_hash

log = logging.getLogger(__name__)

# Members (entities + relationships) read for one batch of communities; one larger community is a
# batch alone.
DEFAULT_BATCH_MEMBERS = 100_000
# A chunk excerpt costs at least this many tokens of the excerpt budget (`reports._excerpts`).
_MIN_EXCERPT_COST = 20


@dataclass
class CommunityRefresh:
    communities: int
    reported: int
    generated: int
    unknown_citations: int
    embedded: tuple[int, int]


def affected_communities(
    communities: Sequence[Community], stored: dict[str, str | None], change: LayerChange
) -> set[str]:
    """The ids of the communities to report again (step 2 of the module docstring)."""
    entities, relationships = change.touched_entity_ids, change.touched_relationship_ids
    by_id = {c.id: c for c in communities}
    affected = {
        c.id
        for c in communities
        if stored.get(c.id) is None
        or stored[c.id] != community_structure_hash(c)
        or not entities.isdisjoint(c.entity_ids)
        or not relationships.isdisjoint(c.relationship_ids)
    }
    for community_id in list(affected):
        parent = by_id[community_id].parent_id
        while parent is not None and parent not in affected:
            affected.add(parent)
            parent = by_id[parent].parent_id
    return affected


def _batches(level: Sequence[Community], members: int) -> Iterator[list[Community]]:
    batch: list[Community] = []
    size = 0
    for community in level:
        weight = len(community.entity_ids) + len(community.relationship_ids)
        if batch and size + weight > members:
            yield batch
            batch, size = [], 0
        batch.append(community)
        size += weight
    if batch:
        yield batch


async def _excerpt_texts(deps: IngestionDeps, kb: str, batch: Sequence[Community], max_tokens: int) -> dict[str, str]:
    """The texts of the chunks each community's excerpts can use: excerpts fill at most the excerpt
    share of the budget, at `_MIN_EXCERPT_COST` or more each, so only that many chunks that exist
    (from the start of its list) can be read by `reports._excerpts`."""
    limit = int(max_tokens * DEFAULT_EXCERPT_SHARE) // _MIN_EXCERPT_COST + 1
    texts: dict[str, str] = {}
    pending = {c.id: list(c.chunk_ids) for c in batch}
    found = dict.fromkeys(pending, 0)
    while pending:
        wanted = {community_id: ids[:limit] for community_id, ids in pending.items()}
        texts |= await deps.extractions.chunk_texts(
            kb, sorted({i for ids in wanted.values() for i in ids} - texts.keys())
        )
        next_pending = {}
        for community_id, ids in pending.items():
            found[community_id] += sum(1 for i in wanted[community_id] if i in texts)
            rest = ids[limit:]
            if found[community_id] < limit and rest:  # some listed chunks are gone: read further
                next_pending[community_id] = rest
        pending = next_pending
    return texts


async def refresh_communities(
    deps: IngestionDeps,
    kb: str,
    change: LayerChange,
    progress: ProgressCallback,
    *,
    keep_unchanged: bool = True,
    batch_members: int = DEFAULT_BATCH_MEMBERS,
) -> CommunityRefresh:
    """Steps 1-4 of the module docstring; `keep_unchanged=False` reports every community again."""
    settings = deps.settings
    started = time.perf_counter()
    community_graph = await read_community_graph(deps.communities, kb)
    communities = await asyncio.to_thread(
        detect_graph_communities,
        community_graph,
        max_cluster_size=settings.max_cluster_size,
        seed=settings.leiden_seed,
    )
    del community_graph
    detected = time.perf_counter()
    stored = await deps.communities.community_structures(kb) if keep_unchanged else {}
    affected = affected_communities(communities, stored, change)
    del stored
    by_id = {c.id: c for c in communities}
    known: dict[str, StoredState] = {}  # the stored state of the batch being reported
    reporter = ReusingReporter(deps.tasks.reporter, known, len(affected), progress)
    limit = asyncio.Semaphore(max(1, settings.llm_concurrency))
    embedded = failed = 0

    async def report(community: Community, context_parts) -> CommunityReport:
        entities, relationships, chunks, sub_reports = context_parts
        children = [by_id[k] for k in community.child_ids if k in by_id]
        context = build_report_context(
            community,
            entities,
            relationships,
            chunks,
            {child.id: sub_reports[child.id] for child in children if child.id in sub_reports},
            settings.report_context_tokens,
            children=children,
        )
        async with limit:
            return await reporter.report(context)

    for level in report_levels([by_id[i] for i in sorted(affected)]):
        for batch in _batches(level, batch_members):
            ids = [c.id for c in batch]
            entity_rows, relationship_rows, chunks, sub_reports, state = await asyncio.gather(
                deps.entity_layer.entities_by_id(kb, sorted({e for c in batch for e in c.entity_ids}), sources=False),
                deps.entity_layer.relationships_by_id(
                    kb, sorted({r for c in batch for r in c.relationship_ids}), sources=False
                ),
                _excerpt_texts(deps, kb, batch, settings.report_context_tokens),
                deps.communities.community_reports(kb, [k for c in batch for k in c.child_ids]),
                deps.communities.community_state_of(kb, ids),
            )
            known.clear()
            known.update(state)
            parts = ({e.id: e for e in entity_rows}, {r.id: r for r in relationship_rows}, chunks, sub_reports)
            del entity_rows, relationship_rows
            reports = await asyncio.gather(*(report(community, parts) for community in batch))
            del parts
            by_community = {r.community_id: r for r in reports}
            hashes = {i: reporter.context_hashes.pop(i) for i in ids}
            await deps.communities.upsert_communities(kb, batch, by_community, hashes)
            texts = {r.community_id: community_text(r) for r in reports}
            done, missed = await embed_changed(deps, kb, "community", texts, state, progress)
            embedded, failed = embedded + done, failed + missed
    reported = time.perf_counter()
    await deps.communities.replace_community_links(kb, communities, finest_community_by_entity(communities))
    log.info(
        "communities of %s: Leiden on the stored graph %.1f s, %d of %d communities reported again "
        "(%d generated) and written %.1f s, links %.1f s",
        kb,
        detected - started,
        len(affected),
        len(communities),
        reporter.generated,
        reported - detected,
        time.perf_counter() - reported,
    )
    return CommunityRefresh(
        communities=len(communities),
        reported=len(affected),
        generated=reporter.generated,
        unknown_citations=reporter.unknown_citations,
        embedded=(embedded, failed),
    )
