"""Token-based chunking with overlap, boundaries moved back to whitespace when possible.

Token counts use the one tokenizer (`driftrag.providers.tokens`, tiktoken `cl100k_base`).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from typing import Any

from driftrag.errors import ConfigurationError
from driftrag.models.graph import Chunk, SourceDocument, stable_hash
from driftrag.providers.tokens import get_encoding

DEFAULT_CHUNK_SIZE = 1200
DEFAULT_CHUNK_OVERLAP = 100

_MD_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_HTML_IMAGE = re.compile(r"<img\b[^>]*>", re.IGNORECASE)
# What remains of `[![alt](img)](link)` once the inner image is removed.
_EMPTY_LINK = re.compile(r"\[\s*\]\([^)]*\)")
# The whitespace a cut may sit beside: ASCII only (a Unicode space is not a clean cut).
_WHITESPACE = frozenset(" \t\n\r\f\v")


def skip_reason(text: str) -> str | None:
    """Why a chunk should not go to extraction: empty, or nothing but image links."""
    if not text.strip():
        return "empty"
    rest = _EMPTY_LINK.sub("", _HTML_IMAGE.sub("", _MD_IMAGE.sub("", text)))
    return "image_only" if not rest.strip() else None


def chunk_id(document_id: str, index: int, text: str) -> str:
    return f"chunk-{stable_hash(document_id, str(index), text, length=32)}"


def chunk_document(
    document: SourceDocument,
    *,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    chunk_overlap: int = DEFAULT_CHUNK_OVERLAP,
) -> list[Chunk]:
    """Split a document into overlapping token windows; every chunk is kept, skippable ones flagged.

    A document with pages (PDF) or sections (EPUB chapters, DOCX headings) gives each chunk those its text
    overlaps; ids hash the document id, the index and the text only, so they do not depend on them.
    `iter_chunks` gives the same chunks one at a time."""
    return list(iter_chunks(document, chunk_size=chunk_size, chunk_overlap=chunk_overlap))


def iter_chunks(
    document: SourceDocument,
    *,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    chunk_overlap: int = DEFAULT_CHUNK_OVERLAP,
) -> Iterator[Chunk]:
    """`chunk_document`'s chunks as they are cut: the text is tokenized a segment at a time, so memory
    stays near the text's own size whatever its length (a chunk list, a token list and a byte-offset
    table of a 50 MiB file took 55 times the file). The sizes are checked at the call."""
    if chunk_size < 8:
        raise ConfigurationError(f"chunk_size must be at least 8 tokens, got {chunk_size}")
    if not 0 <= chunk_overlap < chunk_size // 2:
        raise ConfigurationError(
            f"chunk_overlap must be >= 0 and below half of chunk_size ({chunk_size}), got {chunk_overlap}"
        )
    return _chunks(document, chunk_size, chunk_overlap)


def _chunks(document: SourceDocument, chunk_size: int, chunk_overlap: int) -> Iterator[Chunk]:
    for index, (start, end, n_tokens) in enumerate(_windows(document.text, chunk_size, chunk_overlap)):
        text = document.text[start:end]
        reason = skip_reason(text)
        yield Chunk(
            id=chunk_id(document.id, index, text),
            document_id=document.id,
            index=index,
            text=text,
            n_tokens=n_tokens,
            start_char=start,
            end_char=end,
            extractable=reason is None,
            skip_reason=reason,
            **positions_of(document, start, end),
        )


def positions_of(document: SourceDocument, start: int, end: int) -> dict[str, Any]:
    """A chunk's place in its file: the pages (PDF, those read by OCR apart), the chapters (EPUB) or
    the headings (DOCX) whose text overlaps characters [start, end); None where the format has none."""
    pages = [span for span in document.pages if span.start_char < end and start < span.end_char]
    sections = [span for span in document.sections if span.start_char < end and start < span.end_char]
    ocr_pages = [span.page for span in pages if span.ocr]
    return {
        "pages": [span.page for span in pages] or None,
        "ocr_pages": ocr_pages or None,
        "sections": [span.number for span in sections] or None,
        "section_titles": [span.title for span in sections] or None,
        "section_kind": document.section_kind if sections else None,
    }


# Where the text may be cut into segments tokenized apart with the tokens of the whole text: cl100k's
# pre-tokenizer splits there whatever follows (a newline then a non-space character: the newline ends
# its piece, which the next never joins; an ASCII letter then a space: the letter run ends there). Python's
# `\s` holds every character the tokenizer's `\s` does, so `[^\s]` is never one of them.
_SEGMENT_CUT = re.compile(r"\n(?=[^\s])|[A-Za-z](?= )")
SEGMENT_CHARS = 1 << 16


class _Tokens:
    """The text's tokens, encoded a segment of about `segment_chars` at a time as the windows need them,
    as the char offset where each starts (-1 inside a char); those before a window's start are dropped."""

    def __init__(self, text: str, segment_chars: int) -> None:
        self.text = text
        self.count: int | None = None  # all the tokens, once the last segment is encoded
        self._encoding = get_encoding()
        self._segments = _segments(text, segment_chars)
        self._base = 0  # the index of the first token kept
        self._starts: list[int] = []

    def exists(self, i: int) -> bool:
        while self.count is None and i >= self._base + len(self._starts):
            self._encode_next()
        return self.count is None or i < self.count

    def char_at(self, i: int) -> int:
        """Where token i starts in the text (-1 inside a char); the text's length for i = count."""
        if not self.exists(i):
            return len(self.text)
        return self._starts[i - self._base]

    def drop_before(self, i: int) -> None:
        drop = i - self._base
        if drop > 4096 and drop * 2 > len(self._starts):  # amortised: each token moved at most once or twice
            del self._starts[:drop]
            self._base = i

    def _encode_next(self) -> None:
        segment = next(self._segments, None)
        if segment is None:
            self.count = self._base + len(self._starts)
            return
        lo, hi = segment
        piece = self.text[lo:hi]
        encoding = self._encoding
        tokens = encoding.encode(piece, disallowed_special=())
        if not tokens:
            return
        offsets = itertools.accumulate(map(len, encoding.decode_tokens_bytes(tokens[:-1])), initial=0)
        if piece.isascii():  # one byte per char: the common case, without a table of the segment
            self._starts.extend(lo + offset for offset in offsets)
        else:
            chars = _char_index_of_bytes(piece)
            self._starts.extend(lo + chars[offset] if chars[offset] >= 0 else -1 for offset in offsets)


