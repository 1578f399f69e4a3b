"""Name spans on crafted sentences: what counts as a name, how initial words are resolved, types."""

from __future__ import annotations

from collections import Counter

from driftrag.offline.entities import PERSON, PLACE, SpanDetector, guess_type, lowercase_words, resolve_mentions
from driftrag.offline.lexicon import lexicon_for
from driftrag.offline.nlp import Language


def _names(language: Language, *sentences: str) -> list[str]:
    detector = SpanDetector(language, lexicon_for(language.name))
    mentions = [m for i, s in enumerate(sentences) for m in detector.mentions(s, i)]
    resolved = resolve_mentions(mentions, language, lexicon_for(language.name), lowercase_words(sentences))
    return [m.name for m in resolved]


def _types(language: Language, *sentences: str) -> dict[str, str]:
    detector = SpanDetector(language, lexicon_for(language.name))
    mentions = resolve_mentions(
        [m for i, s in enumerate(sentences) for m in detector.mentions(s, i)], language, lexicon_for(language.name)
    )
    votes: dict[str, Counter[str]] = {}
    for mention in mentions:
        votes.setdefault(mention.name, Counter()).update(mention.votes)
    return {name: guess_type(v) for name, v in votes.items()}


def test_multi_word_names_are_one_span(english: Language) -> None:
    sentence = "Then the March Hare, the Cheshire Cat, the Mock Turtle and the White Rabbit arrived."
    assert _names(english, sentence) == ["March Hare", "Cheshire Cat", "Mock Turtle", "White Rabbit"]


def test_a_determiner_is_not_part_of_a_title(english: Language) -> None:
    sentence = "Alice bowed to the Queen, and the Hatter looked at the Duchess."
    assert _names(english, sentence) == ["Alice", "Queen", "Hatter", "Duchess"]
    assert _names(english, "The Queen shouted.") == ["Queen"]


def test_connectors_possessives_and_abbreviated_titles(english: Language) -> None:
    assert _names(english, "She met the Queen of Hearts in Saint Orla's Chapel.") == [
        "Queen of Hearts",
        "Saint Orla's Chapel",
    ]
    assert _names(english, "It was in Alice's pocket, said Mr. Smith.") == ["Alice", "Mr Smith"]
    assert _names(english, "I think Dinah'll miss me, thought Alice.") == ["Dinah", "Alice"]


def test_sentence_initial_common_words_are_rejected(english: Language) -> None:
    assert _names(english, "Suddenly she heard a noise.", "However, nothing happened.") == []
    assert _names(english, "'Curiouser and curiouser!' cried she.") == []
    assert _names(english, "Oh dear! Yes, Sir, I will.") == []  # interjections, a bare title as address
    assert _names(english, "She WAS VERY tired, I think.") == []  # emphasis in capitals, pronoun


def test_an_initial_word_needs_evidence_elsewhere_in_the_chunk(english: Language) -> None:
    # "Bill" at a sentence start is a common word, unless it also appears as a name inside a sentence.
    assert _names(english, "Bill came in.") == []
    assert _names(english, "Bill came in.", "They all looked at Bill.") == ["Bill", "Bill"]
    # Known names (only ever capitalised in the language's Punkt model) need no such evidence.
    assert _names(english, "Alice came in.") == ["Alice"]


def test_a_common_first_word_of_an_initial_span_is_dropped_unless_the_span_recurs(english: Language) -> None:
    assert _names(english, "Poor Alice! She cried.") == ["Alice"]
    assert _names(english, "White Rabbit ran away.") == ["Rabbit"]
    assert _names(english, "White Rabbit ran away.", "She followed the White Rabbit.") == [
        "White Rabbit",
        "White Rabbit",
    ]
    assert _names(english, "Captain Wren Halloway sailed.") == ["Captain Wren Halloway"]  # a title keeps it


