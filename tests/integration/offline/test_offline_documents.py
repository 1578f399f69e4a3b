"""A folder of mixed PDF, DOCX, HTML, EPUB and markdown files, ingested offline into the real Neo4j.

The files are written by the test (`tests/fakes/documents.py`). A PDF chunk keeps its page numbers in the
graph and a query's sources show them, a scanned page is OCR'd (when Tesseract is here) or skipped with
the reason, EPUB chapters and DOCX headings are kept as sections; a bad file stops the run with one error
naming it.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from pathlib import Path

import pytest

from driftrag.facade import DriftRAG
from driftrag.ingestion.loading import InputError
from driftrag.ingestion.ocr import ocr_unavailable
from driftrag.providers import build_providers
from driftrag.providers.embeddings import AccountedEmbedding
from driftrag.search.markdown import sources_markdown
from driftrag.settings import Settings
from driftrag.store import Neo4jStore
from tests.fakes.documents import ScannedPage, html_page, write_docx, write_epub, write_pdf
from tests.fakes.hashing_embedding import HashingEmbedding

PAGE_ONE = [
    "Captain Mirela Voss sailed into Harbor Town at dawn.",
    "Captain Mirela Voss told Pip Rackham that the lamp of the Amber Lighthouse was out.",
]
PAGE_TWO = [
    "Pip Rackham ran to the Amber Lighthouse.",
    "At the Amber Lighthouse, Pip Rackham found the keeper asleep beside the cold lamp.",
]
SCANNED = ["The keeper Odile Marchetti rang the bell of the Salt Chapel."]


def _corpus(folder: Path) -> Path:
    folder.mkdir()
    (folder / "harbor.md").write_text(
        "Captain Mirela Voss met Pip Rackham at the Salt Chapel. Pip Rackham rang the bell of the Salt Chapel.",
        encoding="utf-8",
    )
    write_pdf(folder / "logbook.pdf", [PAGE_ONE, PAGE_TWO, ScannedPage(SCANNED)])  # page 3: an image of text
    write_docx(
        folder / "crew.docx",
        ["Captain Mirela Voss commands the Gull. Pip Rackham sails with Captain Mirela Voss."],
        [["Ship", "Captain"], ["Gull", "Mirela Voss"]],
    )
    (folder / "town.html").write_text(
        html_page("Harbor Town", ["Harbor Town keeps the Amber Lighthouse.", "Pip Rackham lives in Harbor Town."]),
        encoding="utf-8",
    )
    write_epub(
        folder / "tales.epub",
        [("The Storm", ["Captain Mirela Voss brought the Gull home through the storm."])],
    )
    return folder


async def test_a_mixed_folder_ingests_offline_with_pdf_pages_in_chunks_and_sources(
    neo4j_settings: Settings, store: Neo4jStore, tmp_path: Path
) -> None:
    folder = _corpus(tmp_path / "corpus")
    bad = tmp_path / "broken.pdf"
    bad.write_bytes(b"%PDF-1.4\n" + bytes(range(256)) * 4)
    settings = neo4j_settings.model_copy(update={"offline_min_entity_chunks": 1})
    providers = build_providers(settings)
    embedder = AccountedEmbedding(HashingEmbedding(dimension=providers.embedding_dimension), providers.usage)
    providers = dataclasses.replace(providers, embedder=embedder)
    kb = f"test-documents-{uuid.uuid4().hex[:8]}"
    async with DriftRAG(settings, providers=providers) as rag:
        stores = rag.stores
        try:
            # A corrupt PDF beside the good folder: one error naming it, nothing written.
            with pytest.raises(InputError) as raised:
                await rag.ingest(kb, paths=[folder, bad])
            message = str(raised.value)
            assert str(bad) in message and "not a readable PDF" in message and "logbook" not in message
            assert await stores.listing.chunks(kb) == []

            result = await rag.ingest(kb, paths=[folder])
            by_name = {Path(outcome.source).name: outcome for outcome in result.documents}
            assert sorted(by_name) == ["crew.docx", "harbor.md", "logbook.pdf", "tales.epub", "town.html"]
            assert result.counts.documents == 5
            assert result.counts.chunks == sum(outcome.chunks for outcome in result.documents) >= 5
            missing = ocr_unavailable(settings.ocr_language)
            if missing is None:  # Tesseract read page 3
                assert by_name["logbook.pdf"].warnings == []
            else:
                [warning] = by_name["logbook.pdf"].warnings
                assert "page 3 has no text layer" in warning and missing in warning
            assert all(not by_name[name].warnings for name in by_name if name != "logbook.pdf")

            rows = await store.read(
                "MATCH (c:__Chunk__ {kb: $kb})-[:PART_OF]->(d:__Document__ {kb: $kb}) "
                "RETURN d.title AS title, c.id AS id, c.pages AS pages, c.ocr_pages AS ocr_pages, "
                "c.sections AS sections, c.section_titles AS titles, c.section_kind AS kind",
                kb=kb,
            )
            by_title = {row["title"]: row for row in rows}
            logbook = by_title["logbook.pdf"]
            if missing is None:
                assert (logbook["pages"], logbook["ocr_pages"]) == ([1, 2, 3], [3])
            else:
                assert (logbook["pages"], logbook["ocr_pages"]) == ([1, 2], None)
            assert all(by_title[name]["pages"] is None for name in by_title if name != "logbook.pdf")
            tales, crew = by_title["tales.epub"], by_title["crew.docx"]
            assert (tales["sections"], tales["titles"], tales["kind"]) == ([1], ["The Storm"], "chapter")
            assert (crew["sections"], crew["titles"], crew["kind"]) == ([1], ["Harbor report"], "heading")
            assert all(by_title[name]["sections"] is None for name in ("harbor.md", "town.html", "logbook.pdf"))
            pdf_chunk = next(row["id"] for row in rows if row["title"] == "logbook.pdf")
            names = {row["name"] for row in await stores.listing.entities(kb)}
            assert {"Captain Mirela Voss", "Pip Rackham", "Amber Lighthouse"} <= names

            answer = await rag.query(kb, "Who found the keeper asleep at the Amber Lighthouse?", mode="basic")
            [source] = [s for s in answer.retrieved_sources() if s.id == pdf_chunk]
            label = "pp. 1-3, OCR" if missing is None else "pp. 1-2"
            assert source.title == "logbook.pdf" and source.pages == logbook["pages"]
            assert f"(chunk — logbook.pdf, {label})" in sources_markdown(answer.retrieved_sources())
            # The JSON of a result (CLI --json, HTTP) carries them too.
            assert f'"pages":{json.dumps(logbook["pages"], separators=(",", ":"))}' in answer.model_dump_json()
            chapter = await rag.query(kb, "Who brought the Gull home through the storm?", mode="basic")
            [tale] = [s for s in chapter.retrieved_sources() if s.title == "tales.epub"]
            assert tale.page_label() == "ch. 1 \u201cThe Storm\u201d"
        finally:
            await stores.kbs.delete_kb(kb)
