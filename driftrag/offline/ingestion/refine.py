"""`OfflineGraphRefiner`: corpus-level thresholds and PMI-normalised weights for the offline graph.

Per-chunk extraction cannot tell a recurring name from a one-off capitalised word, nor a meaningful
pair from two names that happen to share a sentence; the whole merged graph can:

- the relationships of one pair of entities become one: extraction types a pair per chunk (a verb
  between the names, else `RELATED_TO`), so a pair may carry several types over the kb; the verb
  type with the most weight wins (ties: alphabetical), `RELATED_TO` only when no chunk gave a verb
  (it is the fallback: it only says that the names meet, which the verb type says too), in the
  direction of its heaviest relationship, and the pair keeps all weights, chunks and descriptions
  (the PMI is recomputed from the united chunks). The thresholds below then see the pair's whole
  count, as they did when every relationship was a co-occurrence;
- entities found in fewer than `min_entity_chunks` chunks are dropped, unless their name has two or
  more words (multi-word capitalised spans, titled names such as "Captain Voss" or "Father William",
  are rarely accidental); their relationships go with them;
- relationships whose co-occurrence count over the kb is below `min_cooccurrences` are dropped; the
  count is the merged weight (each chunk adds its in-chunk count, capped at 10);
- the weight Leiden clusters on becomes `count × max(npmi, EPSILON)`, where npmi = pmi / −log2 p(a,b)
  is the PMI normalised to [−1, 1] (p(a,b) = the pair's chunks / N; npmi = 1 when the pair is in
  every chunk). So a pair that meets often *and* more than chance predicts weighs most, while a hub
  such as a narrator, who co-occurs with everyone, keeps weak links instead of pulling every
  community around itself. The PMI itself (`MergedRelationship.pmi`, from `merge`) is kept as is.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

from driftrag.ingestion.merge import relationship_id
from driftrag.models.graph import GENERIC_RELATIONSHIP_TYPE, MergedRelationship, MergeResult, pmi

DEFAULT_MIN_ENTITY_CHUNKS = 2
DEFAULT_MIN_COOCCURRENCES = 2
EPSILON = 0.05  # floor of the normalised PMI in the weight, so a below-chance pair still links weakly


def normalised_pmi(relationship: MergedRelationship, total_chunks: int) -> float | None:
    """npmi in [−1, 1] from the merged PMI and the pair's chunk share; None without a PMI."""
    pair = len(relationship.source_chunk_ids)
    if relationship.pmi is None or total_chunks <= 0 or pair <= 0:
        return None
    p_pair = min(1.0, pair / total_chunks)
    if p_pair >= 1.0:
        return 1.0
    return max(-1.0, min(1.0, relationship.pmi / -math.log2(p_pair)))


def offline_weight(count: float, npmi: float | None) -> float:
    """count × max(npmi, EPSILON); the count alone when there is no PMI."""
    return count if npmi is None else count * max(npmi, EPSILON)


def is_multiword_name(name: str) -> bool:
    return len(name.split()) >= 2


def one_per_pair(merged: MergeResult, total_chunks: int) -> list[MergedRelationship]:
    """The relationships of each pair of entities united under one type (module docstring)."""
    pairs: dict[frozenset[str], list[MergedRelationship]] = defaultdict(list)
    for rel in merged.relationships:
        pairs[frozenset((rel.source_id, rel.target_id))].append(rel)
    chunks = {entity.id: len(entity.source_chunk_ids) for entity in merged.entities}
    united = []
    for group in pairs.values():
        if len(group) == 1:
            united.append(group[0])
            continue
        united.append(_unite(group, chunks, total_chunks))
    return sorted(united, key=lambda r: r.id)


def _unite(group: Sequence[MergedRelationship], chunks: dict[str, int], total_chunks: int) -> MergedRelationship:
    weights: dict[str, float] = defaultdict(float)
    for rel in group:
        weights[rel.type] += rel.weight
    type_ = min(weights, key=lambda t: (t == GENERIC_RELATIONSHIP_TYPE, -weights[t], t))
    lead = max((rel for rel in group if rel.type == type_), key=lambda rel: (rel.weight, rel.id))
    source_id, target_id = lead.source_id, lead.target_id
    if type_ == GENERIC_RELATIONSHIP_TYPE and target_id < source_id:
        source_id, target_id = target_id, source_id
    descriptions: list[str] = []
    for rel in sorted(group, key=lambda r: r is not lead):
        descriptions += [d for d in rel.descriptions if d not in descriptions]
    sources = sorted({c for rel in group for c in rel.source_chunk_ids})
    known = source_id in chunks and target_id in chunks
    return lead.model_copy(
        update={
            "id": relationship_id(source_id, target_id, type_),
            "source_id": source_id,
            "target_id": target_id,
            "original_types": sorted({t for rel in group for t in rel.original_types}),
            "descriptions": descriptions,
            "weight": sum(rel.weight for rel in group),
            "source_chunk_ids": sources,
            "pmi": pmi(len(sources), chunks[source_id], chunks[target_id], total_chunks) if known else None,
        }
    )


def refine_graph(
    merged: MergeResult,
    extracted_chunks: int,
    *,
    min_entity_chunks: int = DEFAULT_MIN_ENTITY_CHUNKS,
    min_cooccurrences: int = DEFAULT_MIN_COOCCURRENCES,
) -> MergeResult:
    """The thresholds and weights of the module docstring, applied to a fresh merge."""
    entities = [e for e in merged.entities if len(e.source_chunk_ids) >= min_entity_chunks or is_multiword_name(e.name)]
    kept = {e.id for e in entities}
    relationships = []
    dropped_rare = 0
    pairs = one_per_pair(merged, extracted_chunks)
    for rel in pairs:
        if rel.source_id not in kept or rel.target_id not in kept:
            continue
        if rel.weight < min_cooccurrences:
            dropped_rare += 1
            continue
        weight = offline_weight(rel.weight, normalised_pmi(rel, extracted_chunks))
        relationships.append(rel.model_copy(update={"weight": round(weight, 4)}))
    dropped_entities = len(merged.entities) - len(entities)
    dropped_orphans = len(pairs) - len(relationships) - dropped_rare
    warnings = list(merged.warnings)
    if dropped_entities:
        warnings.append(
            f"{dropped_entities} single-word entities found in fewer than {min_entity_chunks} chunks dropped"
        )
    if dropped_orphans:
        warnings.append(f"{dropped_orphans} relationships of dropped entities dropped")
    if dropped_rare:
        warnings.append(f"{dropped_rare} relationships co-occurring fewer than {min_cooccurrences} times dropped")
    return MergeResult(
        entities=entities, relationships=relationships, warnings=warnings, total_chunks=merged.total_chunks
    )


class OfflineGraphRefiner:
    """`GraphRefiner` of the offline mode (module docstring)."""

    def __init__(
        self,
        *,
        min_entity_chunks: int = DEFAULT_MIN_ENTITY_CHUNKS,
        min_cooccurrences: int = DEFAULT_MIN_COOCCURRENCES,
    ) -> None:
        self._min_entity_chunks = min_entity_chunks
        self._min_cooccurrences = min_cooccurrences

    async def refine(self, merged: MergeResult, extracted_chunks: int) -> MergeResult:
        return refine_graph(
            merged,
            extracted_chunks,
            min_entity_chunks=self._min_entity_chunks,
            min_cooccurrences=self._min_cooccurrences,
        )
