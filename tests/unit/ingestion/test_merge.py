import asyncio

from driftrag.errors import ModelError
from driftrag.ingestion.merge import (
    apply_summaries,
    entity_id,
    merge_extractions,
    needs_summary,
    normalise_name,
    start_summaries,
    summarize_all,
    summary_items,
)
from driftrag.models.graph import ExtractedEntity, ExtractedRelationship, ExtractionOutcome


def _outcome(chunk_id, entities=(), relationships=(), failed=False):
    return ExtractionOutcome(
        chunk_id=chunk_id,
        entities=[ExtractedEntity(name=n, type=t, description=d) for n, t, d in entities],
        relationships=[
            ExtractedRelationship(source=s, target=o, type=ty, description=d, strength=w, original_type=ty.lower())
            for s, o, ty, d, w in relationships
        ],
        failed=failed,
    )


def test_normalise_name():
    assert normalise_name("Alice's") == "alice"
    assert normalise_name("ALICE’s") == "alice"
    assert normalise_name('"Alice"') == "alice"
    assert normalise_name("`White   Rabbit`") == "white rabbit"
    assert normalise_name("The Queen") == normalise_name("queen") == "queen"
    assert normalise_name("the") == "the"
    assert normalise_name("Ｃａｆé") == "café"


def test_merge_across_chunks_with_possessives_case_and_quotes():
    outcomes = [
        _outcome("chunk-b", [("Alice", "PERSON", "A girl."), ("White Rabbit", "ANIMAL", "Late.")]),
        _outcome("chunk-a", [("alice's", "PERSON", "Curious."), ('"Alice"', "UNKNOWN", "A girl.")]),
        _outcome("chunk-c", [("ALICE", "CHARACTER", "Grows.")]),
    ]
    merged = merge_extractions(outcomes)
    alice = next(e for e in merged.entities if e.normalised_name == "alice")
    assert alice.id == entity_id("alice")
    assert alice.name == '"Alice"' or alice.name == "Alice"
    assert alice.source_chunk_ids == ["chunk-a", "chunk-b", "chunk-c"]
    assert alice.descriptions == ["A girl.", "Curious.", "Grows."]
    assert alice.type in {"CHARACTER", "PERSON"}
    assert [e.id for e in merged.entities] == sorted(e.id for e in merged.entities)


def test_display_name_is_most_frequent_form_then_alphabetical():
    merged = merge_extractions(
        [
            _outcome("c1", [("the Queen", "PERSON", "")]),
            _outcome("c2", [("Queen", "PERSON", "")]),
            _outcome("c3", [("Queen", "PERSON", "")]),
            _outcome("c4", [("The Queen", "PERSON", "")]),
        ]
    )
    assert [e.name for e in merged.entities] == ["Queen"]
    tie = merge_extractions([_outcome("c1", [("Hatter", "PERSON", "")]), _outcome("c2", [("HATTER", "PERSON", "")])])
    assert tie.entities[0].name == "HATTER"


def test_relationship_weights_summed_and_original_types_kept():
    outcomes = [
        _outcome(
            "c1",
            [("Alice", "PERSON", ""), ("Rabbit", "ANIMAL", "")],
            [("Alice", "Rabbit", "FOLLOWS", "Alice follows.", 6)],
        ),
        _outcome(
            "c2",
            [("Alice", "PERSON", ""), ("Rabbit", "ANIMAL", "")],
            [("alice", "the Rabbit's", "FOLLOWS", "Chases.", 3)],
        ),
    ]
    merged = merge_extractions(outcomes)
    (rel,) = merged.relationships
    assert rel.weight == 9
    assert rel.descriptions == ["Alice follows.", "Chases."]
    assert rel.original_types == ["follows"]
    assert rel.source_chunk_ids == ["c1", "c2"]
    assert (rel.source_id, rel.target_id) == (entity_id("alice"), entity_id("rabbit"))


def test_related_to_is_undirected_typed_relationships_are_not():
    outcomes = [
        _outcome("c1", [], [("A", "B", "RELATED_TO", "", 2), ("B", "A", "RELATED_TO", "", 3)]),
        _outcome("c2", [], [("A", "B", "FOLLOWS", "", 1), ("B", "A", "FOLLOWS", "", 1)]),
    ]
    merged = merge_extractions(outcomes)
    related = [r for r in merged.relationships if r.type == "RELATED_TO"]
    follows = [r for r in merged.relationships if r.type == "FOLLOWS"]
    assert len(related) == 1 and related[0].weight == 5
    assert len(follows) == 2


def test_missing_endpoints_are_created_as_unknown_with_the_relationship_description():
    merged = merge_extractions(
        [_outcome("c1", [("Alice", "PERSON", "A girl.")], [("Alice", "Dinah", "OWNS", "Alice's cat Dinah.", 7)])]
    )
    dinah = next(e for e in merged.entities if e.normalised_name == "dinah")
    assert dinah.type == "UNKNOWN"
    assert dinah.descriptions == ["Alice's cat Dinah."]
    assert dinah.source_chunk_ids == ["c1"]
    alice = next(e for e in merged.entities if e.normalised_name == "alice")
    assert alice.descriptions == ["A girl."]


