"""Text out of PDF, DOCX, HTML and EPUB files, through small maintained libraries.

- PDF: `pypdf`, the text layer page by page; the page of every character is kept (`PageSpan`), so each
  chunk knows the page(s) it came from. A page without a text layer (a scanned image) is read by OCR
  when the `ocr` extra and Tesseract are installed (`driftrag.ingestion.ocr`; the page is marked as
  OCR'd), else skipped with a warning naming what to install.
- DOCX: `python-docx`, paragraphs and tables in document order (a table row becomes `cell | cell`);
  the text under each heading is a section (`SectionSpan`, kind `heading`).
- HTML: `beautifulsoup4` with the standard library's parser; scripts, styles and the head are dropped,
  block elements become paragraphs. The charset comes from a byte-order mark, else the page's
  `<meta charset>`, else a guess.
- EPUB: the zip read with `zipfile`, its spine in reading order, each chapter's XHTML as HTML; each
  chapter is a section (kind `chapter`, numbered by its place in the spine, titled by its heading).

DOCX and EPUB are zips: their members' declared sizes are added up before anything is expanded, and
an archive above `ReaderOptions.max_archive_bytes` or `max_archive_members` is refused (zipfile never
expands a member past its declared size).

What a file *becomes* is bounded too, counted as each reader produces it, so a small file that expands
is refused before memory grows: the characters of text (`max_document_chars`, and `max_text_ratio`
characters per byte of file, at least `RATIO_FLOOR_CHARS`), a PDF's pages (`max_document_pages`, counted
by walking its page tree before any page is read), an EPUB's spine entries (`max_spine_entries`), a
DOCX's table cells (`max_table_cells`). A page object a PDF's page tree lists twice is refused (a page
tree is a tree: each page has one parent); a chapter an EPUB's spine lists twice is read once.

Every reader raises `FormatError` for what it cannot read (a corrupt PDF, a .docx that is no zip, junk
with a known extension), so one bad file gives one clear error. All are synchronous: ingestion and the
upload route run them in a worker process (`driftrag.ingestion.parsing`), `load_document` in a thread
otherwise.
"""

from __future__ import annotations

import io
import posixpath
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote
from xml.etree import ElementTree

from driftrag.errors import DriftRAGError
from driftrag.ingestion import ocr
from driftrag.models.graph import PageSpan, SectionKind, SectionSpan
from driftrag.settings import Settings

PDF_SUFFIXES = frozenset({".pdf"})
DOCX_SUFFIXES = frozenset({".docx"})
HTML_SUFFIXES = frozenset({".html", ".htm", ".xhtml"})
EPUB_SUFFIXES = frozenset({".epub"})
DOCUMENT_SUFFIXES = PDF_SUFFIXES | DOCX_SUFFIXES | HTML_SUFFIXES | EPUB_SUFFIXES

PAGE_SEPARATOR = "\n\n"
NO_TEXT_LAYER = "has no text layer (a scanned image?)"
_DEFAULTS = Settings.model_fields

_BLOCK_TAGS = frozenset(
    "address article aside blockquote body br caption dd details div dl dt figcaption figure footer form "
    "h1 h2 h3 h4 h5 h6 header hr li main nav ol p pre section summary table tbody thead tfoot ul".split()
)
_CELL_TAGS = frozenset({"td", "th"})
_DROPPED_TAGS = ("script", "style", "noscript", "template", "head", "svg", "math")
_HEADING_TAGS = ("h1", "h2", "h3", "h4", "h5", "h6")
_SPACES = re.compile(r"[^\S\n]+")
_BLANK_LINES = re.compile(r"\n{3,}")


# Every file may become this much text whatever its size (a small file of well-compressed text is no
# bomb), yet the 2.4 KB EPUB that names one 1 MB chapter is refused even when that chapter is read once.
RATIO_FLOOR_CHARS = 256 * 1024


class FormatError(DriftRAGError):
    """Raised by a reader; `load_document` turns it into an `InputError` naming the file."""


