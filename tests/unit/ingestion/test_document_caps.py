"""Caps on what a document becomes, counted as each reader produces it: a page tree listing one page many
times, an EPUB spine listing one chapter many times, more pages, chapters, table cells or characters than
the settings allow, and small files whose text is far larger than they are. Each refusal is one error
naming the file and the limit, before memory grows."""

from __future__ import annotations

import resource
import time
from pathlib import Path

import pytest

from driftrag.ingestion.formats import FormatError, ReaderOptions, read_epub, read_pdf
from driftrag.ingestion.loading import InputError, load_bytes, load_document, reader_options
from driftrag.settings import Settings
from tests.fakes.documents import write_docx
from tests.support.hostile_files import epub, many_pages_pdf, repeated_page_pdf, repeated_spine_epub


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.mark.parametrize("fanout", [0, 200], ids=["flat", "nested"])
def test_a_pdf_listing_one_page_thousands_of_times_is_refused_at_once(fanout: int) -> None:
    data = repeated_page_pdf(20_000, fanout=fanout)
    started = time.monotonic()
    with pytest.raises(InputError) as raised:
        load_bytes("pages.pdf", data, "kb")
    assert time.monotonic() - started < 5
    message = str(raised.value)
    assert message.startswith("pages.pdf: ") and "lists object 3 0 R more than once" in message


def test_a_pdf_over_the_page_cap_is_refused_naming_the_setting() -> None:
    assert len(read_pdf(many_pages_pdf(5), ReaderOptions(max_document_pages=5)).pages) == 5
    with pytest.raises(FormatError, match=r"more than 5 pages.*DRIFTRAG_MAX_DOCUMENT_PAGES"):
        read_pdf(many_pages_pdf(6), ReaderOptions(max_document_pages=5))


def test_a_pdf_whose_text_passes_the_character_cap_is_refused() -> None:
    options = ReaderOptions(max_document_chars=60)
    with pytest.raises(FormatError, match=r"passes 60 characters.*DRIFTRAG_MAX_DOCUMENT_CHARS"):
        read_pdf(many_pages_pdf(4), options)


def test_an_epub_spine_listing_one_chapter_many_times_reads_it_once() -> None:
    data = repeated_spine_epub(50, 100_000)
    before = _peak_rss_mib()
    extracted = read_epub(data)
    assert len(extracted.sections) == 1 and 100_000 <= len(extracted.text) < 100_100
    assert extracted.warnings == ["the spine lists 49 chapters again; each was read once"]
    assert _peak_rss_mib() - before < 100


def test_the_small_epub_of_the_issue_is_refused_within_seconds_and_memory() -> None:
    # Its spine names one 1 MB chapter 400 times: read once, that chapter alone is still 250 times the file.
    data = repeated_spine_epub(400, 1_000_000)
    assert len(data) < 5_000
    before = _peak_rss_mib()
    started = time.monotonic()
    with pytest.raises(InputError) as raised:
        load_bytes("spine.epub", data, "kb")
    assert time.monotonic() - started < 5
    assert _peak_rss_mib() - before < 300
    message = str(raised.value)
    assert message.startswith("spine.epub: its text passes") and "DRIFTRAG_MAX_TEXT_RATIO" in message


def test_an_epub_over_the_spine_cap_is_refused_naming_the_setting() -> None:
    chapters = {f"c{i}": f"Chapter {i} text." for i in range(6)}
    data = epub(chapters, list(chapters))
    assert len(read_epub(data, ReaderOptions(max_spine_entries=6)).sections) == 6
    with pytest.raises(FormatError, match=r"spine lists 6 chapters, above the cap of 5.*DRIFTRAG_MAX_SPINE_ENTRIES"):
        read_epub(data, ReaderOptions(max_spine_entries=5))


def test_a_small_file_that_expands_far_is_refused_by_the_text_ratio() -> None:
    # Five distinct chapters of 1 MB of repeated text: a few KB zipped, 5 M characters of text.
    sentence = "All work and no play makes a dull chapter. "
    chapters = {f"c{i}": f"{i} " + sentence * (1_000_000 // len(sentence)) for i in range(5)}
    data = epub(chapters, list(chapters))
    assert len(data) < 40_000
    with pytest.raises(InputError) as raised:
        load_bytes("bomb.epub", data, "kb")
    message = str(raised.value)
    assert message.startswith("bomb.epub: ") and "DRIFTRAG_MAX_TEXT_RATIO" in message and "bomb" in message


def test_a_docx_with_more_table_cells_than_the_cap_is_refused(tmp_path: Path) -> None:
    path = write_docx(tmp_path / "grid.docx", ["Intro."], [[f"r{r}c{c}" for c in range(10)] for r in range(10)])
    assert "r9c9" in load_document(path, "kb", options=ReaderOptions(max_table_cells=100)).text
    with pytest.raises(InputError, match=r"grid\.docx: .*more than 50 cells.*DRIFTRAG_MAX_TABLE_CELLS"):
        load_document(path, "kb", options=ReaderOptions(max_table_cells=50))


def test_a_text_file_over_the_character_cap_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "long.txt"
    path.write_text("word " * 100, encoding="utf-8")
    with pytest.raises(InputError, match=r"long\.txt: its text passes 400 characters.*MAX_DOCUMENT_CHARS"):
        load_document(path, "kb", options=ReaderOptions(max_document_chars=400))


def test_the_caps_come_from_the_settings() -> None:
    settings = Settings(
        _env_file=None,
        max_document_chars=123,
        max_text_ratio=7.5,
        max_document_pages=9,
        max_spine_entries=8,
        max_table_cells=77,
    )
    options = reader_options(settings)
    assert (options.max_document_chars, options.max_text_ratio, options.max_document_pages) == (123, 7.5, 9)
    assert (options.max_spine_entries, options.max_table_cells) == (8, 77)
    assert Settings.model_fields["max_document_chars"].default == 50 * 1024 * 1024  # the JSON route's 50 MiB
