"""Text out of PDF, DOCX, HTML and EPUB files, through small maintained libraries.

- PDF: `pypdf`, the text layer page by page; the page of every character is kept (`PageSpan`), so each
  chunk knows the page(s) it came from. A page without a text layer (a scanned image) is skipped with a
  warning that says so: there is no OCR.
- DOCX: `python-docx`, paragraphs and tables in document order (a table row becomes `cell | cell`).
- HTML: `beautifulsoup4` with the standard library's parser; scripts, styles and the head are dropped,
  block elements become paragraphs.
- EPUB: the zip read with `zipfile`, its spine in reading order, each chapter's XHTML as HTML.

Every reader raises `InputError` naming the file for what it cannot read (a corrupt PDF, a .docx that
is no zip, junk with a known extension), so one bad file gives one clear error. All are synchronous:
`load_document` runs them in a thread.
"""

from __future__ import annotations

import io
import posixpath
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote
from xml.etree import ElementTree

from driftrag.errors import DriftRAGError
from driftrag.models.graph import PageSpan

PDF_SUFFIXES = frozenset({".pdf"})
DOCX_SUFFIXES = frozenset({".docx"})
HTML_SUFFIXES = frozenset({".html", ".htm", ".xhtml"})
EPUB_SUFFIXES = frozenset({".epub"})
DOCUMENT_SUFFIXES = PDF_SUFFIXES | DOCX_SUFFIXES | HTML_SUFFIXES | EPUB_SUFFIXES

PAGE_SEPARATOR = "\n\n"
NO_TEXT_LAYER = "has no text layer (a scanned image?); skipped, OCR is not available"

_BLOCK_TAGS = frozenset(
    "address article aside blockquote body br caption dd details div dl dt figcaption figure footer form "
    "h1 h2 h3 h4 h5 h6 header hr li main nav ol p pre section summary table tbody thead tfoot ul".split()
)
_CELL_TAGS = frozenset({"td", "th"})
_DROPPED_TAGS = ("script", "style", "noscript", "template", "head", "svg", "math")
_SPACES = re.compile(r"[^\S\n]+")
_BLANK_LINES = re.compile(r"\n{3,}")


class FormatError(DriftRAGError):
    """Raised by a reader; `load_document` turns it into an `InputError` naming the file."""


@dataclass
class ExtractedText:
    """A file's text, the page each stretch of it came from (PDF), and what was skipped."""

    text: str
    pages: list[PageSpan] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def clean_text(text: str) -> str:
    """LF line endings, runs of spaces and tabs as one space, lines stripped, at most one blank line."""
    text = text.replace("\ufeff", "").replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    lines = [_SPACES.sub(" ", line).strip() for line in text.split("\n")]
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


def read_document(file: Path, data: bytes) -> ExtractedText:
    """The text of a PDF, DOCX, HTML or EPUB file (by its suffix); `FormatError` for what cannot be read."""
    suffix = file.suffix.lower()
    if suffix in PDF_SUFFIXES:
        return read_pdf(data)
    if suffix in DOCX_SUFFIXES:
        return read_docx(data)
    if suffix in HTML_SUFFIXES:
        return ExtractedText(html_to_text(data))
    if suffix in EPUB_SUFFIXES:
        return read_epub(data)
    raise FormatError(f"no reader for {suffix!r} files")


def read_pdf(data: bytes) -> ExtractedText:
    """Each page's text layer, pages joined by a blank line, with their 1-based numbers and offsets."""
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    if not data.lstrip().startswith(b"%PDF"):
        raise FormatError("not a PDF file (no %PDF header)")
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise FormatError("the PDF is encrypted with a password; decrypt it first")
        texts = [page.extract_text() or "" for page in reader.pages]
    except FormatError:
        raise
    except PyPdfError as exc:
        raise FormatError(f"not a readable PDF ({type(exc).__name__}: {exc})") from None
    except Exception as exc:  # a damaged file fails wherever the parser meets the damage
        raise FormatError(f"not a readable PDF ({type(exc).__name__}: {exc})") from None
    if not texts:
        raise FormatError("the PDF has no pages")
    parts: list[str] = []
    pages: list[PageSpan] = []
    warnings: list[str] = []
    offset = 0
    for number, raw in enumerate(texts, start=1):
        text = clean_text(raw)
        if not text:
            warnings.append(f"page {number} {NO_TEXT_LAYER}")
            continue
        if parts:
            offset += len(PAGE_SEPARATOR)
        pages.append(PageSpan(page=number, start_char=offset, end_char=offset + len(text)))
        parts.append(text)
        offset += len(text)
    if not parts:
        raise FormatError(f"no page of the PDF ({len(texts)}) has a text layer (scanned images?); OCR is not available")
    return ExtractedText(PAGE_SEPARATOR.join(parts), pages, warnings)


def read_docx(data: bytes) -> ExtractedText:
    """Paragraphs and tables in document order; a table row is its distinct cells joined by ` | `."""
    import docx
    from docx.table import Table

    if not zipfile.is_zipfile(io.BytesIO(data)):
        raise FormatError("not a DOCX file (not a zip archive)")
    try:
        document = docx.Document(io.BytesIO(data))
        blocks: list[str] = []
        for item in document.iter_inner_content():
            if isinstance(item, Table):
                rows = []
                for row in item.rows:
                    cells = list(dict.fromkeys(clean_text(cell.text) for cell in row.cells))  # merged cells repeat
                    rows.append(" | ".join(cell for cell in cells if cell))
                blocks.append("\n".join(row for row in rows if row))
            else:
                blocks.append(clean_text(item.text))
    except Exception as exc:  # a damaged archive: zipfile's, lxml's and python-docx's own errors
        raise FormatError(f"not a readable DOCX file ({type(exc).__name__}: {exc})") from None
    return ExtractedText("\n\n".join(block for block in blocks if block))


def html_to_text(data: bytes | str) -> str:
    """The visible text of an HTML page: block elements as paragraphs, table cells spaced."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(data, "html.parser")
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


_CONTAINER_NS = {"c": "urn:oasis:names:tc:opendocument:xmlns:container"}
_OPF_NS = {"opf": "http://www.idpf.org/2007/opf"}


def read_epub(data: bytes) -> ExtractedText:
    """The chapters of the spine in reading order, each as HTML text."""
    if not zipfile.is_zipfile(io.BytesIO(data)):
        raise FormatError("not an EPUB file (not a zip archive)")
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
            chapters = []
            for ref in package.iterfind(".//opf:spine/opf:itemref", _OPF_NS):
                href = manifest.get(ref.get("idref"))
                if not href:
                    continue
                member = posixpath.normpath(posixpath.join(base, unquote(href)))
                if member in names:
                    chapters.append(html_to_text(archive.read(member)))
    except FormatError:
        raise
    except (zipfile.BadZipFile, ElementTree.ParseError, KeyError, ValueError, OSError) as exc:
        raise FormatError(f"not a readable EPUB file ({type(exc).__name__}: {exc})") from None
    return ExtractedText("\n\n".join(chapter for chapter in chapters if chapter))