def test_a_word_the_chunk_writes_in_lower_case_is_not_a_name_without_evidence(english: Language) -> None:
    # Sentence-initial: the chunk's own lower-case use outweighs the Punkt model's capitalised sightings.
    assert _names(english, "Prizes!", "There must be prizes, said she.") == []
    # Inside a sentence: a capitalised common word is emphasis or personification...
    assert _names(english, "If you knew Time as well as I do.", "It was just time for tea.") == []
    assert _names(english, "It ought to be Number One.", "Take one number.") == []
    # ... unless the chunk writes it only capitalised, or gives a name's evidence: a determiner, a
    # speech verb, a title.
    assert _names(english, "If you knew Time as well as I do.") == ["Time"]
    assert _names(english, "The Mouse bowed.", "She saw a mouse.", "Then the Mouse left.") == ["Mouse", "Mouse"]
    assert _names(english, "'Hush,' said Five.", "They saw five cards.") == ["Five"]
    assert _names(english, "They all looked at Bill.", "He paid the bill.") == []


def test_calendar_words_alone_are_not_names(english: Language, french: Language) -> None:
    assert _names(english, "It was in March, on a Monday, that Alice left.") == ["Alice"]
    assert _names(english, "May I come in?") == []
    assert _names(english, "Then the March Hare spoke.") == ["March Hare"]  # a calendar word may head a name
    assert _names(french, "C'était en Mars, un Lundi, que Jeanne partit.") == ["Jeanne"]


def test_verse_line_starts_count_as_initial(english: Language) -> None:
    verse = "How doth the little crocodile\nImprove his shining tail,\nAnd pour the waters of the Nile"
    assert _names(english, verse) == ["Nile"]


def test_example_nodes_of_the_kb_are_always_found(english: Language) -> None:
    detector = SpanDetector(english, lexicon_for("english"))
    mentions = detector.mentions("the lodestone was hidden in the lid.", 0, listed=["lodestone"])
    assert [(m.name, m.listed) for m in mentions] == [("lodestone", True)]


def test_french_spans_with_elisions_titles_and_stopwords(french: Language) -> None:
    sentence = "Ensuite Jeanne d'Arc alla à la Rue des Moulins avec l'Amiral Duval et la Reine."
    assert _names(french, sentence) == ["Jeanne d'Arc", "Rue des Moulins", "Amiral Duval", "Reine"]
    assert _names(french, "Le Phare Rouge brille. Mais il pleut.") == ["Phare Rouge"]


def test_person_types_come_from_titles_and_speech_verbs(english: Language, french: Language) -> None:
    types = _types(english, "'Off with her head!' said the Queen.", "The Dormouse slept.", "Alice replied.")
    assert types == {"Queen": PERSON, "Dormouse": "UNKNOWN", "Alice": PERSON}
    assert _types(english, "They saw Captain Voss.") == {"Captain Voss": PERSON}
    assert _types(french, "— Bonjour, dit Madame Lefèvre.") == {"Madame Lefèvre": PERSON}


def test_place_types_come_from_place_words_and_prepositions(english: Language, french: Language) -> None:
    assert _types(english, "They walked along Saltreed Bridge.") == {"Saltreed Bridge": PLACE}
    assert _types(english, "He lived in Harrowmere, far from Lantern Row.") == {
        "Harrowmere": "UNKNOWN",  # one weak hint is not enough
        "Lantern Row": "UNKNOWN",
    }
    assert _types(english, "He lived in Harrowmere.", "She stayed in Harrowmere.") == {"Harrowmere": PLACE}
    assert _types(english, "They went to the Lighthouse.", "It stood near the Lighthouse.") == {"Lighthouse": PLACE}
    # Speaking to someone is not going somewhere.
    assert _types(english, "Alice said to the Gryphon.", "She whispered to the Gryphon.")["Gryphon"] == PERSON
    assert _types(french, "Le Phare Rouge est près de la Rue des Moulins.") == {
        "Phare Rouge": PLACE,
        "Rue des Moulins": PLACE,
    }


def test_type_ties_and_weak_evidence_stay_unknown() -> None:
    assert guess_type(Counter()) == "UNKNOWN"
    assert guess_type(Counter({PLACE: 1})) == "UNKNOWN"
    assert guess_type(Counter({PLACE: 2, PERSON: 2})) == "UNKNOWN"
    assert guess_type(Counter({PLACE: 2, PERSON: 3})) == PERSON
