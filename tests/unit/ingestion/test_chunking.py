import itertools

import pytest

from driftrag.errors import ConfigurationError
from driftrag.ingestion.chunking import _char_index_of_bytes, chunk_document, skip_reason
from driftrag.ingestion.loading import document_from_text
from driftrag.providers.tokens import count_tokens

WORDS = " ".join(f"word{i}" for i in range(3000))


def _doc(text: str):
    return document_from_text(text, "kb", "t")


def test_chunks_respect_size_and_cover_the_text():
    chunks = chunk_document(_doc(WORDS), chunk_size=200, chunk_overlap=20)
    assert len(chunks) > 5
    assert all(c.n_tokens <= 200 for c in chunks)
    assert all(count_tokens(c.text) <= 205 for c in chunks)
    assert chunks[0].start_char == 0
    assert chunks[-1].end_char == len(WORDS)
    assert [c.index for c in chunks] == list(range(len(chunks)))


def test_chunks_overlap_and_cut_at_whitespace():
    doc = _doc(WORDS)
    chunks = chunk_document(doc, chunk_size=200, chunk_overlap=20)
    for previous, current in itertools.pairwise(chunks):
        assert current.start_char < previous.end_char, "consecutive chunks must overlap"
        assert current.start_char > previous.start_char
        # No word is split: both ends sit next to whitespace or the text's ends.
        assert doc.text[previous.end_char] == " "
        assert doc.text[current.start_char - 1] == " "
        assert doc.text[current.start_char : current.end_char] == current.text


def test_ids_are_stable_and_content_based():
    first = chunk_document(_doc(WORDS), chunk_size=200, chunk_overlap=20)
    again = chunk_document(_doc(WORDS), chunk_size=200, chunk_overlap=20)
    assert [c.id for c in first] == [c.id for c in again]
    assert len({c.id for c in first}) == len(first)
    other = chunk_document(_doc(WORDS + " tail"), chunk_size=200, chunk_overlap=20)
    assert other[-1].id != first[-1].id
    assert all(c.id.startswith("chunk-") for c in first)


def test_multibyte_text_keeps_offsets_right():
    text = "Ça va très bien, merci. Привет, как дела? 日本語のテキスト。 " * 80
    doc = _doc(text)
    chunks = chunk_document(doc, chunk_size=64, chunk_overlap=8)
    assert all(doc.text[c.start_char : c.end_char] == c.text for c in chunks)
    assert all(c.n_tokens <= 64 for c in chunks)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("   \n ", "empty"),
        ("![a cat](img/cat.png)", "image_only"),
        ('<img src="x.png" alt="x">\n![b](c.jpg)', "image_only"),
        ("[![badge](b.svg)](https://example.org)", "image_only"),
        ("![a cat](cat.png) The cat sleeps.", None),
    ],
)
def test_skip_reason(text, reason):
    assert skip_reason(text) == reason


def test_image_only_chunk_is_kept_but_not_extractable():
    chunks = chunk_document(_doc("![diagram](figure-1.png)"))
    assert len(chunks) == 1
    assert chunks[0].extractable is False
    assert chunks[0].skip_reason == "image_only"


def test_bad_sizes_are_refused():
    with pytest.raises(ConfigurationError):
        chunk_document(_doc(WORDS), chunk_size=100, chunk_overlap=60)


@pytest.mark.parametrize("text", ["", "plain ascii text\n\nand more", "héllo wörld", "日本語 and text", "emoji 🙂 end"])
def test_byte_offsets_map_to_the_char_starting_there(text: str) -> None:
    index = _char_index_of_bytes(text)
    expected = []
    for position, char in enumerate(text):
        expected += [position] + [-1] * (len(char.encode("utf-8")) - 1)
    assert index == [*expected, len(text)]
