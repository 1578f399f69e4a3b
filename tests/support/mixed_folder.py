"""Write a folder of mixed documents to try `driftrag ingest` on: PDFs (one with a scanned page), DOCX
(headings and a table), HTML (one in UTF-16), EPUB and markdown, made by `tests/fakes/documents.py`.

    python -m tests.support.mixed_folder /tmp/mixed
    driftrag ingest --kb mixed /tmp/mixed
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.fakes.documents import ScannedPage, html_page, write_docx, write_epub, write_pdf


def write_mixed_folder(folder: Path) -> list[Path]:
    """The files, written under `folder` (created); returns their paths."""
    (folder / "letters").mkdir(parents=True, exist_ok=True)
    written = [
        write_pdf(
            folder / "logbook.pdf",
            [
                ["Captain Mirela Voss sailed into Harbor Town at dawn.", "Captain Mirela Voss met Pip Rackham."],
                ["Pip Rackham ran to the Amber Lighthouse.", "Pip Rackham found the keeper asleep."],
                ScannedPage(["The keeper Odile Marchetti rang the bell of the Salt Chapel."]),
            ],
        ),
        write_pdf(folder / "letters" / "notice.pdf", [["Harbor Town closes the Salt Chapel in winter."], []]),
        write_docx(
            folder / "crew.docx",
            ["Captain Mirela Voss commands the Gull. Pip Rackham sails with Captain Mirela Voss."],
            [["Ship", "Captain"], ["Gull", "Mirela Voss"], ["Heron", "Odile Marchetti"]],
        ),
        write_epub(
            folder / "tales.epub",
            [
                ("The Lamp", ["Pip Rackham lit the lamp of the Amber Lighthouse."]),
                ("The Storm", ["Captain Mirela Voss brought the Gull home through the storm."]),
            ],
        ),
    ]
    town = folder / "town.html"
    town.write_text(html_page("Harbor Town", ["Harbor Town keeps the Amber Lighthouse."]), encoding="utf-8")
    chapel = folder / "letters" / "chapel.htm"
    chapel.write_bytes(html_page("Salt Chapel", ["Odile Marchetti keeps the Salt Chapel."]).encode("utf-16"))
    notes = folder / "notes.md"
    notes.write_text("# Notes\n\nOdile Marchetti and Pip Rackham rang the bell of the Salt Chapel.\n")
    return [*written, town, chapel, notes]


if __name__ == "__main__":
    for path in write_mixed_folder(Path(sys.argv[1])):
        print(path)
