"""Language resources from the NLTK data bundled with llama-index-core: nothing downloaded."""

from __future__ import annotations

import pytest

from driftrag.errors import ConfigurationError
from driftrag.offline.nlp import Language, LanguageResources, content_words, detect_language, nltk_data_dir, paragraphs


def test_the_bundled_data_has_english_and_french_stopwords_and_sentence_models() -> None:
    data = nltk_data_dir()
    for language in ("english", "french"):
        assert (data / "corpora" / "stopwords" / language).is_file()
        assert (data / "tokenizers" / "punkt_tab" / language / "ortho_context.tab").is_file()


def test_languages_are_read_from_the_files_without_touching_nltks_search_path(resources: LanguageResources) -> None:
    import nltk

    before = list(nltk.data.path)
    assert {"english", "french", "german", "russian"} <= set(resources.names)
    assert "the" in resources.get("english").stopwords and "les" in resources.get("french").stopwords
    assert list(nltk.data.path) == before


def test_an_unknown_language_is_a_configuration_error(resources: LanguageResources) -> None:
    with pytest.raises(ConfigurationError, match="klingon"):
        resources.get("klingon")


def test_the_language_is_guessed_from_stopwords(resources: LanguageResources) -> None:
    assert resources.detect("The cat sat on the mat and it was happy with the world.").name == "english"
    assert resources.detect("Le chat est sur le tapis et il est content de la vie.").name == "french"
    assert resources.detect("").name == "english"
    assert detect_language(["la", "le", "the"], {"english": frozenset({"the"}), "french": frozenset({"la", "le"})}) == (
        "french"
    )


def test_a_setting_overrides_the_guess(resources: LanguageResources) -> None:
    assert resources.resolve("french", "The cat sat on the mat.").name == "french"
    assert resources.resolve("auto", "The cat sat on the mat.").name == "english"


def test_sentences_keep_the_speaker_with_the_speech(english: Language) -> None:
    text = "'Who are YOU?' said the Caterpillar. Alice replied, rather shyly. Mr. Smith went home."
    assert english.sentences(text) == [
        "'Who are YOU?' said the Caterpillar.",
        "Alice replied, rather shyly.",
        "Mr. Smith went home.",
    ]


def test_french_sentences(french: Language) -> None:
    text = "M. Dupont arriva à la gare. « Bonjour », dit-il. La capitaine Morel sourit."
    assert len(french.sentences(text)) == 3


def test_common_and_proper_words_come_from_the_punkt_model(english: Language) -> None:
    assert {"poor", "suddenly", "queen", "the"} <= english.common_words
    assert "alice" in english.proper_words and "alice" not in english.common_words
    assert "suddenly" not in english.proper_words


def test_paragraphs_join_wrapped_lines_and_spot_headings_and_verse() -> None:
    text = (
        "CHAPTER I. Down the Rabbit-Hole\r\n\r\n"
        "Alice was beginning to get very tired of sitting by her sister on the\r\n"
        "bank, and of having nothing to do.\r\n\r\n"
        "    'How doth the little crocodile\r\n"
        "    Improve his shining tail,\r\n"
        "    And pour the waters of the Nile\r\n\r\n"
        "# The Dark Lamp\n\n- first item\n- Second item\n"
    )
    blocks = paragraphs(text)
    assert [b.heading for b in blocks] == [True, False, False, True, False, False]
    assert blocks[1].text.endswith("by her sister on the bank, and of having nothing to do.")
    assert blocks[2].text.count("\n") == 2  # verse keeps its line starts
    assert blocks[3].text == "The Dark Lamp"
    assert blocks[4].text == "first item"


def test_content_words_drop_stopwords_and_single_letters(english: Language, french: Language) -> None:
    assert content_words("The Queen and a King of Hearts", english) == ["queen", "king", "hearts"]
    assert content_words("Le roi et la reine de l'île", french) == ["roi", "reine", "île"]
