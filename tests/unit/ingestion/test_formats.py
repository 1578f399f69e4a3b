"""The PDF, DOCX, HTML and EPUB loaders, on small files written by the tests (`tests/fakes/documents.py`)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from driftrag.ingestion.chunking import chunk_document
from driftrag.ingestion.formats import ReaderOptions
from driftrag.ingestion.loading import InputError, collect_paths, document_from_text, load_document
from driftrag.models.search import Source
from driftrag.search.markdown import sources_markdown
from tests.fakes.documents import html_page, write_docx, write_epub, write_pdf

PAGE_ONE = ["Captain Mirela Voss sailed into Harbor Town at dawn.", "The lamp of the Amber Lighthouse was out."]
PAGE_TWO = ["Pip Rackham ran to the Amber Lighthouse (at night).", "The keeper was asleep."]


def test_a_pdf_keeps_the_text_of_each_page_and_its_number(tmp_path: Path) -> None:
    document = load_document(write_pdf(tmp_path / "harbor.pdf", [PAGE_ONE, PAGE_TWO]), "kb")
    assert document.text == "\n".join(PAGE_ONE) + "\n\n" + "\n".join(PAGE_TWO)
    assert [span.page for span in document.pages] == [1, 2]
    for span, lines in zip(document.pages, (PAGE_ONE, PAGE_TWO), strict=True):
        assert document.text[span.start_char : span.end_char] == "\n".join(lines)
    assert document.warnings == [] and document.title == "harbor.pdf"
    assert document.path == str((tmp_path / "harbor.pdf").resolve())


def test_each_chunk_of_a_pdf_records_the_pages_its_text_came_from(tmp_path: Path) -> None:
    document = load_document(write_pdf(tmp_path / "harbor.pdf", [PAGE_ONE, PAGE_TWO]), "kb")
    whole = chunk_document(document)
    assert len(whole) == 1 and whole[0].pages == [1, 2]
    small = chunk_document(document, chunk_size=12, chunk_overlap=0)
    assert small[0].pages == [1] and small[-1].pages == [2]
    for chunk in small:
        overlap = [s.page for s in document.pages if s.start_char < chunk.end_char and chunk.start_char < s.end_char]
        assert chunk.pages == overlap
    # Pages take no part in the ids: a chunk's id is that of the same text without pages.
    plain = chunk_document(document.model_copy(update={"pages": []}), chunk_size=12, chunk_overlap=0)
    assert [c.id for c in plain] == [c.id for c in small] and all(c.pages is None for c in plain)


NO_OCR = ReaderOptions(ocr_language=None)


def test_a_pdf_page_without_a_text_layer_is_skipped_with_a_reason(tmp_path: Path) -> None:
    path = write_pdf(tmp_path / "scanned.pdf", [PAGE_ONE, [], PAGE_TWO])
    document = load_document(path, "kb", options=NO_OCR)
    assert [span.page for span in document.pages] == [1, 3]
    [warning] = document.warnings
    assert str(path) in warning and "page 2" in warning and "no text layer" in warning
    assert "OCR is off (setting `ocr`)" in warning
    assert chunk_document(document)[0].pages == [1, 3]


def test_a_pdf_without_any_text_layer_is_refused(tmp_path: Path) -> None:
    path = write_pdf(tmp_path / "images.pdf", [[], []])
    with pytest.raises(InputError, match=r"no page of the PDF \(2\) has a text layer.*OCR is off") as raised:
        load_document(path, "kb", options=NO_OCR)
    assert str(path) in str(raised.value)


@pytest.mark.parametrize(
    ("name", "content", "problem"),
    [
        ("junk.pdf", bytes(range(256)) * 8, "not a PDF file"),
        ("cut.pdf", b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R", "not a readable PDF"),
        ("text.docx", b"Just some words, not a Word file.", "not a DOCX file (not a zip archive)"),
        ("junk.docx", bytes(range(256)) * 8, "not a DOCX file (not a zip archive)"),
        ("text.epub", b"Not a book.", "not an EPUB file (not a zip archive)"),
        ("junk.html", b"\x00\x01\x02\x03binary" * 50, "looks like a binary file, not HTML"),
        ("empty.pdf", b"", "file is empty"),
        ("blank.docx", b" \n", "file is empty"),
        ("script.html", b"<html><script>var x = 1;</script></html>", "no text found in the HTML file"),
    ],
)
def test_a_bad_file_of_a_known_format_raises_one_clear_error_naming_it(
    tmp_path: Path, name: str, content: bytes, problem: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(InputError) as raised:
        load_document(path, "kb")
    message = str(raised.value)
    assert str(path) in message and problem in message, message


def test_a_zip_that_is_not_a_docx_or_an_epub_is_refused(tmp_path: Path) -> None:
    for name in ("notes.docx", "notes.epub"):
        with zipfile.ZipFile(tmp_path / name, "w") as archive:
            archive.writestr("notes.txt", "plain text in a zip")
    with pytest.raises(InputError, match="not a readable DOCX file"):
        load_document(tmp_path / "notes.docx", "kb")
    with pytest.raises(InputError, match=r"not an EPUB file \(no META-INF/container.xml\)"):
        load_document(tmp_path / "notes.epub", "kb")


def test_a_docx_gives_its_paragraphs_and_table_in_order(tmp_path: Path) -> None:
    path = write_docx(
        tmp_path / "report.docx",
        ["Captain Mirela Voss wrote this report.", "The harbor was calm."],
        [["Ship", "Captain"], ["Gull", "Mirela Voss"], ["Heron", "Pip Rackham"]],
    )
    document = load_document(path, "kb")
    assert document.text == (
        "Harbor report\n\nCaptain Mirela Voss wrote this report.\n\nThe harbor was calm.\n\n"
        "Ship | Captain\nGull | Mirela Voss\nHeron | Pip Rackham\n\nAfter the table."
    )
    assert document.pages == [] and chunk_document(document)[0].pages is None
    # The heading opens a section that runs to the end (no other heading follows).
    [section] = document.sections
    assert (section.number, section.title, document.section_kind) == (1, "Harbor report", "heading")
    assert document.text[section.start_char : section.end_char] == document.text
    [chunk] = chunk_document(document)
    assert (chunk.sections, chunk.section_titles, chunk.section_kind) == ([1], ["Harbor report"], "heading")
    assert "Gull | Mirela Voss" in chunk.text  # the table's text is ingested


def test_docx_headings_split_it_into_sections_and_text_before_them_has_none(tmp_path: Path) -> None:
    import docx

    document = docx.Document()
    document.add_paragraph("A preface without a heading.")
    document.add_heading("Arrival", level=1)
    document.add_paragraph("Captain Mirela Voss sailed in.")
    document.add_heading("Crew", level=2)
    grid = document.add_table(rows=1, cols=2)
    grid.cell(0, 0).text, grid.cell(0, 1).text = "Pip Rackham", "deckhand"
    document.save(str(tmp_path / "log.docx"))
    loaded = load_document(tmp_path / "log.docx", "kb")
    spans = {s.title: loaded.text[s.start_char : s.end_char] for s in loaded.sections}
    assert spans == {"Arrival": "Arrival\n\nCaptain Mirela Voss sailed in.", "Crew": "Crew\n\nPip Rackham | deckhand"}
    assert [s.number for s in loaded.sections] == [1, 2]
    chunks = chunk_document(loaded, chunk_size=8, chunk_overlap=0)
    assert chunks[0].sections is None and chunks[-1].section_titles == ["Crew"]


def test_an_html_page_gives_its_visible_text_as_paragraphs(tmp_path: Path) -> None:
    path = tmp_path / "night.html"
    path.write_text(html_page("Harbor Town", ["A <i>quiet</i> night in   the port.", "Lamps out."]), encoding="utf-8")
    document = load_document(path, "kb")
    assert document.text == (
        "Harbor Town\n\nA quiet night in the port.\n\nLamps out.\n\nShip | Captain\nGull | Mirela Voss"
    )
    assert "script text" not in document.text and "color" not in document.text


def test_an_html_page_in_latin_1_is_decoded_from_its_declaration(tmp_path: Path) -> None:
    path = tmp_path / "cafe.htm"
    page = '<html><head><meta charset="iso-8859-1"></head><body><p>Caf\u00e9 by the Salt Chapel</p></body></html>'
    path.write_bytes(page.encode("latin-1"))
    assert load_document(path, "kb").text == "Caf\u00e9 by the Salt Chapel"


def test_an_epub_gives_its_chapters_in_spine_order(tmp_path: Path) -> None:
    path = write_epub(
        tmp_path / "tales.epub",
        [("The Lamp", ["Pip Rackham lit the lamp."]), ("The Storm", ["Captain Mirela Voss came home."])],
    )
    document = load_document(path, "kb")
    assert document.text == "The Lamp\n\nPip Rackham lit the lamp.\n\nThe Storm\n\nCaptain Mirela Voss came home."
    assert [(s.number, s.title) for s in document.sections] == [(1, "The Lamp"), (2, "The Storm")]
    assert document.section_kind == "chapter"
    assert document.text[document.sections[1].start_char : document.sections[1].end_char] == (
        "The Storm\n\nCaptain Mirela Voss came home."
    )
    whole, *_ = chunk_document(document)
    assert (whole.sections, whole.section_titles) == ([1, 2], ["The Lamp", "The Storm"])
    last = chunk_document(document, chunk_size=8, chunk_overlap=0)[-1]
    assert (last.sections, last.section_titles, last.section_kind) == ([2], ["The Storm"], "chapter")


def test_a_folder_gives_every_supported_format_and_skips_the_others(tmp_path: Path) -> None:
    folder = tmp_path / "corpus"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.txt").write_text("a")
    write_pdf(folder / "b.PDF", [PAGE_ONE])
    write_docx(folder / "sub" / "c.docx", ["c"], [["x", "y"]])
    (folder / "d.html").write_text(html_page("d", ["d"]))
    (folder / "e.htm").write_text(html_page("e", ["e"]))
    write_epub(folder / "f.epub", [("f", ["f"])])
    (folder / "image.png").write_bytes(b"\x89PNG")
    (folder / ".hidden.pdf").write_bytes(b"%PDF")
    names = [path.relative_to(folder).as_posix() for path in collect_paths([folder])]
    assert names == ["a.txt", "b.PDF", "d.html", "e.htm", "f.epub", "sub/c.docx"]


def test_text_files_keep_their_document_and_chunk_ids(tmp_path: Path) -> None:
    """Ids computed before the loaders existed: a kb of text files does not re-extract anything."""
    text = "Captain Mirela Voss sailed into Harbor Town at dawn.\n\n" * 30
    document = document_from_text(text, "kb", "harbor.txt", path="/data/harbor.txt")
    chunks = chunk_document(document, chunk_size=60, chunk_overlap=5)
    assert document.id == "document-017de10859b493e379015f2b163359fc"
    assert len(chunks) == 8 and all(chunk.pages is None for chunk in chunks)
    assert [chunk.id for chunk in chunks[:3]] == [
        "chunk-96eaee20c02152f2d6b89d5033863e62",
        "chunk-ce0474746e233774a419e55b6740ac6c",
        "chunk-a74a5156118cb39687d8170c4b77ae17",
    ]
    path = tmp_path / "harbor.md"
    path.write_text(text, encoding="utf-8")
    loaded = load_document(path, "kb")
    assert loaded.pages == [] and loaded.warnings == []


def test_sources_show_the_pages_of_a_pdf_chunk() -> None:
    sources = [
        Source(id="chunk-1", kind="chunk", title="harbor.pdf", text="Pip ran.", pages=[2]),
        Source(id="chunk-2", kind="chunk", title="harbor.pdf", text="Voss sailed.", pages=[1, 2]),
        Source(id="chunk-3", kind="chunk", title="notes.md", text="Plain."),
    ]
    rendered = sources_markdown(sources)
    assert "(chunk — harbor.pdf, p. 2)" in rendered
    assert "(chunk — harbor.pdf, pp. 1-2)" in rendered
    assert "(chunk — notes.md)" in rendered


def test_sources_show_ocr_pages_epub_chapters_and_docx_headings() -> None:
    def chunk(**position: object) -> Source:
        return Source(id="chunk-1", kind="chunk", title="t", text="x", **position)

    assert chunk(pages=[2, 3], ocr_pages=[3]).page_label() == "pp. 2-3, OCR"
    assert chunk(sections=[4], section_titles=["The Storm"], section_kind="chapter").page_label() == (
        "ch. 4 \u201cThe Storm\u201d"
    )
    assert chunk(sections=[4, 5], section_titles=["A", "B"], section_kind="chapter").page_label() == "ch. 4-5"
    assert chunk(sections=[1, 2], section_titles=["Arrival", "Crew"], section_kind="heading").page_label() == (
        "\u00a7 Arrival / Crew"
    )
