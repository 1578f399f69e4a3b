"""The Lucene query of the chunk full-text index: caller text becomes words, never query syntax."""

from __future__ import annotations

import pytest

from driftrag.errors import InvalidIdentifierError
from driftrag.store.search import lucene_words_query


def test_the_words_of_the_text_lower_cased_once_each_within_the_kb() -> None:
    query = lucene_words_query("alice", "Why does the Queen shout? The QUEEN shouts 'Off with his head!'")
    assert query == '+kb:"alice" +(why does the queen shout shouts off with his head)'


def test_letters_of_any_alphabet_are_words() -> None:
    query = lucene_words_query("verne", "Quel rôle la liberté joue-t-elle ?")
    assert query == '+kb:"verne" +(quel rôle liberté joue elle)'


@pytest.mark.parametrize(
    "text",
    ['x" OR kb:* AND text:/.*/ \\ ~2 ^9 ( ) [ ] { } && || ! - + : ?', "AND OR NOT TO", 'kb:"other" +(secret)'],
)
def test_no_operator_or_special_character_reaches_lucene(text: str) -> None:
    query = lucene_words_query("k", text)
    assert query is not None
    words = query.removeprefix('+kb:"k" +(').removesuffix(")")
    assert all(word.isalnum() or "_" in word for word in words.split())
    assert words == words.lower()  # lower case: AND, OR, NOT and TO are no operators


@pytest.mark.parametrize("text", ["", "   ", "? ! -- ** ::", "a b c to"])
def test_text_without_a_word_to_search_gives_no_query(text: str) -> None:
    assert lucene_words_query("k", text) is None


def test_the_kb_id_is_validated() -> None:
    with pytest.raises(InvalidIdentifierError):
        lucene_words_query('k" OR kb:*', "words")