def test_failed_outcomes_and_self_loops_contribute_nothing():
    merged = merge_extractions(
        [
            _outcome("c1", [("Ghost", "PERSON", "")], failed=True),
            _outcome("c2", [], [("Alice", "alice's", "IS", "", 5)]),
        ]
    )
    assert merged.entities == [] and merged.relationships == []
    assert merged.warnings == ["1 relationships with an empty or identical endpoint dropped"]


def test_merge_is_deterministic_and_order_independent_in_ids():
    outcomes = [
        _outcome("c1", [("Alice", "PERSON", "x")], [("Alice", "Rabbit", "RELATED_TO", "r", 4)]),
        _outcome("c2", [("Rabbit", "ANIMAL", "y")], [("Rabbit", "Hatter", "RELATED_TO", "s", 2)]),
    ]
    forward, backward = merge_extractions(outcomes), merge_extractions(outcomes[::-1])
    assert [e.id for e in forward.entities] == [e.id for e in backward.entities]
    assert [(r.id, r.weight) for r in forward.relationships] == [(r.id, r.weight) for r in backward.relationships]
    assert merge_extractions(outcomes) == forward


def test_needs_summary():
    assert not needs_summary([])
    assert not needs_summary(["one"])
    assert not needs_summary(["same", "same ", ""])
    assert needs_summary(["one", "two"])


class _CountingSummarizer:
    def __init__(self):
        self.calls = []

    async def summarize(self, name, descriptions):
        self.calls.append(name)
        return f"{name}: " + " + ".join(descriptions)


async def test_summarize_all_calls_only_when_needed():
    merged = merge_extractions(
        [
            _outcome(
                "c1", [("Alice", "PERSON", "x"), ("Rabbit", "ANIMAL", "late")], [("Alice", "Rabbit", "FOLLOWS", "r", 4)]
            ),
            _outcome("c2", [("Alice", "PERSON", "y")]),
        ]
    )
    summarizer = _CountingSummarizer()
    summaries, failed = await summarize_all(summary_items(merged), summarizer, concurrency=2)
    assert summarizer.calls == ["Alice"]
    assert failed == set()
    assert summaries[entity_id("alice")] == "Alice: x + y"
    assert summaries[entity_id("rabbit")] == "late"
    assert summaries[merged.relationships[0].id] == "r"
    applied = apply_summaries(merged, summaries)
    assert all(e.summary for e in applied.entities)


class _FailingSummarizer:
    """Fails (as a model past its retries does) for the names given, summarises the others."""

    def __init__(self, failing: set[str]) -> None:
        self.failing = failing

    async def summarize(self, name, descriptions):
        if name in self.failing:
            raise ModelError(f"the model failed on {name}")
        return f"{name}: " + " + ".join(descriptions)


async def test_a_summary_the_model_failed_on_is_a_marked_placeholder_of_its_descriptions():
    merged = merge_extractions(
        [
            _outcome("c1", [("Alice", "PERSON", "x"), ("Rabbit", "ANIMAL", "late")]),
            _outcome("c2", [("Alice", "PERSON", "y"), ("Rabbit", "ANIMAL", "white")]),
        ]
    )
    summaries, failed = await summarize_all(summary_items(merged), _FailingSummarizer({"Rabbit"}), concurrency=2)
    assert failed == {entity_id("rabbit")}
    assert summaries[entity_id("rabbit")] == "late white"  # what is known stays
    applied = {e.name: e for e in apply_summaries(merged, summaries, failed).entities}
    assert applied["Rabbit"].summary_failed and applied["Rabbit"].summary == "late white"
    assert not applied["Alice"].summary_failed and applied["Alice"].summary == "Alice: x + y"


class _GatedSummarizer:
    """Summarises once `gate` is set; records the names whose call has started."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.started: list[str] = []

    async def summarize(self, name, descriptions):
        self.started.append(name)
        await self.gate.wait()
        return name


async def test_started_summaries_say_when_every_summary_has_its_call():
    items = [(f"key-{n}", f"Name {n}", ["one", "two"]) for n in range(3)] + [("key-single", "Single", ["only"])]
    summarizer = _GatedSummarizer()
    tasks, failed, all_called = start_summaries(items, summarizer, concurrency=2)
    await asyncio.sleep(0)
    # Two calls hold the two slots, a third waits for one: reports must not take it first.
    assert summarizer.started == ["Name 0", "Name 1"] and not all_called.is_set()
    summarizer.gate.set()
    await asyncio.wait_for(all_called.wait(), timeout=5)
    assert "Name 2" in summarizer.started
    assert await asyncio.gather(*tasks.values()) == ["Name 0", "Name 1", "Name 2", "only"] and not failed
    assert start_summaries([], summarizer).all_called.is_set()  # nothing to summarise: nothing to wait for