@dataclass(frozen=True)
class ReaderOptions:
    """What the readers may do: OCR in `ocr_language` (None: no OCR), the caps on a zipped document, and
    the caps on what a file becomes. The defaults are the settings' (`driftrag.ingestion.loading.
    reader_options` reads them from settings)."""

    ocr_language: str | None = _DEFAULTS["ocr_language"].default
    max_archive_bytes: int = int(_DEFAULTS["max_archive_mb"].default * 1024 * 1024)
    max_archive_members: int = _DEFAULTS["max_archive_members"].default
    max_document_chars: int = _DEFAULTS["max_document_chars"].default
    max_text_ratio: float = _DEFAULTS["max_text_ratio"].default
    max_document_pages: int = _DEFAULTS["max_document_pages"].default
    max_spine_entries: int = _DEFAULTS["max_spine_entries"].default
    max_table_cells: int = _DEFAULTS["max_table_cells"].default

    def text_budget(self, file_bytes: int, *, ratio: bool = True) -> TextBudget:
        """The characters a file of `file_bytes` bytes may become (`ratio`: also bounded by its size)."""
        limit, reason = (
            self.max_document_chars,
            (
                f"the cap of {self.max_document_chars} characters on a document's text "
                "(setting `max_document_chars`, DRIFTRAG_MAX_DOCUMENT_CHARS)"
            ),
        )
        by_size = max(int(self.max_text_ratio * file_bytes), RATIO_FLOOR_CHARS)
        if ratio and by_size < limit:
            limit, reason = (
                by_size,
                (
                    f"{self.max_text_ratio:g} characters per byte of this {file_bytes}-byte file (setting "
                    f"`max_text_ratio`, DRIFTRAG_MAX_TEXT_RATIO; at least {RATIO_FLOOR_CHARS}): a decompression bomb?"
                ),
            )
        return TextBudget(limit, reason)


class TextBudget:
    """The characters a reader has produced, refused (`FormatError`) once past the limit."""

    def __init__(self, limit: int, reason: str) -> None:
        self.limit = limit
        self.reason = reason
        self.used = 0

    def spend(self, chars: int) -> None:
        self.used += chars
        if self.used > self.limit:
            raise FormatError(f"its text passes {self.limit} characters, above {self.reason}")


@dataclass
class ExtractedText:
    """A file's text, the page (PDF) or section (EPUB, DOCX) each stretch of it came from, and what was skipped."""

    text: str
    pages: list[PageSpan] = field(default_factory=list)
    sections: list[SectionSpan] = field(default_factory=list)
    section_kind: SectionKind | None = None
    warnings: list[str] = field(default_factory=list)


class _Joined:
    """Blocks of text joined by blank lines, recording where each section starts and ends; each block is
    spent from the file's text budget as it is added."""

    def __init__(self, budget: TextBudget | None = None) -> None:
        self.parts: list[str] = []
        self.length = 0
        self.budget = budget

    def add(self, text: str) -> tuple[int, int]:
        """Append a block (already clean, not empty); its [start, end) in the joined text."""
        if self.budget is not None:
            self.budget.spend(len(text) + (len(PAGE_SEPARATOR) if self.parts else 0))
        if self.parts:
            self.length += len(PAGE_SEPARATOR)
        start = self.length
        self.parts.append(text)
        self.length += len(text)
        return start, self.length

    @property
    def text(self) -> str:
        return PAGE_SEPARATOR.join(self.parts)


def clean_text(text: str) -> str:
    """LF line endings, runs of spaces and tabs as one space, lines stripped, at most one blank line."""
    text = text.replace("\ufeff", "").replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    lines = [_SPACES.sub(" ", line).strip() for line in text.split("\n")]
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


def read_document(file: Path, data: bytes, options: ReaderOptions | None = None) -> ExtractedText:
    """The text of a PDF, DOCX, HTML or EPUB file (by its suffix); `FormatError` for what cannot be read."""
    options = options or ReaderOptions()
    suffix = file.suffix.lower()
    if suffix in PDF_SUFFIXES:
        return read_pdf(data, options)
    if suffix in DOCX_SUFFIXES:
        return read_docx(data, options)
    if suffix in HTML_SUFFIXES:
        text = html_to_text(data)
        options.text_budget(len(data), ratio=False).spend(len(text))
        return ExtractedText(text)
    if suffix in EPUB_SUFFIXES:
        return read_epub(data, options)
    raise FormatError(f"no reader for {suffix!r} files")


