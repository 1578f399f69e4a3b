"""The alias rule (one-word name -> the one multi-word name it heads) and forms of address, in the merge."""

from driftrag.ingestion.aliases import head_word, is_form_of_address, plan_aliases, untitled
from driftrag.ingestion.merge import entity_id, merge_extractions, pmi, relationship_id
from driftrag.models.graph import ExtractedEntity, ExtractedRelationship, ExtractionOutcome


def _outcome(chunk_id, entities=(), relationships=()):
    return ExtractionOutcome(
        chunk_id=chunk_id,
        entities=[ExtractedEntity(name=n, type=t, description=d) for n, t, d in entities],
        relationships=[
            ExtractedRelationship(source=s, target=o, description=d, strength=w) for s, o, d, w in relationships
        ],
    )


def test_head_is_the_word_before_a_connector_else_the_last_word():
    assert head_word("cheshire cat") == "cat"
    assert head_word("queen of hearts") == "queen"
    assert head_word("knave of hearts") == "knave"
    assert head_word("reine de cœur") == "reine"
    assert head_word("saint orlas chapel") == "chapel"
    assert head_word("alice") is None


def test_one_word_name_joins_the_only_multi_word_name_it_heads():
    plan = plan_aliases(
        {
            "cat": "UNKNOWN",
            "cheshire cat": "PERSON",
            "queen": "PERSON",
            "queen of hearts": "PERSON",
            "rabbit": "PERSON",
            "white rabbit": "PERSON",
            "hearts": "UNKNOWN",
            "alice": "PERSON",
        }
    )
    assert plan.canonical == {"cat": "cheshire cat", "queen": "queen of hearts", "rabbit": "white rabbit"}
    assert plan.resolve("alice") == "alice"
    assert plan.resolve("hearts") == "hearts"  # not a head


def test_two_multi_word_names_with_the_same_head_keep_the_one_word_name_apart():
    plan = plan_aliases({"turtle": "PERSON", "mock turtle": "PERSON", "green turtle": "PERSON"})
    assert plan.canonical == {}


def test_a_title_and_a_name_does_not_take_the_name_as_alias():
    plan = plan_aliases({"william": "PERSON", "father william": "PERSON", "alice": "PERSON", "miss alice": "PERSON"})
    assert plan.canonical == {}


def test_incompatible_types_do_not_merge():
    plan = plan_aliases({"harbor": "PLACE", "tom harbor": "PERSON", "lighthouse": "PLACE", "amber lighthouse": "PLACE"})
    assert plan.canonical == {"lighthouse": "amber lighthouse"}


def test_forms_of_address_in_several_languages():
    for key in ["majesty", "your majesty", "highness", "sir", "madam", "majesté", "votre altesse", "ваше величество"]:
        assert is_form_of_address(key), key
    for key in ["king", "queen", "sir walter", "grace", "alice", "majesty street"]:
        assert not is_form_of_address(key), key
    plan = plan_aliases({"majesty": "PERSON", "queen": "PERSON"})
    assert plan.resolve("majesty") is None
    assert plan.resolve("queen") == "queen"


def test_merge_folds_the_alias_into_the_multi_word_entity_and_records_it():
    merged = merge_extractions(
        [
            _outcome(
                "c1",
                [("Cheshire Cat", "PERSON", "A cat that grins."), ("Alice", "PERSON", "A girl.")],
                [("Alice", "Cheshire Cat", "Alice meets the Cheshire Cat.", 1)],
            ),
            _outcome(
                "c2",
                [("the Cat", "UNKNOWN", "The Cat vanishes."), ("Alice", "PERSON", "A girl.")],
                [("Cat", "Alice", "The Cat talks to Alice.", 2), ("Cat", "Cheshire Cat", "Same animal.", 1)],
            ),
            _outcome("c3", [("Alice", "PERSON", "Alone.")]),
        ]
    )
    assert sorted(e.name for e in merged.entities) == ["Alice", "Cheshire Cat"]
    cat = next(e for e in merged.entities if e.name == "Cheshire Cat")
    assert cat.id == entity_id("cheshire cat")
    assert cat.aliases == ["the Cat"]
    assert cat.type == "PERSON"
    assert cat.source_chunk_ids == ["c1", "c2"]
    assert cat.descriptions == ["A cat that grins.", "The Cat vanishes."]
    # Alice-Cat and Alice-Cheshire Cat are one relationship now; the Cat-Cheshire Cat loop is gone.
    [rel] = merged.relationships
    ends = sorted([entity_id("alice"), entity_id("cheshire cat")])
    assert (rel.source_id, rel.target_id) == tuple(ends)
    assert rel.id == relationship_id(*ends, "RELATED_TO")
    assert rel.weight == 3
    assert rel.source_chunk_ids == ["c1", "c2"]
    assert rel.descriptions == ["Alice meets the Cheshire Cat.", "The Cat talks to Alice."]
    assert rel.pmi == pmi(2, 3, 2, 3)
    assert "1 relationships between a name and its alias dropped" in merged.warnings


