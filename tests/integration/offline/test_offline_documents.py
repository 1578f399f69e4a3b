"""A folder of mixed PDF, DOCX, HTML, EPUB and markdown files, ingested offline into the real Neo4j.

The files are written by the test (`tests/fakes/documents.py`). A PDF chunk keeps its page numbers in the
graph and a query's sources show them; a bad file stops the run with one error naming it.
"""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path

import pytest

from driftrag.facade import DriftRAG
from driftrag.ingestion.loading import InputError
from driftrag.providers import build_providers
from driftrag.providers.embeddings import AccountedEmbedding
from driftrag.search.markdown import sources_markdown
from driftrag.settings import Settings
from driftrag.store import Neo4jStore
from tests.fakes.documents import html_page, write_docx, write_epub, write_pdf
from tests.fakes.hashing_embedding import HashingEmbedding

PAGE_ONE = [
    "Captain Mirela Voss sailed into Harbor Town at dawn.",
    "Captain Mirela Voss told Pip Rackham that the lamp of the Amber Lighthouse was out.",
]
PAGE_TWO = [
    "Pip Rackham ran to the Amber Lighthouse.",
    "At the Amber Lighthouse, Pip Rackham found the keeper asleep beside the cold lamp.",
]


def _corpus(folder: Path) -> Path:
    folder.mkdir()
    (folder / "harbor.md").write_text(
        "Captain Mirela Voss met Pip Rackham at the Salt Chapel. Pip Rackham rang the bell of the Salt Chapel.",
        encoding="utf-8",
    )
    write_pdf(folder / "logbook.pdf", [PAGE_ONE, PAGE_TWO, []])  # page 3: no text layer
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
        graph = rag.ingestion_deps().graph
        try:
            # A corrupt PDF beside the good folder: one error naming it, nothing written.
            with pytest.raises(InputError) as raised:
                await rag.ingest(kb, paths=[folder, bad])
            message = str(raised.value)
            assert str(bad) in message and "not a readable PDF" in message and "logbook" not in message
            assert await graph.chunks(kb) == []

            result = await rag.ingest(kb, paths=[folder])
            by_name = {Path(outcome.source).name: outcome for outcome in result.documents}
            assert sorted(by_name) == ["crew.docx", "harbor.md", "logbook.pdf", "tales.epub", "town.html"]
            assert result.counts.documents == 5
            assert result.counts.chunks == sum(outcome.chunks for outcome in result.documents) >= 5
            [warning] = by_name["logbook.pdf"].warnings
            assert "page 3" in warning and "OCR is not available" in warning
            assert all(not by_name[name].warnings for name in by_name if name != "logbook.pdf")

            rows = await store.read(
                "MATCH (c:__Chunk__ {kb: $kb})-[:PART_OF]->(d:__Document__ {kb: $kb}) "
                "RETURN d.title AS title, c.id AS id, c.pages AS pages",
                kb=kb,
            )
            pages = {row["title"]: row["pages"] for row in rows}
            assert pages["logbook.pdf"] == [1, 2]
            assert all(pages[name] is None for name in pages if name != "logbook.pdf")
            pdf_chunk = next(row["id"] for row in rows if row["title"] == "logbook.pdf")
            names = {row["name"] for row in await graph.entities(kb)}
            assert {"Captain Mirela Voss", "Pip Rackham", "Amber Lighthouse"} <= names

            answer = await rag.query(kb, "Who found the keeper asleep at the Amber Lighthouse?", mode="basic")
            [source] = [s for s in answer.retrieved_sources() if s.id == pdf_chunk]
            assert source.title == "logbook.pdf" and source.pages == [1, 2]
            assert "(chunk — logbook.pdf, pp. 1-2)" in sources_markdown(answer.retrieved_sources())
            # The JSON of a result (CLI --json, HTTP) carries them too.
            assert '"pages":[1,2]' in answer.model_dump_json()
        finally:
            await graph.delete_kb(kb)
