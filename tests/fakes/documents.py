"""Small PDF, DOCX, HTML and EPUB files written at test time (nothing binary is committed).

The PDF is written by hand (a Helvetica text stream per page, a correct xref table), so a page can be
left without any text, or be a picture of text (drawn by Pillow) as a scanned page is; the DOCX through
python-docx; the EPUB zipped here.
"""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path


class ScannedPage:
    """A PDF page that is only an image of these lines of text (no text layer), as a scanner makes."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def image_object(self) -> tuple[bytes, bytes]:
        """The page's content stream and its image XObject (grey pixels, Flate-compressed)."""
        from PIL import Image, ImageDraw, ImageFont

        width, height = 1700, 2200  # a letter page at 200 dpi
        image = Image.new("L", (width, height), 255)
        draw = ImageDraw.Draw(image)
        font = ImageFont.load_default(size=44)
        for number, line in enumerate(self.lines):
            draw.text((150, 200 + 70 * number), line, fill=0, font=font)
        pixels = zlib.compress(image.tobytes())
        xobject = (
            b"<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray "
            b"/BitsPerComponent 8 /Filter /FlateDecode /Length %d >>\nstream\n"
            % (width, height, len(pixels))
            + pixels
            + b"\nendstream"
        )
        return b"q 612 0 0 792 0 0 cm /Im1 Do Q", xobject


def _pdf_string(text: str) -> str:
    return "(" + text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ")"


def write_pdf(path: Path, pages: list[list[str] | ScannedPage]) -> Path:
    """A PDF with one page per item, each line of it drawn as text; an empty list is a page without text,
    a `ScannedPage` a page that is an image of its lines."""
    objects: list[bytes] = []
    n_pages = len(pages)
    page_ids = [4 + 3 * i for i in range(n_pages)]
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    kids = " ".join(f"{pid} 0 R" for pid in page_ids)
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {n_pages} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    for i, lines in enumerate(pages):
        content_id, image_id = page_ids[i] + 1, page_ids[i] + 2
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> "
            f"/XObject << /Im1 {image_id} 0 R >> >> /Contents {content_id} 0 R >>".encode()
        )
        image = b"<< /Type /XObject /Subtype /Image /Width 1 /Height 1 /ColorSpace /DeviceGray "
        image += b"/BitsPerComponent 8 /Length 1 >>\nstream\n\xff\nendstream"  # unused on text pages
        if isinstance(lines, ScannedPage):
            stream, image = lines.image_object()
        elif lines:
            body = "BT /F1 12 Tf 16 TL 72 720 Td " + " ".join(f"{_pdf_string(line)} Tj T*" for line in lines) + " ET"
            stream = body.encode("latin-1")
        else:
            stream = b"0.5 g 72 72 468 648 re f"  # a grey rectangle: something drawn, no text
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        objects.append(image)
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, obj in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + obj + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    path.write_bytes(bytes(out))
    return path


def write_docx(path: Path, paragraphs: list[str], table: list[list[str]]) -> Path:
    """A DOCX with a heading, the paragraphs, then a table of the given rows."""
    import docx

    document = docx.Document()
    document.add_heading("Harbor report", level=1)
    for paragraph in paragraphs:
        document.add_paragraph(paragraph)
    grid = document.add_table(rows=len(table), cols=len(table[0]))
    for r, row in enumerate(table):
        for c, cell in enumerate(row):
            grid.cell(r, c).text = cell
    document.add_paragraph("After the table.")
    document.save(str(path))
    return path


def html_page(title: str, paragraphs: list[str]) -> str:
    body = "\n".join(f"<p>{paragraph}</p>" for paragraph in paragraphs)
    return (
        f"<!DOCTYPE html><html><head><title>{title}</title><style>p {{ color: red; }}</style>"
        "<script>var hidden = 'script text';</script></head>"
        f"<body><h1>{title}</h1>{body}"
        "<table><tr><th>Ship</th><th>Captain</th></tr><tr><td>Gull</td><td>Mirela <b>Voss</b></td></tr></table>"
        "</body></html>"
    )


def write_epub(path: Path, chapters: list[tuple[str, list[str]]]) -> Path:
    """An EPUB 3 zipped by hand: the chapters in spine order (the manifest lists them reversed)."""
    container = (
        '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
        '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
        "</rootfiles></container>"
    )
    items = "".join(
        f'<item id="ch{i}" href="text/ch{i}.xhtml" media-type="application/xhtml+xml"/>'
        for i in reversed(range(len(chapters)))
    )
    spine = "".join(f'<itemref idref="ch{i}"/>' for i in range(len(chapters)))
    opf = (
        '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">'
        '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:identifier id="id">test-book</dc:identifier>'
        "<dc:title>Harbor Tales</dc:title><dc:language>en</dc:language></metadata>"
        f"<manifest>{items}</manifest><spine>{spine}</spine></package>"
    )
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        archive.writestr("META-INF/container.xml", container)
        archive.writestr("OEBPS/content.opf", opf)
        for i, (title, paragraphs) in enumerate(chapters):
            body = "".join(f"<p>{paragraph}</p>" for paragraph in paragraphs)
            archive.writestr(
                f"OEBPS/text/ch{i}.xhtml",
                '<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/xhtml">'
                f"<head><title>{title}</title></head><body><h2>{title}</h2>{body}</body></html>",
            )
    return path
