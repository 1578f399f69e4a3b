"""PMI from chunk counts (merge) and the offline refiner's thresholds and weights, computed by hand."""

from __future__ import annotations

import math

import pytest

from driftrag.ingestion.merge import extracted_chunk_count, merge_extractions
from driftrag.ingestion.tasks import GraphRefiner
from driftrag.models.graph import ExtractedEntity, ExtractedRelationship, ExtractionOutcome, pmi
from driftrag.offline.ingestion.refine import EPSILON, OfflineGraphRefiner, normalised_pmi, refine_graph


def _outcome(chunk_id: str, names: list[str], pairs: list[tuple[str, str, int]] = (), **fields) -> ExtractionOutcome:
    return ExtractionOutcome(
        chunk_id=chunk_id,
        entities=[ExtractedEntity(name=n, description=f"{n} in {chunk_id}") for n in names],
        relationships=[ExtractedRelationship(source=a, target=b, strength=s) for a, b, s in pairs],
        **fields,
    )


# Four extracted chunks; a failed and a skipped one do not count in N.
OUTCOMES = [
    _outcome("c1", ["Alice", "Gryphon"], [("Alice", "Gryphon", 3)]),
    _outcome("c2", ["Alice", "Gryphon"], [("Gryphon", "Alice", 2)]),
    _outcome("c3", ["Alice", "Mock Turtle"], [("Alice", "Mock Turtle", 1)]),
    _outcome("c4", ["Mock Turtle", "Dodo"]),
    ExtractionOutcome(chunk_id="c5", failed=True, error="bad"),
    ExtractionOutcome(chunk_id="c6", skipped_reason="empty"),
]


def _by_names(merged):
    names = {e.id: e.name for e in merged.entities}
    return {tuple(sorted((names[r.source_id], names[r.target_id]))): r for r in merged.relationships}


def test_pmi_is_log2_of_observed_over_expected_chunk_cooccurrence() -> None:
    assert extracted_chunk_count(OUTCOMES) == 4
    rels = _by_names(merge_extractions(OUTCOMES))
    # Alice in 3 of 4 chunks, Gryphon in 2, together in 2: log2(2·4 / (3·2)) = log2(4/3).
    assert rels[("Alice", "Gryphon")].pmi == pytest.approx(math.log2(4 / 3))
    # Mock Turtle in 2 chunks, with Alice in 1: log2(1·4 / (3·2)) = log2(2/3) < 0.
    assert rels[("Alice", "Mock Turtle")].pmi == pytest.approx(math.log2(2 / 3))
    assert rels[("Alice", "Gryphon")].weight == 5  # summed strengths, both directions merged
    assert pmi(0, 1, 1, 4) is None and pmi(1, 1, 1, 0) is None


def test_the_refiner_weights_counts_by_normalised_pmi() -> None:
    merged = merge_extractions(OUTCOMES)
    refined = refine_graph(merged, 4, min_entity_chunks=1, min_cooccurrences=1)
    rels = _by_names(refined)
    # npmi = pmi / -log2 p(a,b): p = 2/4, so npmi = log2(4/3) / 1; weight = 5 · npmi.
    assert rels[("Alice", "Gryphon")].weight == pytest.approx(5 * math.log2(4 / 3), abs=1e-3)
    # Below-chance pair: npmi < 0, floored at EPSILON.
    assert rels[("Alice", "Mock Turtle")].weight == pytest.approx(1 * EPSILON)
    # The PMI itself is kept for graph views.
    assert rels[("Alice", "Gryphon")].pmi == pytest.approx(math.log2(4 / 3))


def test_normalised_pmi_edge_cases() -> None:
    rel = _by_names(merge_extractions(OUTCOMES))[("Alice", "Gryphon")]
    assert normalised_pmi(rel, 2) == 1.0  # the pair is in every chunk
    assert normalised_pmi(rel.model_copy(update={"pmi": None}), 4) is None
    assert -1.0 <= normalised_pmi(rel.model_copy(update={"pmi": -50.0}), 4) <= 1.0


def test_rare_single_word_entities_go_with_their_relationships_multi_word_names_stay() -> None:
    merged = merge_extractions(OUTCOMES)
    refined = refine_graph(merged, 4, min_entity_chunks=2, min_cooccurrences=1)
    # Dodo is in one chunk only; the others in two or three.
    assert sorted(e.name for e in refined.entities) == ["Alice", "Gryphon", "Mock Turtle"]
    single = merge_extractions([_outcome("c1", ["Cinder Point Lighthouse", "Harbourmaster"])])
    kept = refine_graph(single, 1, min_entity_chunks=2, min_cooccurrences=1)
    assert [e.name for e in kept.entities] == ["Cinder Point Lighthouse"]
    assert "1 single-word entities found in fewer than 2 chunks dropped" in kept.warnings

    strict = refine_graph(merged, 4, min_entity_chunks=3, min_cooccurrences=1)
    assert sorted(e.name for e in strict.entities) == ["Alice", "Mock Turtle"]
    assert [tuple(sorted(k)) for k in _by_names(strict)] == [("Alice", "Mock Turtle")]
    assert "1 relationships of dropped entities dropped" in strict.warnings


def test_relationships_below_the_cooccurrence_minimum_are_dropped() -> None:
    merged = merge_extractions(OUTCOMES)
    refined = refine_graph(merged, 4, min_entity_chunks=1, min_cooccurrences=2)
    assert list(_by_names(refined)) == [("Alice", "Gryphon")]  # counted 3 + 2; Alice–Mock Turtle only 1
    assert "1 relationships co-occurring fewer than 2 times dropped" in refined.warnings
    # Entities stay even when they lose their relationships.
    assert len(refined.entities) == len(merged.entities)


async def test_the_refiner_implements_the_protocol() -> None:
    refiner = OfflineGraphRefiner(min_entity_chunks=1, min_cooccurrences=1)
    assert isinstance(refiner, GraphRefiner)
    merged = merge_extractions(OUTCOMES)
    assert await refiner.refine(merged, 4) == refine_graph(merged, 4, min_entity_chunks=1, min_cooccurrences=1)
