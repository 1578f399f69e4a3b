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
_WHITESPACE = frozenset(b" \t\n\r\f\v")


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
    overlaps; ids hash the document id, the index and the text only, so they do not depend on them."""
    if chunk_size < 8:
        raise ConfigurationError(f"chunk_size must be at least 8 tokens, got {chunk_size}")
    if not 0 <= chunk_overlap < chunk_size // 2:
        raise ConfigurationError(
            f"chunk_overlap must be >= 0 and below half of chunk_size ({chunk_size}), got {chunk_overlap}"
        )
    chunks = []
    for index, (start, end, n_tokens) in enumerate(_windows(document.text, chunk_size, chunk_overlap)):
        text = document.text[start:end]
        reason = skip_reason(text)
        chunks.append(
            Chunk(
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
        )
    return chunks


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


def _windows(text: str, size: int, overlap: int) -> Iterator[tuple[int, int, int]]:
    """Yield (start_char, end_char, n_tokens) windows, trimmed of surrounding whitespace."""
    encoding = get_encoding()
    tokens = encoding.encode(text, disallowed_special=())
    if not tokens:
        return
    raw = text.encode("utf-8")
    # Byte offset where each token starts (plus the end), then the char index of each byte boundary.
    byte_at = [0, *itertools.accumulate(map(len, encoding.decode_tokens_bytes(tokens)))]
    char_at = _char_index_of_bytes(text)
    n = len(tokens)
    start = 0
    while start < n:
        end = n if start + size >= n else _best_cut(raw, byte_at, char_at, start + size, start + size // 2)
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
        # The next window starts `overlap` tokens back, nudged to a clean boundary, always moving forward.
        next_start = _best_cut(raw, byte_at, char_at, end - overlap, max(start + 1, end - 2 * overlap))
        start = max(next_start, start + 1)


def _best_cut(raw: bytes, byte_at: list[int], char_at: list[int], ideal: int, floor: int) -> int:
    """Token index <= ideal to cut at: a paragraph break, else whitespace, else any char boundary."""
    floor = max(floor, 1)
    window = range(ideal, floor - 1, -1)
    # A paragraph break is only worth it near the ideal cut; whitespace may be looked for further back.
    near = range(ideal, max(floor, ideal - (ideal - floor) // 4) - 1, -1)
    for predicate, candidates in ((_is_paragraph_break, near), (_is_whitespace_break, window)):
        for i in candidates:
            if char_at[byte_at[i]] >= 0 and predicate(raw, byte_at[i]):
                return i
    for i in window:
        if char_at[byte_at[i]] >= 0:
            return i
    return ideal


def _is_paragraph_break(raw: bytes, at: int) -> bool:
    return raw[max(at - 2, 0) : at] == b"\n\n"


def _is_whitespace_break(raw: bytes, at: int) -> bool:
    return (at > 0 and raw[at - 1] in _WHITESPACE) or (at < len(raw) and raw[at] in _WHITESPACE)


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