def test_merge_keeps_a_shared_head_apart_and_drops_forms_of_address():
    merged = merge_extractions(
        [
            _outcome("c1", [("Mock Turtle", "PERSON", "Sad."), ("Turtle", "PERSON", "Slow.")]),
            _outcome(
                "c2",
                [("Green Turtle", "PERSON", "Green."), ("Majesty", "PERSON", "Addressed.")],
                [("Majesty", "Green Turtle", "Your Majesty, said the Green Turtle.", 1)],
            ),
        ]
    )
    assert sorted(e.name for e in merged.entities) == ["Green Turtle", "Mock Turtle", "Turtle"]
    assert all(e.aliases == [] for e in merged.entities)
    assert merged.relationships == []
    assert "1 entities that are only a form of address dropped" in merged.warnings
    assert "1 relationships with a form of address dropped" in merged.warnings


def test_the_plan_depends_on_the_set_of_names_not_on_the_order_of_the_chunks():
    outcomes = [
        _outcome(
            "c1",
            [("Queen of Hearts", "PERSON", "Rules."), ("King", "PERSON", "Meek.")],
            [("Queen of Hearts", "King", "Married.", 1)],
        ),
        _outcome("c2", [("Queen", "PERSON", "Shouts."), ("King", "PERSON", "Meek.")], [("Queen", "King", "Argue.", 1)]),
        _outcome("c3", [("King", "PERSON", "Judges.")]),
    ]

    def shape(merged):
        entities = [(e.id, e.name, e.aliases, e.source_chunk_ids) for e in merged.entities]
        return entities, [(r.id, r.weight, r.source_chunk_ids, r.pmi) for r in merged.relationships]

    forward, backward = merge_extractions(outcomes), merge_extractions(list(reversed(outcomes)))
    assert shape(forward) == shape(backward)
    assert [(e.name, e.aliases) for e in forward.entities if e.aliases] == [("Queen of Hearts", ["Queen"])]


def test_a_titled_form_joins_the_name_it_titles():
    plan = plan_aliases(
        {
            "old mattias crane": "PERSON",
            "mattias crane": "UNKNOWN",
            "lady maud ferrers": "PERSON",
            "captain old wren halloway": "PERSON",
            "wren halloway": "PERSON",
            "crane": "UNKNOWN",
        }
    )
    assert plan.canonical == {
        "old mattias crane": "mattias crane",
        "captain old wren halloway": "wren halloway",
        # With the titled form folded, one multi-word name is left for "crane" to join.
        "crane": "mattias crane",
    }
    assert untitled("lady maud ferrers") == "maud ferrers"
    assert untitled("mr. john smith") == "john smith"
    assert untitled("king of hearts") is None  # a connector is not a name
    assert untitled("mattias crane") is None


def test_a_title_before_one_word_or_a_shared_surname_never_merges():
    plan = plan_aliases(
        {
            "lady maud ferrers": "PERSON",
            "tom ferrers": "PERSON",
            "maud": "PERSON",
            "mr crane": "PERSON",
            "mrs crane": "PERSON",
            "crane": "PERSON",
            "father william": "PERSON",
            "william": "PERSON",
            "ferrers": "PERSON",
        }
    )
    assert plan.canonical == {}


def test_titled_and_untitled_names_of_different_types_stay_apart():
    plan = plan_aliases({"saint orlas chapel": "PLACE", "orlas chapel": "PLACE", "old ruth hale": "PERSON"})
    assert plan.canonical == {"saint orlas chapel": "orlas chapel"}
    assert plan_aliases({"captain wren halloway": "PERSON", "wren halloway": "PLACE"}).canonical == {}


def test_merge_folds_a_titled_form_and_shows_the_form_found_most():
    merged = merge_extractions(
        [
            _outcome(
                "c1",
                [("Old Mattias Crane", "PERSON", "The keeper."), ("Pip", "PERSON", "A boy.")],
                [("Old Mattias Crane", "Pip", "Old Mattias Crane met Pip.", 1)],
            ),
            _outcome("c2", [("Old Mattias Crane", "PERSON", "He rang the bell.")]),
            _outcome(
                "c3",
                [("Mattias Crane", "UNKNOWN", "Mattias Crane trimmed the wick."), ("Pip", "PERSON", "A boy.")],
                [("Mattias Crane", "Pip", "Mattias Crane and Pip.", 2)],
            ),
            _outcome("c4", [("Lady Maud Ferrers", "PERSON", "Chairs the council."), ("Tom Ferrers", "PERSON", "")]),
        ]
    )
    by_name = {e.name: e for e in merged.entities}
    assert sorted(by_name) == ["Lady Maud Ferrers", "Old Mattias Crane", "Pip", "Tom Ferrers"]
    crane = by_name["Old Mattias Crane"]
    assert crane.id == entity_id("mattias crane")  # the key every form shares
    assert crane.aliases == ["Mattias Crane"]
    assert crane.type == "PERSON"
    assert crane.source_chunk_ids == ["c1", "c2", "c3"]
    [rel] = [r for r in merged.relationships if entity_id("pip") in (r.source_id, r.target_id)]
    assert rel.weight == 3 and rel.source_chunk_ids == ["c1", "c3"]
    assert by_name["Tom Ferrers"].aliases == [] and by_name["Lady Maud Ferrers"].aliases == []
