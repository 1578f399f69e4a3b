"""OCR of a scanned PDF page: read when Tesseract and the `ocr` extra are there, else skipped naming what to
install. The PDF is written by the test: one page with a text layer, one that is only a picture of text."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from driftrag.ingestion.chunking import chunk_document
from driftrag.ingestion.formats import ReaderOptions
from driftrag.ingestion.loading import InputError, load_document
from driftrag.ingestion.ocr import ocr_unavailable
from tests.fakes.documents import ScannedPage, write_pdf

TEXT_PAGE = ["Captain Mirela Voss sailed into Harbor Town at dawn."]
SCANNED_LINES = ["The keeper Odile Marchetti rang the harbor bell.", "Pip Rackham ran to the Amber Lighthouse."]


def _scanned_pdf(tmp_path: Path) -> Path:
    return write_pdf(tmp_path / "scan.pdf", [TEXT_PAGE, ScannedPage(SCANNED_LINES)])


@pytest.mark.skipif(ocr_unavailable("eng") is not None, reason=f"no OCR here: {ocr_unavailable('eng')}")
def test_a_scanned_page_is_read_by_ocr_with_its_page_number_and_marked_as_ocr(tmp_path: Path) -> None:
    document = load_document(_scanned_pdf(tmp_path), "kb")
    assert document.warnings == []
    first, second = document.pages
    assert (first.page, first.ocr, second.page, second.ocr) == (1, False, 2, True)
    scanned = document.text[second.start_char : second.end_char]
    # Tesseract's reading of a clean rendering: every word of the picture, in order.
    assert scanned.split() == " ".join(SCANNED_LINES).split()
    chunks = chunk_document(document, chunk_size=12, chunk_overlap=0)
    assert chunks[0].pages == [1] and chunks[0].ocr_pages is None
    assert chunks[-1].pages == [2] and chunks[-1].ocr_pages == [2]


def test_without_the_tesseract_program_a_scanned_page_is_skipped_naming_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _scanned_pdf(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))  # a PATH without tesseract
    assert shutil.which("tesseract") is None
    document = load_document(path, "kb")
    assert [span.page for span in document.pages] == [1] and document.text == TEXT_PAGE[0]
    [warning] = document.warnings
    assert str(path) in warning and "page 2 has no text layer" in warning
    assert "OCR needs the tesseract program (Debian/Ubuntu: apt-get install tesseract-ocr)" in warning


def test_without_the_ocr_extra_a_scanned_page_is_skipped_naming_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pytesseract", None)  # as if not installed: importing it fails
    document = load_document(_scanned_pdf(tmp_path), "kb")
    [warning] = document.warnings
    assert "page 2 has no text layer" in warning
    assert "OCR needs the ocr extra (pytesseract not installed: pip install 'driftrag[ocr]')" in warning


def test_a_language_without_tesseract_data_is_named_with_its_package(tmp_path: Path) -> None:
    if shutil.which("tesseract") is None:
        pytest.skip("no tesseract program here")
    document = load_document(_scanned_pdf(tmp_path), "kb", options=ReaderOptions(ocr_language="eng+zzz"))
    [warning] = document.warnings
    assert "tesseract has no data for language zzz (Debian/Ubuntu: apt-get install tesseract-ocr-zzz)" in warning


def test_a_pdf_of_scanned_pages_only_without_ocr_is_refused_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_pdf(tmp_path / "all-scanned.pdf", [ScannedPage(SCANNED_LINES)])
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    with pytest.raises(InputError) as raised:
        load_document(path, "kb")
    message = str(raised.value)
    assert str(path) in message and "no page of the PDF (1) has a text layer" in message
    assert "apt-get install tesseract-ocr" in message
