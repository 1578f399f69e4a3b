"""What loading says of inputs that are not plain UTF-8 files: UTF-16 and UTF-32 text and HTML, symlink
loops, zip bombs in DOCX and EPUB form, and uploads read from bytes."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from driftrag.ingestion.formats import ReaderOptions
from driftrag.ingestion.loading import InputError, collect_paths, load_bytes, load_document, reader_options
from driftrag.settings import Settings
from tests.fakes.documents import write_docx, write_epub, write_pdf

TEXT = "Captain Mirela Voss sailed into Harbor Town.\nCaf\u00e9 at the Salt Chapel."


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32"])
def test_text_with_a_utf16_or_utf32_byte_order_mark_is_decoded(tmp_path: Path, encoding: str) -> None:
    path = tmp_path / "notes.txt"
    data = TEXT.encode(encoding)
    if encoding.endswith(("-le", "-be")):  # these codecs write no mark: add the one they mean
        data = ("\ufeff" + TEXT).encode(encoding)
    path.write_bytes(data)
    assert load_document(path, "kb").text == TEXT


def test_utf16_without_a_byte_order_mark_is_named_utf16_not_binary(tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    path.write_bytes(TEXT.encode("utf-16-le"))
    with pytest.raises(InputError) as raised:
        load_document(path, "kb")
    message = str(raised.value)
    assert "UTF-16 (little-endian)" in message and "without a byte-order mark" in message
    assert "binary" not in message


def test_a_utf16_html_page_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    path = tmp_path / "page.html"
    page = '<html><head><meta charset="utf-16"></head><body><p>Caf\u00e9 by the Salt Chapel</p></body></html>'
    path.write_bytes(page.encode("utf-16"))
    assert load_document(path, "kb").text == "Caf\u00e9 by the Salt Chapel"


def test_an_html_page_follows_its_meta_charset(tmp_path: Path) -> None:
    path = tmp_path / "page.htm"
    page = '<html><head><meta http-equiv="Content-Type" content="text/html; charset=windows-1252"></head>'
    page += "<body><p>\u201cCaf\u00e9\u201d \u2014 the Salt Chapel</p></body></html>"
    path.write_bytes(page.encode("cp1252"))
    assert load_document(path, "kb").text == "\u201cCaf\u00e9\u201d \u2014 the Salt Chapel"


def test_a_symlink_loop_is_named_as_such(tmp_path: Path) -> None:
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "good.txt").write_text("Captain Mirela Voss.")
    (folder / "a.txt").symlink_to(folder / "b.txt")
    (folder / "b.txt").symlink_to(folder / "a.txt")
    for call in (lambda: load_document(folder / "a.txt", "kb"), lambda: collect_paths([folder])):
        with pytest.raises(InputError) as raised:
            call()
        message = str(raised.value)
        assert "symbolic link loop" in message and "no such file" not in message
        assert str(folder / "a.txt") in message


def test_a_broken_symlink_in_a_folder_is_named(tmp_path: Path) -> None:
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "gone.md").symlink_to(tmp_path / "deleted.md")
    with pytest.raises(InputError, match=r"gone\.md: broken symbolic link"):
        collect_paths([folder])


def _bomb(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


@pytest.mark.parametrize("suffix", [".docx", ".epub"])
def test_a_zipped_document_expanding_past_the_cap_is_refused_before_expansion(tmp_path: Path, suffix: str) -> None:
    # 20 MiB of zeros compress to about 20 KiB.
    path = _bomb(tmp_path / f"bomb{suffix}", {"word/document.xml": b"\0" * (20 * 1024 * 1024)})
    assert path.stat().st_size < 100_000
    with pytest.raises(InputError) as raised:
        load_document(path, "kb", options=ReaderOptions(max_archive_bytes=8 * 1024 * 1024))
    message = str(raised.value)
    assert str(path) in message and "expands to 20971520 bytes (20.0 MiB), above the cap of 8 MiB" in message
    assert "max_archive_mb" in message and "DRIFTRAG_MAX_ARCHIVE_MB" in message


def test_a_zipped_document_with_too_many_members_is_refused(tmp_path: Path) -> None:
    path = _bomb(tmp_path / "many.epub", {f"OEBPS/{i}.xhtml": b"<p/>" for i in range(60)})
    with pytest.raises(InputError, match=r"holds 60 members, above the cap of 50 \(setting `max_archive_members`"):
        load_document(path, "kb", options=ReaderOptions(max_archive_members=50))


def test_documents_within_the_caps_read_as_usual(tmp_path: Path) -> None:
    options = reader_options(Settings(_env_file=None, max_archive_mb=1, max_archive_members=20))
    docx = write_docx(tmp_path / "a.docx", ["Captain Mirela Voss."], [["Gull", "Voss"]])
    epub = write_epub(tmp_path / "b.epub", [("One", ["Pip Rackham."])])
    assert "Gull | Voss" in load_document(docx, "kb", options=options).text
    assert load_document(epub, "kb", options=options).text == "One\n\nPip Rackham."


def test_reader_options_follow_the_settings() -> None:
    options = reader_options(Settings(_env_file=None, ocr=False, max_archive_mb=2, max_archive_members=7))
    assert options == ReaderOptions(ocr_language=None, max_archive_bytes=2 * 1024 * 1024, max_archive_members=7)
    assert reader_options(Settings(_env_file=None, ocr_language="fra")).ocr_language == "fra"
    with pytest.raises(ValueError, match="ocr_language"):
        Settings(_env_file=None, ocr_language="eng; rm -rf /")


def test_an_upload_is_read_from_its_bytes_like_a_file(tmp_path: Path) -> None:
    pdf = write_pdf(tmp_path / "log.pdf", [["Captain Mirela Voss."], ["Pip Rackham."]]).read_bytes()
    document = load_bytes("log.pdf", pdf, "kb")
    assert (document.title, document.path) == ("log.pdf", None)
    assert [span.page for span in document.pages] == [1, 2]
    with pytest.raises(InputError, match=r"log\.pdf: file is \d+ bytes .* above the limit of 100 bytes"):
        load_bytes("log.pdf", pdf, "kb", max_bytes=100)
    with pytest.raises(InputError, match=r"notes\.txt: looks like a binary file, not text"):
        load_bytes("notes.txt", bytes(range(256)) * 4, "kb")