def _segments(text: str, size: int) -> Iterator[tuple[int, int]]:
    """(start, end) char ranges covering the text, each about `size` or longer, cut only where
    `_SEGMENT_CUT` allows (a text without such a place is one segment)."""
    start = 0
    while start < len(text):
        found = _SEGMENT_CUT.search(text, start + size) if start + size < len(text) else None
        end = found.end() if found is not None else len(text)
        yield start, end
        start = end


def _windows(text: str, size: int, overlap: int, segment_chars: int = SEGMENT_CHARS) -> Iterator[tuple[int, int, int]]:
    """Yield (start_char, end_char, n_tokens) windows, trimmed of surrounding whitespace."""
    tokens = _Tokens(text, segment_chars)
    if not tokens.exists(0):
        return
    start = 0
    while True:
        if tokens.exists(start + size):
            end = _best_cut(tokens, start + size, start + size // 2)
        else:
            assert tokens.count is not None
            end = tokens.count
        lo, hi = tokens.char_at(start), tokens.char_at(end)
        piece = text[lo:hi]
        left = len(piece) - len(piece.lstrip())
        right = len(piece.rstrip())
        if right > left:
            yield lo + left, lo + right, end - start
        else:
            yield lo, hi, end - start
        if end == tokens.count:
            return
        # The next window starts `overlap` tokens back, nudged to a clean boundary, always moving forward.
        next_start = _best_cut(tokens, end - overlap, max(start + 1, end - 2 * overlap))
        start = max(next_start, start + 1)
        tokens.drop_before(start)


def _best_cut(tokens: _Tokens, ideal: int, floor: int) -> int:
    """Token index <= ideal to cut at: a paragraph break, else whitespace, else any char boundary."""
    floor = max(floor, 1)
    text = tokens.text
    window = range(ideal, floor - 1, -1)
    # A paragraph break is only worth it near the ideal cut; whitespace may be looked for further back.
    near = range(ideal, max(floor, ideal - (ideal - floor) // 4) - 1, -1)
    for predicate, candidates in ((_is_paragraph_break, near), (_is_whitespace_break, window)):
        for i in candidates:
            at = tokens.char_at(i)
            if at >= 0 and predicate(text, at):
                return i
    for i in window:
        if tokens.char_at(i) >= 0:
            return i
    return ideal


def _is_paragraph_break(text: str, at: int) -> bool:
    return text[max(at - 2, 0) : at] == "\n\n"


def _is_whitespace_break(text: str, at: int) -> bool:
    return (at > 0 and text[at - 1] in _WHITESPACE) or (at < len(text) and text[at] in _WHITESPACE)


def _char_index_of_bytes(text: str) -> list[int]:
    """For each byte offset of the UTF-8 text, the char index starting there (-1 inside a char)."""
    if text.isascii():  # one byte per char: the common case, without a loop over the text
        return list(range(len(text) + 1))
    index = []
    for i, char in enumerate(text):
        width = len(char.encode("utf-8"))
        index.append(i)
        index.extend([-1] * (width - 1))
    index.append(len(text))
    return index
