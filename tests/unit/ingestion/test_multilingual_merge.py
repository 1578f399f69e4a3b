"""French and Russian extractions merge: scripted answers naming the same entity in base and inflected
forms, with and without articles, give one entity; foreign type words map to the closed list."""

import json

from driftrag.ingestion.extraction import normalise_entity_type, parse_extraction
from driftrag.ingestion.merge import merge_extractions, normalise_name
from driftrag.models.graph import ExtractionOutcome


def _scripted(
    chunk_id: str, entities: list[tuple[str, str]], relationships: list[tuple[str, str]]
) -> ExtractionOutcome:
    """A model's raw JSON answer for one chunk, parsed the way ingestion parses it."""
    raw = json.dumps(
        {
            "entities": [{"name": n, "type": t, "description": f"{n} ({chunk_id})"} for n, t in entities],
            "relationships": [
                {"source": s, "target": o, "type": "KNOWS", "description": "", "strength": 5} for s, o in relationships
            ],
        },
        ensure_ascii=False,
    )
    payload, _ = parse_extraction(raw, ["KNOWS"])
    return ExtractionOutcome(chunk_id=chunk_id, entities=payload.entities, relationships=payload.relationships)


def test_russian_inflected_names_merge_into_one_entity() -> None:
    merged = merge_extractions(
        [
            _scripted("chunk-1", [("Анна", "PERSON"), ("Иван", "персонаж")], [("Анна", "Иван")]),
            _scripted("chunk-2", [("Анну", "PERSON"), ("Ивана", "ЧЕЛОВЕК")], [("Анну", "Ивана")]),
            _scripted("chunk-3", [("Анны", "PERSON"), ("Москва", "место"), ("Москвы", "LOCATION")], []),
        ]
    )
    by_key = {normalise_name(e.name): e for e in merged.entities}
    assert len(merged.entities) == 3, [e.name for e in merged.entities]
    anna = by_key[normalise_name("Анна")]
    assert sorted(anna.source_chunk_ids) == ["chunk-1", "chunk-2", "chunk-3"]
    assert {e.type for e in merged.entities} == {"PERSON", "LOCATION"}
    assert len(merged.relationships) == 1


def test_french_names_with_articles_merge_into_one_entity() -> None:
    merged = merge_extractions(
        [
            _scripted(
                "chunk-1",
                [("la Reine", "personnage"), ("Lapin Blanc", "PERSON"), ("Île", "LOCATION")],
                [("la Reine", "Lapin Blanc")],
            ),
            _scripted("chunk-2", [("Reine", "PERSON"), ("le Lapin Blanc", "PERSON")], []),
            _scripted("chunk-3", [("l'Île", "lieu")], []),
        ]
    )
    assert sorted(len(e.source_chunk_ids) for e in merged.entities) == [2, 2, 2]
    assert {normalise_name(e.name) for e in merged.entities} == {"reine", "lapin blanc", "île"}


def test_names_without_a_case_ending_or_article_are_left_alone() -> None:
    assert normalise_name("Ли") == "ли"  # too short to carry an ending
    assert normalise_name("Петров") == normalise_name("Петрова") == normalise_name("Петровым")
    assert normalise_name("Lena") != normalise_name("Len")  # Latin script is never stemmed
    assert normalise_name("La") == "la"


def test_entity_types_in_other_languages_map_to_the_closed_list() -> None:
    assert normalise_entity_type("Personnage") == "PERSON"
    assert normalise_entity_type("организация") == "ORGANIZATION"
    assert normalise_entity_type("существо") == "OTHER"  # an unlisted Cyrillic word: OTHER, not UNKNOWN
    assert normalise_entity_type(None) == "UNKNOWN"
    assert normalise_entity_type("person") == "PERSON"
