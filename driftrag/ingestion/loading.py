"""Load documents into `SourceDocument`s with clear errors for what cannot be ingested.

Text and markdown are read as UTF-8, or as UTF-16/UTF-32 when a byte-order mark says so; PDF, DOCX,
HTML and EPUB files through their readers (`driftrag.ingestion.formats`), a PDF keeping the page of each
stretch of its text, an EPUB its chapters, a DOCX its headings. Every file that cannot be ingested
raises one `InputError` naming it. `load_bytes` reads an upload (a name and its bytes) the same way.

`load_document` is synchronous on purpose (it reads a file): workflow steps call it through
`asyncio.to_thread` so the event loop never blocks on disk.
"""

from __future__ import annotations

import errno
import hashlib
from pathlib import Path

from driftrag.errors import DriftRAGError
from driftrag.ingestion.formats import (
    DOCUMENT_SUFFIXES,
    ExtractedText,
    FormatError,
    ReaderOptions,
    bom_encoding,
    read_document,
)
from driftrag.models.graph import SourceDocument
from driftrag.settings import Settings

DEFAULT_MAX_BYTES = 50 * 1024 * 1024
_BOM = b"\xef\xbb\xbf"
_SNIFF_BYTES = 8192
# Control bytes that real text files carry; anything else below 0x20 counts as binary evidence.
_TEXT_CONTROLS = frozenset(b"\t\n\r\f\b\x1b")
_BINARY_RATIO = 0.30
_HASH_SLICE = 1 << 20


class InputError(DriftRAGError):
    """An input document cannot be ingested (missing, empty, binary, not UTF-8, too large)."""


def reader_options(settings: Settings) -> ReaderOptions:
    """The readers' options as the settings give them."""
    return ReaderOptions(
        ocr_language=settings.ocr_language if settings.ocr else None,
        max_archive_bytes=int(settings.max_archive_mb * 1024 * 1024),
        max_archive_members=settings.max_archive_members,
        max_document_chars=settings.max_document_chars,
        max_text_ratio=settings.max_text_ratio,
        max_document_pages=settings.max_document_pages,
        max_spine_entries=settings.max_spine_entries,
        max_table_cells=settings.max_table_cells,
    )


class UnextractableTextError(InputError):
    """The ingestion mode cannot extract entities from this document (the offline mode and text written
    without spaces between words); a configured model can."""


