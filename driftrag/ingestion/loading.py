"""Load documents into `SourceDocument`s with clear errors for what cannot be ingested.

UTF-8 text and markdown are read as they are; PDF, DOCX, HTML and EPUB files through their readers
(`driftrag.ingestion.formats`), a PDF keeping the page of each stretch of its text. Every file that
cannot be ingested raises one `InputError` naming it.

`load_document` is synchronous on purpose (it reads a file): workflow steps call it through
`asyncio.to_thread` so the event loop never blocks on disk.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from driftrag.errors import DriftRAGError
from driftrag.ingestion.formats import DOCUMENT_SUFFIXES, FormatError, read_document
from driftrag.models.graph import PageSpan, SourceDocument

DEFAULT_MAX_BYTES = 50 * 1024 * 1024
_BOM = b"\xef\xbb\xbf"
_SNIFF_BYTES = 8192
# Control bytes that real text files carry; anything else below 0x20 counts as binary evidence.
_TEXT_CONTROLS = frozenset(b"\t\n\r\f\b\x1b")
_BINARY_RATIO = 0.30


class InputError(DriftRAGError):
    """An input document cannot be ingested (missing, empty, binary, not UTF-8, too large)."""


class UnextractableTextError(InputError):
    """The ingestion mode cannot extract entities from this document (the offline mode and text written
    without spaces between words); a configured model can."""


def normalise_text(text: str) -> str:
    """Strip a BOM and turn CRLF / CR line endings into LF."""
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n")


def document_key(source: str, content_hash: str) -> str:
    return hashlib.sha256(f"{source}\x1f{content_hash}".encode()).hexdigest()[:32]


def document_from_text(
    text: str,
    kb: str,
    title: str,
    *,
    path: str | None = None,
    pages: list[PageSpan] | None = None,
    warnings: list[str] | None = None,
) -> SourceDocument:
    """Build a document from text already in memory.

    Its id hashes the source (path, else title) with the normalised text: the same text under two
    names stays two documents, and a new version of a source gets a new id. `pages` (a PDF's) are
    offsets into the text, which must then be normalised already (the readers' text is).
    """
    normalised = normalise_text(text)
    if not normalised.strip():
        raise InputError(f"document {title!r} is empty (no text besides whitespace)")
    content_hash = hashlib.sha256(normalised.encode("utf-8")).hexdigest()
    return SourceDocument(
        id=f"document-{document_key(path or title, content_hash)}",
        kb=kb,
        path=path,
        title=title,
        text=normalised,
        content_hash=content_hash,
        pages=pages or [],
        warnings=warnings or [],
    )


TEXT_SUFFIXES = frozenset({".txt", ".md", ".markdown"})
# What a folder is expanded to: text and markdown, and the formats with a reader.
SUPPORTED_SUFFIXES = TEXT_SUFFIXES | DOCUMENT_SUFFIXES


def collect_paths(paths: list[Path]) -> list[Path]:
    """Files as given; folders expanded to their text, markdown, PDF, DOCX, HTML and EPUB files
    (recursively, sorted, hidden ones skipped)."""
    collected: list[Path] = []
    for path in paths:
        if not path.exists():
            raise InputError(f"{path}: no such file or folder")
        if not path.is_dir():
            collected.append(path)
            continue
        found = sorted(
            file
            for file in path.rglob("*")
            if file.is_file()
            and file.suffix.lower() in SUPPORTED_SUFFIXES
            and not any(part.startswith(".") for part in file.relative_to(path).parts)
        )
        if not found:
            raise InputError(f"{path}: folder holds no {'/'.join(sorted(SUPPORTED_SUFFIXES))} file")
        collected.extend(found)
    return list(dict.fromkeys(collected))


def load_document(path: str | Path, kb: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> SourceDocument:
    """Read a file as a document. Blocking: call via `asyncio.to_thread`.

    `.pdf`, `.docx`, `.html`/`.htm`/`.xhtml` and `.epub` go through their reader (a PDF's pages are kept,
    a page without a text layer skipped with a warning on the document); any other extension is read
    as UTF-8 text. The document's source key is the file's resolved absolute path (symlinks followed),
    so `a.txt`, `./a.txt` and `/tmp/a.txt` from any working directory are one document, not three.
    """
    file = Path(path)
    if not file.exists():
        raise InputError(f"{file}: no such file")
    if file.is_dir():
        raise InputError(f"{file}: is a directory, expected a text file")
    size = file.stat().st_size
    if size > max_bytes:
        raise InputError(
            f"{file}: file is {size} bytes ({size / 1_048_576:.1f} MiB), above the limit of {max_bytes} "
            "bytes; raise the setting `max_file_mb` (DRIFTRAG_MAX_FILE_MB), or `max_bytes` of `load_document`, "
            "to ingest it"
        )
    data = file.read_bytes()
    if not data.strip():
        raise InputError(f"{file}: file is empty")
    if file.suffix.lower() in DOCUMENT_SUFFIXES:
        return _read_formatted(file, data, kb)
    text = _decode(data, file)
    return document_from_text(text, kb, file.name, path=str(file.resolve()))


def _read_formatted(file: Path, data: bytes, kb: str) -> SourceDocument:
    kind = file.suffix.lower().lstrip(".").upper()
    if kind in {"HTML", "HTM", "XHTML"} and _looks_binary(data):
        raise InputError(f"{file}: looks like a binary file, not HTML")
    try:
        extracted = read_document(file, data)
    except FormatError as exc:
        raise InputError(f"{file}: {exc}") from None
    if not extracted.text.strip():
        raise InputError(f"{file}: no text found in the {kind} file")
    warnings = [f"{file}: {warning}" for warning in extracted.warnings]
    return document_from_text(
        extracted.text, kb, file.name, path=str(file.resolve()), pages=extracted.pages, warnings=warnings
    )


def _decode(data: bytes, file: Path) -> str:
    body = data[len(_BOM) :] if data.startswith(_BOM) else data
    offset_shift = len(data) - len(body)
    if _looks_binary(body):
        raise InputError(f"{file}: looks like a binary file, not text")
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = exc.start + offset_shift
        line = data[:offset].count(b"\n") + 1
        raise InputError(
            f"{file}: not valid UTF-8 at byte offset {offset} (line {line}); convert the file to UTF-8"
        ) from exc


def _looks_binary(data: bytes) -> bool:
    """NUL bytes, or a sample made mostly of control bytes, mean binary."""
    if b"\x00" in data:
        return True
    sample = data[:_SNIFF_BYTES]
    controls = sum(1 for b in sample if b < 0x20 and b not in _TEXT_CONTROLS)
    return controls / max(len(sample), 1) > _BINARY_RATIO
