"""The offline extractor on a crafted chunk: entities, provenance descriptions, co-occurrences."""

from __future__ import annotations

from driftrag.ingestion.tasks import GraphExtractor
from driftrag.models.graph import GENERIC_RELATIONSHIP_TYPE, Chunk, ExampleNode, ExtractConfig
from driftrag.offline.ingestion.extractor import DESCRIPTION_WORDS, OfflineGraphExtractor, excerpt
from driftrag.offline.nlp import LanguageResources

CHUNK = (
    "The Gryphon sat up and rubbed its eyes. 'What fun!' said the Gryphon to the Mock Turtle.\n\n"
    "The Mock Turtle sighed deeply. Alice watched the Mock Turtle and the Gryphon for a while.\n\n"
    "Far away, the Queen was shouting in the garden."
)


def _chunk(text: str = CHUNK, **fields) -> Chunk:
    return Chunk(
        id="chunk-1", document_id="document-1", index=0, text=text, n_tokens=60, start_char=0, end_char=0, **fields
    )


def _relationships(outcome) -> dict[tuple[str, str], object]:
    return {tuple(sorted((r.source, r.target))): r for r in outcome.relationships}


async def test_entities_carry_their_sentences_as_description(resources: LanguageResources) -> None:
    extractor = OfflineGraphExtractor(resources, window=0)
    assert isinstance(extractor, GraphExtractor)
    outcome = await extractor.extract(_chunk(), ExtractConfig())
    entities = {e.name: e for e in outcome.entities}
    assert set(entities) == {"Gryphon", "Mock Turtle", "Alice", "Queen"}
    assert entities["Gryphon"].type == "PERSON"  # "said the Gryphon"
    assert entities["Gryphon"].description == (
        "The Gryphon sat up and rubbed its eyes. 'What fun!' said the Gryphon to the Mock Turtle."
    )
    assert entities["Queen"].description == "Far away, the Queen was shouting in the garden."
    assert not outcome.failed and outcome.warnings == []


async def test_cooccurrences_are_counted_per_sentence_and_window(resources: LanguageResources) -> None:
    same_sentence = _relationships(OfflineGraphExtractor(resources, window=0).extract_text("c", CHUNK))
    assert set(same_sentence) == {("Gryphon", "Mock Turtle"), ("Alice", "Gryphon"), ("Alice", "Mock Turtle")}
    pair = same_sentence[("Gryphon", "Mock Turtle")]
    # "said the Gryphon to the Mock Turtle" gives the type (offline.relations), in the text's direction.
    assert (pair.source, pair.type, pair.target) == ("Gryphon", "SPEAKS_TO", "Mock Turtle")
    assert same_sentence[("Alice", "Gryphon")].type == GENERIC_RELATIONSHIP_TYPE
    assert pair.strength == 2  # two sentences name both
    assert pair.description == (
        "'What fun!' said the Gryphon to the Mock Turtle. Alice watched the Mock Turtle and the Gryphon for a while."
    )
    assert same_sentence[("Alice", "Gryphon")].strength == 1

    # With a window of one sentence, each sentence also pairs with the next one (across paragraphs):
    # anchors 0 (Gryphon, then Mock Turtle in 1), 1, 2 (Mock Turtle, then Gryphon in 3) and 3 count.
    windowed = _relationships(OfflineGraphExtractor(resources, window=1).extract_text("c", CHUNK))
    assert windowed[("Gryphon", "Mock Turtle")].strength == 4
    assert windowed[("Gryphon", "Mock Turtle")].description == (
        "The Gryphon sat up and rubbed its eyes. 'What fun!' said the Gryphon to the Mock Turtle."
    )
    assert {("Alice", "Queen"), ("Gryphon", "Queen"), ("Mock Turtle", "Queen")} <= set(windowed)
    assert not any("Queen" in pair for pair in same_sentence)


async def test_strength_is_capped_at_ten(resources: LanguageResources) -> None:
    text = " ".join(f"Alice saw the Hatter {n} times." for n in range(15))
    rel = OfflineGraphExtractor(resources, window=0).extract_text("c", text).relationships[0]
    assert rel.strength == 10


def test_descriptions_are_cut_to_the_word_budget() -> None:
    long = " ".join(["word"] * 100)
    assert len(excerpt([long]).split()) == DESCRIPTION_WORDS + 1 and excerpt([long]).endswith("…")
    assert excerpt(["Short one.", "Short two."]) == "Short one. Short two."


async def test_headings_are_not_mined(resources: LanguageResources) -> None:
    outcome = OfflineGraphExtractor(resources).extract_text("c", "# The Tollhouse Archive\n\nIt rained.")
    assert outcome.entities == []


async def test_example_nodes_are_found_and_model_only_guidance_is_reported(resources: LanguageResources) -> None:
    config = ExtractConfig(nodes=[ExampleNode(name="lodestone")], custom_instructions="Find magnets.", tags=["OWNS"])
    outcome = await OfflineGraphExtractor(resources).extract(_chunk("Jory Fenwick held the lodestone."), config)
    assert {e.name for e in outcome.entities} == {"Jory Fenwick", "lodestone"}
    assert outcome.warnings == [
        "offline extraction ignores the extract config's custom instructions, relationship tags"
    ]


async def test_skipped_chunks_never_reach_the_extractor(resources: LanguageResources) -> None:
    extractor = OfflineGraphExtractor(resources)
    skipped = await extractor.extract(_chunk(extractable=False, skip_reason="image_only"), ExtractConfig())
    assert skipped.skipped_reason == "image_only" and skipped.entities == []
    disabled = await extractor.extract(_chunk(), ExtractConfig(enabled=False))
    assert disabled.skipped_reason == "extraction disabled"


async def test_french_chunks(resources: LanguageResources) -> None:
    text = "« Bonjour », dit la Capitaine Morel au Père Anselme. Le Père Anselme sourit à la Capitaine Morel."
    outcome = OfflineGraphExtractor(resources).extract_text("c", text)
    assert {(e.name, e.type) for e in outcome.entities} == {("Capitaine Morel", "PERSON"), ("Père Anselme", "PERSON")}
    assert [r.strength for r in outcome.relationships] == [2]


async def test_sentences_cut_by_the_chunk_boundaries_are_the_last_resort(resources: LanguageResources) -> None:
    text = (
        "and then the Gryphon left the beach. The Gryphon came back at noon. The Gryphon slept. "
        "Later the Gryphon and the Mock Turtle went to the"
    )
    entities = {e.name: e for e in OfflineGraphExtractor(resources).extract_text("c", text).entities}
    assert entities["Gryphon"].description == "The Gryphon came back at noon. The Gryphon slept."
    assert entities["Mock Turtle"].description == "Later the Gryphon and the Mock Turtle went to the"
