"""The streamed chunker cuts exactly the chunks the whole-text chunker cut: same windows, ids and texts.

The oracle below is the earlier chunker, which tokenized the whole text at once and indexed every byte
of it (kept here only as the reference): the streamed one tokenizes a segment at a time, cut where the
tokenizer's pre-tokenization splits anyway, so its tokens, and with them every window, must be the same.
Small segments stress the cuts: a text of a few kilobytes is then cut hundreds of times.
"""

from __future__ import annotations

import itertools
import random
import tracemalloc
from collections.abc import Iterator

import pytest

from driftrag.corpora import DATA_DIR
from driftrag.ingestion.chunking import _windows, chunk_document, chunk_id, iter_chunks
from driftrag.ingestion.loading import document_from_text
from driftrag.providers.tokens import get_encoding

_WHITESPACE = frozenset(b" \t\n\r\f\v")


def reference_windows(text: str, size: int, overlap: int) -> Iterator[tuple[int, int, int]]:
    """The whole-text windows of the chunker before it streamed."""
    encoding = get_encoding()
    tokens = encoding.encode(text, disallowed_special=())
    if not tokens:
        return
    raw = text.encode("utf-8")
    byte_at = [0, *itertools.accumulate(map(len, encoding.decode_tokens_bytes(tokens)))]
    char_at = _reference_char_index(text)
    n = len(tokens)
    start = 0
    while start < n:
        end = n if start + size >= n else _reference_cut(raw, byte_at, char_at, start + size, start + size // 2)
        lo, hi = char_at[byte_at[start]], char_at[byte_at[end]]
        piece = text[lo:hi]
        left = len(piece) - len(piece.lstrip())
        right = len(piece.rstrip())
        if right > left:
            yield lo + left, lo + right, end - start
        else:
            yield lo, hi, end - start
        if end >= n:
            return
        next_start = _reference_cut(raw, byte_at, char_at, end - overlap, max(start + 1, end - 2 * overlap))
        start = max(next_start, start + 1)


def _reference_cut(raw: bytes, byte_at: list[int], char_at: list[int], ideal: int, floor: int) -> int:
    floor = max(floor, 1)
    window = range(ideal, floor - 1, -1)
    near = range(ideal, max(floor, ideal - (ideal - floor) // 4) - 1, -1)
    paragraph = lambda at: raw[max(at - 2, 0) : at] == b"\n\n"  # noqa: E731
    space = lambda at: (at > 0 and raw[at - 1] in _WHITESPACE) or (at < len(raw) and raw[at] in _WHITESPACE)  # noqa: E731
    for predicate, candidates in ((paragraph, near), (space, window)):
        for i in candidates:
            if char_at[byte_at[i]] >= 0 and predicate(byte_at[i]):
                return i
    for i in window:
        if char_at[byte_at[i]] >= 0:
            return i
    return ideal


def _reference_char_index(text: str) -> list[int]:
    index = []
    for i, char in enumerate(text):
        index.append(i)
        index.extend([-1] * (len(char.encode("utf-8")) - 1))
    index.append(len(text))
    return index


def _sample_corpus() -> str:
    return "\n\n".join(path.read_text() for path in sorted((DATA_DIR / "sample").glob("*.md")))


MIXED = (
    "Alice's cat—“Dinah”—sat there.\n\n## Глава 2\n\nОна сказала: «Нет!» 12345 67\tтабуляция\n"
    "東京は日本の首都です。人口は約1400万人。\n\n  \n   indented line  \n"
    "emoji 🐇🕰️ mixed 🇫🇷 flags, café naïve Zoë.\n\n\n\nSHOUTING IT'S WE'LL they're\n"
    "numbers 3.14159 1,000,000 and symbols ->> <<= $$$ ### !!!\n"
    "\u00a0non-breaking\u2003em space\u3000ideographic  end"
)


@pytest.mark.parametrize(("size", "overlap"), [(1200, 100), (300, 30), (60, 0), (8, 3)])
def test_the_sample_corpus_gives_the_same_chunks_as_the_whole_text_chunker(size: int, overlap: int) -> None:
    text = "\n\n".join(f"# Part {copy}\n\n{_sample_corpus()}" for copy in range(12))  # ~250 KB: several segments
    document = document_from_text(text, "kb", "medium")
    streamed = chunk_document(document, chunk_size=size, chunk_overlap=overlap)
    expected = list(reference_windows(document.text, size, overlap))
    assert [(c.start_char, c.end_char, c.n_tokens) for c in streamed] == expected
    assert [c.id for c in streamed] == [
        chunk_id(document.id, index, document.text[start:end]) for index, (start, end, _) in enumerate(expected)
    ]
    assert [c.text for c in streamed] == [document.text[start:end] for start, end, _ in expected]


@pytest.mark.parametrize("segment_chars", [1, 7, 64, 1000])
@pytest.mark.parametrize(("size", "overlap"), [(8, 0), (8, 3), (40, 10), (300, 100)])
def test_small_segments_of_mixed_scripts_give_the_same_windows(segment_chars: int, size: int, overlap: int) -> None:
    text = (MIXED + "\n") * 6
    assert list(_windows(text, size, overlap, segment_chars)) == list(reference_windows(text, size, overlap))


def test_random_texts_cut_into_tiny_segments_give_the_same_windows() -> None:
    # Characters the pre-tokenizer treats differently side by side: letters of several scripts, digits,
    # apostrophes (contractions), punctuation, every kind of whitespace, CR, multi-byte and combining chars.
    alphabet = (
        list("aZq'sdtmlv rRe") + list("0123 \n\n\t\r.,;!?-—“”«»") + list("éßжЖ東京🐇\u0301\u00a0\u3000\x1c\u2028")
    )
    rng = random.Random(40)
    for _ in range(60):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 900)))
        for segment_chars in (1, 5, 33):
            assert list(_windows(text, 12, 4, segment_chars)) == list(reference_windows(text, 12, 4)), text


def test_a_text_without_a_place_to_cut_is_one_segment() -> None:
    text = "東京" * 3000 + "." * 2000  # no newline, no ASCII letter before a space
    assert list(_windows(text, 50, 10, 64)) == list(reference_windows(text, 50, 10))


def _traced_peak(copies: int) -> tuple[int, int]:
    """(chunks, peak bytes traced while cutting them) of the sample corpus repeated `copies` times."""
    text = "\n\n".join(f"# Part {copy}\n\n{_sample_corpus()}" for copy in range(copies))
    document = document_from_text(text, "kb", "large")
    chunks = iter_chunks(document, chunk_size=300, chunk_overlap=30)
    next(chunks)  # the tokenizer and its tables are loaded before the measure
    tracemalloc.start()
    try:
        count = 1 + sum(1 for _ in chunks)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return count, peak


def test_chunks_come_one_at_a_time_in_memory_that_does_not_grow_with_the_text() -> None:
    small_count, small_peak = _traced_peak(15)  # ~0.3 MB
    large_count, large_peak = _traced_peak(60)  # ~1.3 MB
    assert large_count > 3 * small_count
    # The whole-text chunker held a token list, a byte-offset list and a per-byte char table of the whole
    # text (~60 bytes a char); the streamed one a segment's tokens and one chunk at a time.
    assert large_peak < 1.5 * small_peak + 256 * 1024, (small_peak, large_peak)
    assert large_peak < 8 * 1024 * 1024, large_peak
