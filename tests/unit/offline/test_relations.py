"""Relationship types from a verb between two names, and their merge into one per pair."""

from __future__ import annotations

from driftrag.ingestion.merge import entity_id, merge_extractions
from driftrag.models.graph import ExtractedEntity, ExtractedRelationship, ExtractionOutcome
from driftrag.offline.ingestion.extractor import OfflineGraphExtractor
from driftrag.offline.ingestion.refine import refine_graph
from driftrag.offline.nlp import LanguageResources
from driftrag.offline.relations import ENGLISH, FRENCH, RELATIONSHIP_TYPES, relation_type


def _types(resources: LanguageResources, text: str) -> dict[tuple[str, str], tuple[str, str | None]]:
    outcome = OfflineGraphExtractor(resources, window=0).extract_text("c", text)
    return {(r.source, r.target): (r.type, r.original_type) for r in outcome.relationships}


def test_a_verb_between_two_names_types_their_relationship_in_the_text_s_direction(
    resources: LanguageResources,
) -> None:
    text = (
        "Alice asked the Caterpillar a question. The Gryphon followed the Mock Turtle. "
        "'Come,' said the Hatter to the Dormouse. Captain Voss gave Jory Fenwick the ledger. "
        "Alice and Dinah sat still."
    )
    assert _types(resources, text) == {
        ("Alice", "Caterpillar"): ("ASKS", "asked"),
        ("Gryphon", "Mock Turtle"): ("FOLLOWS", "followed"),
        ("Hatter", "Dormouse"): ("SPEAKS_TO", "said to"),
        ("Captain Voss", "Jory Fenwick"): ("GIVES", "gave"),
        ("Alice", "Dinah"): ("RELATED_TO", None),  # no verb between them: the fallback
    }


def test_negations_other_names_and_distance_leave_the_fallback(resources: LanguageResources) -> None:
    text = (
        "The Gryphon did not follow the Mock Turtle. "
        "Alice sat still as the Hatter, with a great deal of noise and fuss, followed the Dormouse."
    )
    types = {pair: type_ for pair, (type_, _) in _types(resources, text).items()}
    assert set(types.values()) == {"RELATED_TO"}


def test_verb_tables_of_english_and_french() -> None:
    assert relation_type(["spoke", "to", "the"], ENGLISH) == ("SPEAKS_TO", "spoke to")
    assert relation_type(["lived", "in"], ENGLISH) == ("LIVES_IN", "lived in")
    assert relation_type(["lived"], ENGLISH) is None  # the preposition is part of the form
    assert relation_type(["in", "the"], ENGLISH, target_is_place=True) == ("LOCATED_IN", "in")
    assert relation_type(["in", "the"], ENGLISH) is None
    assert relation_type(["to", "the"], ENGLISH, before=["said"]) == ("SPEAKS_TO", "said to")
    assert relation_type(["couldn't", "help"], ENGLISH) is None
    assert relation_type(["parla", "à", "la"], FRENCH) == ("SPEAKS_TO", "parla à")
    assert relation_type(["suivit", "le"], FRENCH) == ("FOLLOWS", "suivit")
    assert relation_type(["ne", "suivit", "pas", "le"], FRENCH) is None
    assert relation_type(["asked"], None) is None  # a language without a table
    for table in (ENGLISH, FRENCH):
        assert {type_ for entries in table.verbs.values() for type_, _ in entries} <= set(RELATIONSHIP_TYPES)


def _outcome(chunk_id: str, *relationships: tuple[str, str, str, int]) -> ExtractionOutcome:
    names = {name for source, target, _, _ in relationships for name in (source, target)}
    return ExtractionOutcome(
        chunk_id=chunk_id,
        entities=[ExtractedEntity(name=name, type="PERSON") for name in sorted(names)],
        relationships=[
            ExtractedRelationship(source=s, target=t, type=type_, strength=w, description=f"{s} {type_} {t} {chunk_id}")
            for s, t, type_, w in relationships
        ],
    )


def test_a_pair_keeps_one_relationship_with_its_verb_type_and_whole_count() -> None:
    outcomes = [
        _outcome("c1", ("Alice", "Hatter", "RELATED_TO", 3)),
        _outcome("c2", ("Hatter", "Alice", "SPEAKS_TO", 1)),
        _outcome("c3", ("Alice", "Hatter", "ASKS", 1), ("Alice", "Dinah", "RELATED_TO", 1)),
        _outcome("c4", ("Hatter", "Alice", "SPEAKS_TO", 1), ("Alice", "Dinah", "RELATED_TO", 1)),
    ]
    merged = merge_extractions(outcomes)
    assert len(merged.relationships) == 4  # the merge keeps each type and direction apart
    refined = refine_graph(merged, 4, min_entity_chunks=1, min_cooccurrences=2)
    by_pair = {frozenset((r.source_id, r.target_id)): r for r in refined.relationships}
    hatter = by_pair[frozenset((entity_id("alice"), entity_id("hatter")))]
    # SPEAKS_TO (weight 2) beats ASKS (1), and a verb type beats the heavier co-occurrence fallback.
    assert (hatter.type, hatter.source_id, hatter.target_id) == ("SPEAKS_TO", entity_id("hatter"), entity_id("alice"))
    assert hatter.source_chunk_ids == ["c1", "c2", "c3", "c4"]
    assert len(hatter.descriptions) == 4
    assert by_pair[frozenset((entity_id("alice"), entity_id("dinah")))].type == "RELATED_TO"
    assert len(refined.relationships) == 2
