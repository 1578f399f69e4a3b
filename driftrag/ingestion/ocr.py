"""OCR of PDF pages without a text layer (scanned images): the optional `ocr` extra.

A page is rendered with `pypdfium2` (PDFium's own rasteriser, one wheel without other dependencies)
and read by Tesseract through `pytesseract`, which runs the `tesseract` program. Both Python packages
come with `pip install 'driftrag[ocr]'`; the program is a system package (Debian and Ubuntu:
`apt-get install tesseract-ocr`, and `tesseract-ocr-<lang>` for another language). `ocr_unavailable`
says which of these is missing, so that a skipped page names what to install.
"""

from __future__ import annotations

import importlib
import shutil

# Tesseract reads best at about 300 dpi; PDF user space is 72 units an inch.
RENDER_SCALE = 300 / 72
MAX_SIDE_PX = 6000
INSTALL_EXTRA = "pip install 'driftrag[ocr]'"
INSTALL_TESSERACT = "the tesseract program (Debian/Ubuntu: apt-get install tesseract-ocr)"


def ocr_unavailable(language: str) -> str | None:
    """None when pages can be read in `language` (Tesseract's code, e.g. `eng`, `eng+fra`); else what is missing."""
    missing = [name for name in ("pytesseract", "pypdfium2") if not _importable(name)]
    if missing:
        return f"OCR needs the ocr extra ({' and '.join(missing)} not installed: {INSTALL_EXTRA})"
    if shutil.which("tesseract") is None:
        return f"OCR needs {INSTALL_TESSERACT}"
    absent = sorted(set(language.split("+")) - _languages())
    if absent:
        packages = " ".join(f"tesseract-ocr-{code}" for code in absent)
        return f"tesseract has no data for language {'+'.join(absent)} (Debian/Ubuntu: apt-get install {packages})"
    return None


def _importable(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


def _languages() -> frozenset[str]:
    """The languages the installed tesseract has data for (it runs the program: once per PDF with scanned pages)."""
    import pytesseract

    try:
        return frozenset(pytesseract.get_languages(config=""))
    except (OSError, pytesseract.TesseractError):
        return frozenset()


def ocr_page(pdf: object, index: int, language: str) -> str:
    """The OCR text of page `index` (0-based) of an open `pypdfium2.PdfDocument`."""
    import pytesseract

    page = pdf[index]  # type: ignore[index]
    try:
        # 300 dpi, but no side above MAX_SIDE_PX: a poster-sized page would take gigabytes.
        scale = min(RENDER_SCALE, MAX_SIDE_PX / max(*page.get_size(), 1.0))
        image = page.render(scale=scale, grayscale=True).to_pil()
    finally:
        page.close()
    return pytesseract.image_to_string(image, lang=language)


def open_pdf(data: bytes) -> object:
    """The PDF open for rendering (`pypdfium2.PdfDocument`); the caller closes it."""
    import pypdfium2

    return pypdfium2.PdfDocument(data)