def normalise_text(text: str) -> str:
    """Strip a BOM and turn CRLF / CR line endings into LF."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r" not in text:  # the common case: no copy of a large text
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


def text_hash(text: str) -> str:
    """sha256 of the text's UTF-8, encoded a slice at a time (a large file's text is not copied whole)."""
    digest = hashlib.sha256()
    for start in range(0, len(text), _HASH_SLICE):
        digest.update(text[start : start + _HASH_SLICE].encode("utf-8"))
    return digest.hexdigest()


def document_key(source: str, content_hash: str) -> str:
    return hashlib.sha256(f"{source}\x1f{content_hash}".encode()).hexdigest()[:32]


def document_from_text(
    text: str,
    kb: str,
    title: str,
    *,
    path: str | None = None,
    extracted: ExtractedText | None = None,
    warnings: list[str] | None = None,
) -> SourceDocument:
    """Build a document from text already in memory.

    Its id hashes the source (path, else title) with the normalised text: the same text under two
    names stays two documents, and a new version of a source gets a new id. The pages and sections of
    `extracted` (a reader's, whose text `text` is) are offsets into the text, which the readers give
    normalised already.
    """
    normalised = normalise_text(text)
    if not normalised.strip():
        raise InputError(f"document {title!r} is empty (no text besides whitespace)")
    content_hash = text_hash(normalised)
    return SourceDocument(
        id=f"document-{document_key(path or title, content_hash)}",
        kb=kb,
        path=path,
        title=title,
        text=normalised,
        content_hash=content_hash,
        pages=extracted.pages if extracted else [],
        sections=extracted.sections if extracted else [],
        section_kind=extracted.section_kind if extracted else None,
        warnings=warnings or [],
    )


TEXT_SUFFIXES = frozenset({".txt", ".md", ".markdown"})
# What a folder is expanded to: text and markdown, and the formats with a reader.
SUPPORTED_SUFFIXES = TEXT_SUFFIXES | DOCUMENT_SUFFIXES


def collect_paths(paths: list[Path]) -> list[Path]:
    """Files as given; folders expanded to their text, markdown, PDF, DOCX, HTML and EPUB files
    (recursively, sorted, hidden ones skipped). A symlink loop is an error that says so."""
    collected: list[Path] = []
    for path in paths:
        _check_exists(path, "no such file or folder")
        if not path.is_dir():
            collected.append(path)
            continue
        found = []
        for file in sorted(path.rglob("*")):
            if file.suffix.lower() not in SUPPORTED_SUFFIXES or any(
                part.startswith(".") for part in file.relative_to(path).parts
            ):
                continue
            if file.is_symlink():
                _check_exists(file, "broken symbolic link")
            if file.is_file():
                found.append(file)
        if not found:
            raise InputError(f"{path}: folder holds no {'/'.join(sorted(SUPPORTED_SUFFIXES))} file")
        collected.extend(found)
    return list(dict.fromkeys(collected))


def _check_exists(path: Path, missing: str) -> None:
    """`InputError` for a path that does not exist, a symlink loop named as one."""
    try:
        path.stat()
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InputError(f"{path}: symbolic link loop (the link leads back to itself)") from None
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            raise InputError(f"{path}: {missing}") from None
        raise InputError(f"{path}: cannot be read ({exc.strerror})") from None


def load_document(
    path: str | Path, kb: str, *, max_bytes: int = DEFAULT_MAX_BYTES, options: ReaderOptions | None = None
) -> SourceDocument:
    """Read a file as a document. Blocking: call via `asyncio.to_thread`.

    `.pdf`, `.docx`, `.html`/`.htm`/`.xhtml` and `.epub` go through their reader (a PDF's pages are kept,
    a page without a text layer read by OCR or skipped with a warning on the document); any other
    extension is read as text. The document's source key is the file's resolved absolute path (symlinks
    followed), so `a.txt`, `./a.txt` and `/tmp/a.txt` from any working directory are one document.
    """
    file = Path(path)
    _check_exists(file, "no such file")
    if file.is_dir():
        raise InputError(f"{file}: is a directory, expected a text file")
    _check_size(file, file.stat().st_size, max_bytes)
    return _from_bytes(file, file.read_bytes(), kb, str(file.resolve()), options)


def load_bytes(
    name: str,
    data: bytes,
    kb: str,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    options: ReaderOptions | None = None,
    shown: str | None = None,
) -> SourceDocument:
    """Read an uploaded file (its name, whose suffix picks the reader, and its bytes) as `load_document`
    reads a file; its title is the name and it has no path. Errors name it `shown` (e.g. `files[0]`, so
    that an HTTP error does not echo the caller's file name) or else the name. Blocking: call via
    `asyncio.to_thread`."""
    try:
        _check_size(Path(name), len(data), max_bytes)
        return _from_bytes(Path(name), data, kb, None, options)
    except InputError as exc:
        if shown is None:
            raise
        raise InputError(f"{shown}: {str(exc).removeprefix(f'{name}: ')}") from None


def _check_size(file: Path, size: int, max_bytes: int) -> None:
    if size > max_bytes:
        raise InputError(
            f"{file}: file is {size} bytes ({size / 1_048_576:.1f} MiB), above the limit of {max_bytes} "
            "bytes; raise the setting `max_file_mb` (DRIFTRAG_MAX_FILE_MB), or `max_bytes` of `load_document`, "
            "to ingest it"
        )


def _from_bytes(file: Path, data: bytes, kb: str, path: str | None, options: ReaderOptions | None) -> SourceDocument:
    if not data or data.isspace():  # not `data.strip()`: that copies a large file's bytes
        raise InputError(f"{file}: file is empty")
    if file.suffix.lower() in DOCUMENT_SUFFIXES:
        return _read_formatted(file, data, kb, path, options)
    text = _decode(data, file)
    try:
        (options or ReaderOptions()).text_budget(len(data), ratio=False).spend(len(text))
    except FormatError as exc:
        raise InputError(f"{file}: {exc}") from None
    return document_from_text(text, kb, file.name, path=path)


def _read_formatted(
    file: Path, data: bytes, kb: str, path: str | None, options: ReaderOptions | None
) -> SourceDocument:
    kind = file.suffix.lower().lstrip(".").upper()
    if kind in {"HTML", "HTM", "XHTML"} and bom_encoding(data) is None:
        if _looks_binary(data):
            raise InputError(f"{file}: {_binary_problem(data, 'HTML')}")
    try:
        extracted = read_document(file, data, options)
    except FormatError as exc:
        raise InputError(f"{file}: {exc}") from None
    if not extracted.text.strip():
        raise InputError(f"{file}: no text found in the {kind} file")
    warnings = [f"{file}: {warning}" for warning in extracted.warnings]
    return document_from_text(extracted.text, kb, file.name, path=path, extracted=extracted, warnings=warnings)


def _decode(data: bytes, file: Path) -> str:
    encoding = bom_encoding(data)
    if encoding is not None and encoding != "utf-8-sig":
        try:
            return data.decode(encoding)
        except UnicodeDecodeError as exc:
            name = encoding.upper()
            raise InputError(
                f"{file}: starts with a {name} byte-order mark but is not valid {name} at byte offset "
                f"{exc.start}; convert the file to UTF-8"
            ) from exc
    offset_shift = len(_BOM) if data.startswith(_BOM) else 0
    if _looks_binary(data, offset_shift):
        raise InputError(f"{file}: {_binary_problem(data[offset_shift : offset_shift + _SNIFF_BYTES], 'text')}")
    try:
        # Through a view: a large file's bytes are not copied to drop a BOM.
        return str(memoryview(data)[offset_shift:], "utf-8")
    except UnicodeDecodeError as exc:
        offset = exc.start + offset_shift
        line = data.count(b"\n", 0, offset) + 1
        raise InputError(
            f"{file}: not valid UTF-8 at byte offset {offset} (line {line}); convert the file to UTF-8"
        ) from exc


def _binary_problem(data: bytes, kind: str) -> str:
    """What a file with NUL bytes is: UTF-16 without a byte-order mark (text whose every other byte is
    NUL), else binary."""
    sample = data[: _SNIFF_BYTES - _SNIFF_BYTES % 2]
    even, odd = sample[0::2], sample[1::2]
    for nul_half, text_half, order in ((odd, even, "little-endian"), (even, odd, "big-endian")):
        if len(sample) >= 4 and nul_half.count(0) >= 0.9 * len(nul_half) and text_half.count(0) == 0:
            return (
                f"looks like UTF-16 ({order}) text without a byte-order mark; save it as UTF-8 (or UTF-16 "
                "with a byte-order mark) to ingest it"
            )
    return f"looks like a binary file, not {kind}"


def _looks_binary(data: bytes, start: int = 0) -> bool:
    """NUL bytes, or a sample made mostly of control bytes, mean binary (from byte `start` on)."""
    if data.find(b"\x00", start) >= 0:
        return True
    sample = data[start : start + _SNIFF_BYTES]
    controls = sum(1 for b in sample if b < 0x20 and b not in _TEXT_CONTROLS)
    return controls / max(len(sample), 1) > _BINARY_RATIO