def read_pdf(data: bytes, options: ReaderOptions | None = None) -> ExtractedText:
    """Each page's text layer (or its OCR text), pages joined by a blank line, with their 1-based numbers
    and offsets; a page without text is skipped with a warning that says why."""
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    options = options or ReaderOptions()
    if not data.lstrip().startswith(b"%PDF"):
        raise FormatError("not a PDF file (no %PDF header)")
    budget = options.text_budget(len(data))
    cleaned: list[str] = []
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise FormatError("the PDF is encrypted with a password; decrypt it first")
        count = _count_pages(reader, options.max_document_pages)
        for index in range(count):
            text = clean_text(reader.pages[index].extract_text() or "")
            budget.spend(len(text))  # counted as it comes: a page that repeats its text cannot pile it up
            cleaned.append(text)
    except FormatError:
        raise
    except PyPdfError as exc:
        raise FormatError(f"not a readable PDF ({type(exc).__name__}: {exc})") from None
    except Exception as exc:  # a damaged file fails wherever the parser meets the damage
        raise FormatError(f"not a readable PDF ({type(exc).__name__}: {exc})") from None
    if not cleaned:
        raise FormatError("the PDF has no pages")
    texts = cleaned
    scanned = [index for index, text in enumerate(cleaned) if not text]
    read_by_ocr, warnings = _ocr_pages(data, scanned, options, budget) if scanned else ({}, [])
    joined = _Joined()
    pages: list[PageSpan] = []
    for index, text in enumerate(cleaned):
        text = text or read_by_ocr.get(index, "")
        if text:
            start, end = joined.add(text)
            pages.append(PageSpan(page=index + 1, start_char=start, end_char=end, ocr=index in read_by_ocr))
    if not pages:
        reason = warnings[0].split("skipped: ", 1)[-1] if warnings else "no text"
        raise FormatError(f"no page of the PDF ({len(texts)}) has a text layer (scanned images?); {reason}")
    return ExtractedText(joined.text, pages, warnings=warnings)


def _count_pages(reader: Any, max_pages: int) -> int:
    """The pages of the PDF, found by walking its page tree, before any page is read: a page object listed
    twice, or more than `max_pages` pages, is refused (`FormatError`) as soon as the walk meets it."""
    from pypdf.generic import IndirectObject

    root = reader.trailer["/Root"].get_object()
    stack: list[Any] = [root["/Pages"]] if "/Pages" in root else []
    seen: set[tuple[int, int]] = set()
    pages = 0
    while stack:
        item = stack.pop()
        if isinstance(item, IndirectObject):
            key = (item.idnum, item.generation)
            if key in seen:
                raise FormatError(
                    f"its page tree lists object {item.idnum} {item.generation} R more than once (a page tree is "
                    "a tree: each page has one parent); a malformed or hostile PDF"
                )
            seen.add(key)
        node = item.get_object()
        if node is None:
            continue
        kids = node.get("/Kids")
        if node.get("/Type") == "/Pages" or (node.get("/Type") != "/Page" and kids is not None):
            kids = kids.get_object() if kids is not None else []
            stack.extend(reversed(list(kids)))
            continue
        pages += 1
        if pages > max_pages:
            raise FormatError(
                f"it has more than {max_pages} pages, the cap on a PDF's pages "
                "(setting `max_document_pages`, DRIFTRAG_MAX_DOCUMENT_PAGES)"
            )
    return pages


def _ocr_pages(
    data: bytes, indexes: list[int], options: ReaderOptions, budget: TextBudget | None = None
) -> tuple[dict[int, str], list[str]]:
    """The OCR text of the pages at `indexes` (0-based) that gave some; a warning for each that did not."""
    if options.ocr_language is None:
        return {}, [f"page {i + 1} {NO_TEXT_LAYER}; skipped: OCR is off (setting `ocr`)" for i in indexes]
    missing = ocr.ocr_unavailable(options.ocr_language)
    if missing is not None:
        return {}, [f"page {i + 1} {NO_TEXT_LAYER}; skipped: {missing}" for i in indexes]
    found: dict[int, str] = {}
    warnings: list[str] = []
    try:
        pdf = ocr.open_pdf(data)
    except Exception as exc:  # PDFium refuses a file pypdf read: no page of it can be rendered
        reason = f"OCR failed (the PDF could not be rendered: {type(exc).__name__}: {exc})"
        return {}, [f"page {i + 1} {NO_TEXT_LAYER}; skipped: {reason}" for i in indexes]
    try:
        for index in indexes:
            try:
                text = clean_text(ocr.ocr_page(pdf, index, options.ocr_language))
            except Exception as exc:  # PDFium's and Tesseract's own errors: this page only
                warnings.append(f"page {index + 1} {NO_TEXT_LAYER}; skipped: OCR failed ({type(exc).__name__}: {exc})")
                continue
            if text:
                if budget is not None:
                    budget.spend(len(text))
                found[index] = text
            else:
                warnings.append(f"page {index + 1} {NO_TEXT_LAYER}; skipped: OCR found no text on it")
    finally:
        pdf.close()  # type: ignore[attr-defined]
    return found, warnings


