"""`OfflineGraphRefiner`: corpus-level thresholds and PMI-normalised weights for the offline graph.

Per-chunk extraction cannot tell a recurring name from a one-off capitalised word, nor a meaningful
pair from two names that happen to share a sentence; the whole merged graph can:

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

from driftrag.models.graph import MergedRelationship, MergeResult

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
    for rel in merged.relationships:
        if rel.source_id not in kept or rel.target_id not in kept:
            continue
        if rel.weight < min_cooccurrences:
            dropped_rare += 1
            continue
        weight = offline_weight(rel.weight, normalised_pmi(rel, extracted_chunks))
        relationships.append(rel.model_copy(update={"weight": round(weight, 4)}))
    dropped_entities = len(merged.entities) - len(entities)
    dropped_orphans = len(merged.relationships) - len(relationships) - dropped_rare
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
