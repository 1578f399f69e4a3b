"""Small files that expand: generators of the hostile documents the loaders must refuse or read once.

repeated_page_pdf(20_000)            # a page tree listing one page object 20,000 times (18 KB with fanout)
many_pages_pdf(12)                   # 12 distinct pages, each with its own line of text
repeated_spine_epub(400, 1_000_000)  # a spine listing one 1 MB chapter 400 times (about 2.4 KB zipped)
"""

from __future__ import annotations

import io
import zipfile


def _pdf(objects: list[bytes]) -> bytes:
    """A PDF of `objects` (numbered from 1, the first the catalog) with a correct cross-reference table."""
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n%s\nendobj\n" % (number, body))
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref))
    return out.getvalue()


def _content(text: str) -> bytes:
    stream = b"BT /F1 12 Tf 72 720 Td (%s) Tj ET" % text.encode("latin-1")
    return b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream)


_FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"


def _page(parent: int, content: int, font: int) -> bytes:
    resources = b"<< /Font << /F1 %d 0 R >> >>" % font
    return b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Contents %d 0 R /Resources %s >>" % (
        parent,
        content,
        resources,
    )


def repeated_page_pdf(times: int, *, fanout: int = 0, text: str = "The same page again and again.") -> bytes:
    """One page object listed `times` times. `fanout` > 0: an intermediate Pages node listing the page
    `fanout` times, itself listed `times // fanout` times by the root (a few KB for 20,000 pages)."""
    # 1 catalog, 2 root Pages, 3 page, 4 content, 5 font, 6 intermediate Pages (with fanout)
    if fanout:
        inner = b"<< /Type /Pages /Parent 2 0 R /Kids [%s] /Count %d >>" % (b" ".join([b"3 0 R"] * fanout), fanout)
        outer = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join([b"6 0 R"] * (times // fanout)), times)
        return _pdf([b"<< /Type /Catalog /Pages 2 0 R >>", outer, _page(6, 4, 5), _content(text), _FONT, inner])
    root = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join([b"3 0 R"] * times), times)
    return _pdf([b"<< /Type /Catalog /Pages 2 0 R >>", root, _page(2, 4, 5), _content(text), _FONT])


def many_pages_pdf(pages: int, text: str = "Page {n} has its own line.") -> bytes:
    """`pages` distinct pages, page n saying `text` with n filled in."""
    # 1 catalog, 2 Pages, 3 font, then per page: its object and its content
    kids = b" ".join(b"%d 0 R" % (4 + 2 * i) for i in range(pages))
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, pages), _FONT]
    for i in range(pages):
        objects += [_page(2, 5 + 2 * i, 3), _content(text.format(n=i + 1))]
    return _pdf(objects)


_CONTAINER = """<?xml version="1.0"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
  <rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles>
</container>"""


def epub(chapters: dict[str, str], spine: list[str]) -> bytes:
    """An EPUB whose manifest holds `chapters` (id → body text) and whose spine lists `spine` (ids, in order)."""
    items = "".join(f'<item id="{cid}" href="{cid}.xhtml" media-type="application/xhtml+xml"/>' for cid in chapters)
    refs = "".join(f'<itemref idref="{cid}"/>' for cid in spine)
    opf = (
        '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
        f"<manifest>{items}</manifest><spine>{refs}</spine></package>"
    )
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        archive.writestr("META-INF/container.xml", _CONTAINER)
        archive.writestr("OEBPS/content.opf", opf)
        for cid, body in chapters.items():
            page = f"<html><head><title>{cid}</title></head><body><h1>{cid}</h1><p>{body}</p></body></html>"
            archive.writestr(f"OEBPS/{cid}.xhtml", page)
    return out.getvalue()


def repeated_spine_epub(times: int, chapter_chars: int) -> bytes:
    """A spine listing one chapter of about `chapter_chars` characters `times` times."""
    sentence = "All work and no play makes a dull chapter. "
    body = (sentence * (chapter_chars // len(sentence) + 1))[:chapter_chars]
    return epub({"chapter": body}, ["chapter"] * times)