def check_archive(data: bytes, kind: str, options: ReaderOptions) -> None:
    """Refuse a zip (DOCX, EPUB) that is no zip, or that would expand past the caps, before expanding it."""
    if not zipfile.is_zipfile(io.BytesIO(data)):
        raise FormatError(f"not {kind} file (not a zip archive)")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise FormatError(f"not a readable {kind.split()[-1]} file ({type(exc).__name__}: {exc})") from None
    if len(members) > options.max_archive_members:
        raise FormatError(
            f"the archive holds {len(members)} members, above the cap of {options.max_archive_members} "
            "(setting `max_archive_members`, DRIFTRAG_MAX_ARCHIVE_MEMBERS)"
        )
    expanded = sum(member.file_size for member in members)
    if expanded > options.max_archive_bytes:
        raise FormatError(
            f"the archive expands to {expanded} bytes ({expanded / 1_048_576:.1f} MiB), above the cap of "
            f"{options.max_archive_bytes / 1_048_576:g} MiB on a zipped document's expanded size "
            "(setting `max_archive_mb`, DRIFTRAG_MAX_ARCHIVE_MB); a zip bomb?"
        )


def read_docx(data: bytes, options: ReaderOptions | None = None) -> ExtractedText:
    """Paragraphs and tables in document order; a table row is its distinct cells joined by ` | `.
    Each heading (a `Title` or `Heading N` paragraph) opens a section that runs to the next heading."""
    import docx
    from docx.table import Table

    options = options or ReaderOptions()
    check_archive(data, "a DOCX", options)
    joined = _Joined(options.text_budget(len(data)))
    sections: list[SectionSpan] = []
    cells_read = 0
    try:
        document = docx.Document(io.BytesIO(data))
        for item in document.iter_inner_content():
            if isinstance(item, Table):
                rows = []
                for row in item.rows:
                    row_cells = row.cells  # a merged cell is repeated once per grid column it spans
                    cells_read += len(row_cells)
                    if cells_read > options.max_table_cells:
                        raise FormatError(
                            f"its tables have more than {options.max_table_cells} cells, the cap on a DOCX's "
                            "table cells (setting `max_table_cells`, DRIFTRAG_MAX_TABLE_CELLS)"
                        )
                    cells = list(dict.fromkeys(clean_text(cell.text) for cell in row_cells))  # merged cells repeat
                    rows.append(" | ".join(cell for cell in cells if cell))
                block, heading = "\n".join(row for row in rows if row), False
            else:
                style = (item.style.name if item.style is not None else "") or ""
                block, heading = clean_text(item.text), style == "Title" or style.startswith("Heading")
            if not block:
                continue
            start, end = joined.add(block)
            if heading:
                sections.append(SectionSpan(number=len(sections) + 1, title=block, start_char=start, end_char=end))
            elif sections:
                sections[-1] = sections[-1].model_copy(update={"end_char": end})
    except FormatError:
        raise
    except Exception as exc:  # a damaged archive: zipfile's, lxml's and python-docx's own errors
        raise FormatError(f"not a readable DOCX file ({type(exc).__name__}: {exc})") from None
    return ExtractedText(joined.text, sections=sections, section_kind="heading" if sections else None)


def html_to_text(data: bytes | str) -> str:
    """The visible text of an HTML page: block elements as paragraphs, table cells spaced."""
    return _html_text(_soup(data))


def _soup(data: bytes | str) -> Any:
    """The page parsed; bytes are decoded by their byte-order mark, else the `<meta charset>`, else a guess
    (BeautifulSoup's), so UTF-16 and UTF-32 pages with a BOM read as text."""
    from bs4 import BeautifulSoup

    if isinstance(data, bytes):
        encoding = bom_encoding(data)
        if encoding is not None:
            data = data.decode(encoding)
    return BeautifulSoup(data, "html.parser")


