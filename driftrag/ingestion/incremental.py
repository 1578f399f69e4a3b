"""Update the entity layer after chunks were deleted, re-merging only what those chunks touched.

The full rebuild (`indexing.derive_entity_layer`, written by `rebuild_communities`) reads every
checkpoint and rewrites every entity and relationship. After a delete, only the names the deleted
chunks extracted can change, and with them the alias groups they belong to. So this update:

1. takes the merge keys (normalised names) of the deleted chunks' extractions, and widens them to
   whole alias groups: for each key, the untitled name and every titled form of it, its head word
   (a one-word key is its own head) and every multi-word key of the kb with that head
   (`aliases.plan_aliases` decides a group from its members and their types alone, so a complete
   group folds as it does in the whole kb);
2. re-merges those keys from the checkpoints of every remaining chunk that lists them (the source
   chunks of the stored entities holding them; of each, only the items naming them), in chunk id
   order as the full rebuild reads them, so descriptions, display names, types and weights come out
   the same;
3. folds aliases with the kb's plan: the widened groups' own plan, and for every other name of the
   merge the entity the store already folded it into;
4. summarises what changed (reusing summaries by description hash), writes the re-merged entities
   and the relationships with an end among them, and deletes those that are no longer derived;
5. records the new number of extracted chunks N: PMIs are read from it and the stored chunk counts,
   so the N that enters every PMI is one write (`GraphStore.set_pmi_chunks`).

It returns what it changed (`LayerChange`), never the whole layer: the kb-wide steps after it
(communities, reports, vectors: `community_refresh`) read the store in pages and batches.

When it cannot stay equal to a full rebuild it is not used: with a graph refiner (the offline mode),
whose thresholds and PMI-normalised weights look at the whole merge and at N, every relationship's
weight may change, so a delete falls back to the full rebuild.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from driftrag.ingestion.aliases import AliasPlan, head_word, is_form_of_address, plan_aliases, untitled
from driftrag.ingestion.deps import IngestionDeps
from driftrag.ingestion.merge import (
    apply_summaries,
    entity_id,
    fold_aliases,
    merge_by_name,
    needs_summary,
    normalise_name,
    relationship_id,
    summarize_all,
)
from driftrag.ingestion.requests import ProgressCallback
from driftrag.ingestion.task_adapters import ProgressSummarizer
from driftrag.models.graph import (
    GENERIC_RELATIONSHIP_TYPE,
    ExtractionOutcome,
    MergedEntity,
    MergedRelationship,
    MergeResult,
    StoredEntityKey,
    descriptions_hash,
)

log = logging.getLogger(__name__)

# Checkpoints read per round trip by the update (chunk id order is kept across batches).
_EXTRACTION_BATCH = 2000


@dataclass
class DeletedChunks:
    """What a delete knows before it removes a document's chunks: their checkpoints, the stored entity
    keys (read once, for the marker refresh and the update), and whether the communities were current."""

    removed: Sequence[ExtractionOutcome]
    stored: Sequence[StoredEntityKey]
    communities_current: bool


@dataclass
class LayerChange:
    """What an incremental update wrote: the entities (as written), the ids of the relationships
    written, and the ids of those deleted."""

    entities: list[MergedEntity]
    relationship_ids: set[str]
    removed_entity_ids: set[str]
    removed_relationship_ids: set[str]
    generated: int = 0

    @property
    def touched_entity_ids(self) -> set[str]:
        return {entity.id for entity in self.entities} | self.removed_entity_ids

    @property
    def touched_relationship_ids(self) -> set[str]:
        return self.relationship_ids | self.removed_relationship_ids


def can_update_incrementally(deps: IngestionDeps) -> bool:
    """Whether `update_after_delete` gives what a full rebuild gives (module docstring)."""
    return deps.tasks.refiner is None


def extracted_keys(outcomes: Iterable[ExtractionOutcome]) -> set[str]:
    """The merge keys of every entity and relationship end the successful outcomes list."""
    keys: set[str] = set()
    for outcome in outcomes:
        if outcome.failed:
            continue
        keys.update(normalise_name(entity.name) for entity in outcome.entities)
        for rel in outcome.relationships:
            keys.update((normalise_name(rel.source), normalise_name(rel.target)))
    keys.discard("")
    return keys


def widen_to_alias_groups(changed: set[str], stored: Sequence[StoredEntityKey], holder: dict[str, str]) -> set[str]:
    """`changed` with every key of the alias groups it touches (step 1 of the module docstring). A
    group whose head is not a one-word name of the kb (`holder`) folds nothing, before or after a
    delete, so it is not widened: its multi-word names only change with their own chunks."""
    multiword_by_head: dict[str, set[str]] = defaultdict(set)
    for entity in stored:
        head = head_word(entity.normalised_name)
        if head is not None:
            multiword_by_head[head].add(entity.normalised_name)
    # A titled form and the name it titles are one group too ("old mattias crane", "mattias crane").
    titled_by_base: dict[str, set[str]] = defaultdict(set)
    for key in holder:
        base = untitled(key)
        if base is not None:
            titled_by_base[base].add(key)

    def with_titled_forms(keys: set[str]) -> set[str]:
        bases = {untitled(key) or key for key in keys}
        return keys | {k for base in bases if base in titled_by_base for k in (base, *titled_by_base[base])}

    widened = with_titled_forms(set(changed))
    heads = {key if " " not in key else head_word(key) for key in widened}
    for head in heads:
        if head is not None and head in holder:
            widened.add(head)
            widened |= multiword_by_head.get(head, set())
    return with_titled_forms(widened)


def listing_removed_chunks(
    removed: Sequence[ExtractionOutcome], stored: Sequence[StoredEntityKey]
) -> tuple[list[str], list[str]]:
    """The ids of the stored entities and relationships that list the removed chunks as sources (their
    search markers are what a delete of those chunks can change). An entity lists a chunk only when
    the chunk's extraction names one of its keys, and a relationship's id follows from the keys of its
    ends, so the checkpoints tell both without a walk over the kb."""
    holder = _stored_plan(stored)
    entities = {entity_id(holder[key]) for key in extracted_keys(removed) if key in holder}
    return sorted(entities), sorted(_touched_relationships(removed, holder))


def _stored_plan(stored: Sequence[StoredEntityKey]) -> dict[str, str]:
    """key -> the key of the stored entity holding it (its own, or the name it was folded into)."""
    holder = {}
    for entity in stored:
        holder[entity.normalised_name] = entity.normalised_name
        for alias in entity.aliases:
            holder.setdefault(normalise_name(alias), entity.normalised_name)
    return holder


async def update_after_delete(
    deps: IngestionDeps, kb: str, deleted: DeletedChunks, progress: ProgressCallback
) -> LayerChange:
    """Update the stored entity layer for chunks already deleted (`deleted`: their checkpoints and the
    entity keys stored before); returns what was written and deleted. Marks the entity layer current."""
    started = time.perf_counter()
    removed, stored = deleted.removed, deleted.stored
    removed_chunks = {outcome.chunk_id for outcome in removed}
    holder = _stored_plan(stored)
    affected_keys = widen_to_alias_groups(extracted_keys(removed), stored, holder)
    old_entities = {entity_id(holder[key]) for key in affected_keys if key in holder}
    previous_sources = {
        e.id: e.source_chunk_ids for e in await deps.entity_layer.entities_by_id(kb, sorted(old_entities))
    }
    chunks = {c for ids in previous_sources.values() for c in ids} - removed_chunks
    # Read in batches and cut down at once: a hub's chunks are most of the kb's, and their whole
    # checkpoints (every name they list) would be millions of models.
    outcomes = []
    ordered = sorted(chunks)
    for start in range(0, len(ordered), _EXTRACTION_BATCH):
        batch = await deps.extractions.chunk_extractions(kb, ordered[start : start + _EXTRACTION_BATCH])
        outcomes += [_restricted(outcome, affected_keys) for outcome in batch]
        del batch
    total_chunks = await deps.extractions.extracted_chunk_count(kb)
    read_done = time.perf_counter()

    partial = merge_by_name(outcomes)
    present = {entity.normalised_name: entity.type for entity in partial.entities}
    group_plan = plan_aliases({key: type_ for key, type_ in present.items() if key in affected_keys})
    canonical = {key: group_plan.canonical[key] for key in group_plan.canonical}
    for key in present:
        if key not in affected_keys and holder.get(key, key) != key:
            canonical[key] = holder[key]
    plan = AliasPlan(canonical=canonical, address=frozenset(key for key in present if is_form_of_address(key)))
    folded = fold_aliases(partial, total_chunks, plan)
    new_ids = {entity_id(resolved) for key in affected_keys if (resolved := plan.resolve(key)) is not None}
    entities = [entity for entity in folded.entities if entity.id in new_ids]
    written = {entity.id for entity in entities}
    derived = [r for r in folded.relationships if r.source_id in written or r.target_id in written]
    old_relationships = await deps.entity_layer.relationships_of(kb, sorted(old_entities))
    touched = _touched_relationships(removed, holder) | _regrouped_relationships(derived, entities, stored)
    # The other relationships of the re-merged entities (a hub's thousands) have the same chunks,
    # descriptions and weight as stored; only their PMI changes, and it is read from the counts (step 5).
    relationships = [r for r in derived if r.id in touched or r.id not in old_relationships]
    merged = MergeResult(entities=entities, relationships=relationships)
    merge_done = time.perf_counter()

    names = {entity.id: entity.name for entity in stored} | {entity.id: entity.name for entity in entities}
    merged, generated = await _summarise(deps, kb, merged, names, progress)
    removed_entities = old_entities - written
    removed_relationships = old_relationships - {r.id for r in derived}
    await deps.entity_layer.update_entity_layer(
        kb,
        merged.entities,
        merged.relationships,
        sorted(removed_entities),
        sorted(removed_relationships),
        previous_sources,
    )
    write_done = time.perf_counter()
    await deps.entity_layer.set_pmi_chunks(kb, total_chunks)
    await deps.kbs.mark_entity_layer_current(kb)
    log.info(
        "incremental entity layer: %d keys re-merged from %d chunks (read %.1f s, merge %.1f s, "
        "summaries and write %.1f s: %d entities, %d relationships), N of the PMIs %d %.1f s",
        len(affected_keys),
        len(outcomes),
        read_done - started,
        merge_done - read_done,
        write_done - merge_done,
        len(merged.entities),
        len(merged.relationships),
        total_chunks,
        time.perf_counter() - write_done,
    )
    return LayerChange(
        entities=list(merged.entities),
        relationship_ids={r.id for r in merged.relationships},
        removed_entity_ids=removed_entities,
        removed_relationship_ids=removed_relationships,
        generated=generated,
    )


def _restricted(outcome: ExtractionOutcome, keys: set[str]) -> ExtractionOutcome:
    """The outcome with only the entities of `keys` and the relationships with an end among them: all
    that the merge of those keys reads (a hub's chunks also list thousands of names that are not re-merged)."""
    return outcome.model_copy(
        update={
            "entities": [e for e in outcome.entities if normalise_name(e.name) in keys],
            "relationships": [
                r for r in outcome.relationships if normalise_name(r.source) in keys or normalise_name(r.target) in keys
            ],
        }
    )


def _touched_relationships(removed: Sequence[ExtractionOutcome], holder: dict[str, str]) -> set[str]:
    """Ids, as stored, of the relationships the removed checkpoints contributed to."""
    ids = set()
    for outcome in removed:
        if outcome.failed:
            continue
        for rel in outcome.relationships:
            source, target = normalise_name(rel.source), normalise_name(rel.target)
            if source not in holder or target not in holder:
                continue
            source_id, target_id = entity_id(holder[source]), entity_id(holder[target])
            if rel.type == GENERIC_RELATIONSHIP_TYPE and target_id < source_id:
                source_id, target_id = target_id, source_id
            ids.add(relationship_id(source_id, target_id, rel.type))
    return ids


def _regrouped_relationships(
    relationships: Sequence[MergedRelationship], entities: Sequence[MergedEntity], stored: Sequence[StoredEntityKey]
) -> set[str]:
    """Relationships with an end whose set of folded names changed: theirs may now merge others."""
    before = {e.id: {normalise_name(alias) for alias in e.aliases} for e in stored}
    changed = {e.id for e in entities if {normalise_name(alias) for alias in e.aliases} != before.get(e.id)}
    return {r.id for r in relationships if r.source_id in changed or r.target_id in changed}


async def _summarise(
    deps: IngestionDeps, kb: str, merged: MergeResult, names: dict[str, str], progress: ProgressCallback
) -> tuple[MergeResult, int]:
    """As the full rebuild: reuse a stored summary whose descriptions are unchanged, else summarise.
    Relationship items are named `source -> target` with the stored names of ends not re-merged."""
    known = {
        **await deps.entity_layer.entity_state_of(kb, [e.id for e in merged.entities]),
        **await deps.entity_layer.relationship_state_of(kb, [r.id for r in merged.relationships]),
    }
    items = [(e.id, e.name, e.descriptions) for e in merged.entities]
    items += [
        (r.id, f"{names.get(r.source_id, r.source_id)} -> {names.get(r.target_id, r.target_id)}", r.descriptions)
        for r in merged.relationships
    ]
    summaries: dict[str, str] = {}
    to_generate = []
    for key, name, descriptions in items:
        if not needs_summary(descriptions):
            continue
        state = known.get(key)
        if state is not None and state.input_hash == descriptions_hash(descriptions) and state.output:
            summaries[key] = state.output
        else:
            to_generate.append((key, name, descriptions))
    summarizer = ProgressSummarizer(deps.tasks.summarizer, len(to_generate), progress)
    generated, failed = await summarize_all(to_generate, summarizer, concurrency=deps.settings.llm_concurrency)
    return apply_summaries(merged, summaries | generated, failed), len(to_generate)