def _html_text(soup: Any) -> str:
    for tag in soup(_DROPPED_TAGS):
        tag.decompose()
    for tag in soup.find_all(True):
        if tag.name == "tr":
            tag.insert_after("\n")
        elif tag.name in _BLOCK_TAGS:
            tag.insert_before("\n\n")
            tag.insert_after("\n\n")
        elif tag.name in _CELL_TAGS:
            tag.insert_after(" | ")
    text = soup.get_text()
    lines = [line.strip().removesuffix("|").strip() for line in text.split("\n")]
    return clean_text("\n".join(lines))


# Longest first: the UTF-32 LE mark begins with the UTF-16 LE one.
_BOMS = (
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\xef\xbb\xbf", "utf-8-sig"),
    (b"\xfe\xff", "utf-16-be"),
    (b"\xff\xfe", "utf-16-le"),
)


def bom_encoding(data: bytes) -> str | None:
    """The encoding a byte-order mark at the start of `data` names (the codec drops the mark), else None."""
    for mark, encoding in _BOMS:
        if data.startswith(mark):
            return encoding if encoding.startswith("utf-8") else encoding.replace("-be", "").replace("-le", "")
    return None


_CONTAINER_NS = {"c": "urn:oasis:names:tc:opendocument:xmlns:container"}
_OPF_NS = {"opf": "http://www.idpf.org/2007/opf"}


def read_epub(data: bytes, options: ReaderOptions | None = None) -> ExtractedText:
    """The chapters of the spine in reading order, each as HTML text, each a section numbered by its place
    in the spine and titled by its first heading (else its `<title>`)."""
    options = options or ReaderOptions()
    check_archive(data, "an EPUB", options)
    joined = _Joined(options.text_budget(len(data)))
    sections: list[SectionSpan] = []
    warnings: list[str] = []
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = set(archive.namelist())
            if "META-INF/container.xml" not in names:
                raise FormatError("not an EPUB file (no META-INF/container.xml)")
            container = ElementTree.fromstring(archive.read("META-INF/container.xml"))
            rootfile = container.find(".//c:rootfile", _CONTAINER_NS)
            opf_path = rootfile.get("full-path") if rootfile is not None else None
            if not opf_path or opf_path not in names:
                raise FormatError("not an EPUB file (its container names no package document)")
            package = ElementTree.fromstring(archive.read(opf_path))
            base = posixpath.dirname(opf_path)
            manifest = {
                item.get("id"): item.get("href", "") for item in package.iterfind(".//opf:manifest/opf:item", _OPF_NS)
            }
            spine = package.findall(".//opf:spine/opf:itemref", _OPF_NS)
            if len(spine) > options.max_spine_entries:
                raise FormatError(
                    f"its spine lists {len(spine)} chapters, above the cap of {options.max_spine_entries} "
                    "(setting `max_spine_entries`, DRIFTRAG_MAX_SPINE_ENTRIES)"
                )
            read: set[str] = set()
            repeated = 0
            for number, ref in enumerate(spine, start=1):
                href = manifest.get(ref.get("idref"))
                if not href:
                    continue
                member = posixpath.normpath(posixpath.join(base, unquote(href)))
                if member not in names:
                    continue
                if member in read:  # a chapter listed again is read once: 400 listings of 1 MB are not 400 MB
                    repeated += 1
                    continue
                read.add(member)
                soup = _soup(archive.read(member))
                title = _chapter_title(soup)
                text = _html_text(soup)
                if text:
                    start, end = joined.add(text)
                    sections.append(SectionSpan(number=number, title=title, start_char=start, end_char=end))
            if repeated:
                warnings.append(f"the spine lists {repeated} chapters again; each was read once")
    except FormatError:
        raise
    except (zipfile.BadZipFile, ElementTree.ParseError, KeyError, ValueError, OSError) as exc:
        raise FormatError(f"not a readable EPUB file ({type(exc).__name__}: {exc})") from None
    return ExtractedText(
        joined.text, sections=sections, section_kind="chapter" if sections else None, warnings=warnings
    )


def _chapter_title(soup: Any) -> str:
    heading = soup.find(_HEADING_TAGS)
    if heading is not None and heading.get_text(strip=True):
        return clean_text(heading.get_text(" "))[:200]
    title = soup.find("title")
    return clean_text(title.get_text(" "))[:200] if title is not None else ""
