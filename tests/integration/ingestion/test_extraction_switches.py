"""The two extraction switches against the real Neo4j, offline: the global `graph_extraction` setting and
the kb's `enabled`. With either off, documents are stored and embedded but nothing is extracted; the
first ingestion with both on extracts the chunks left pending, without changing the documents."""

from __future__ import annotations

from driftrag.facade import DriftRAG
from driftrag.models.graph import ExtractConfig
from driftrag.settings import Settings
from tests.fakes.harbor_corpus import CORPUS
from tests.support.ingestion import SMALL_CHUNKS


async def test_the_kb_switch_leaves_chunks_pending_until_it_is_on(neo4j_settings: Settings, kb: str) -> None:
    async with DriftRAG(neo4j_settings.model_copy(update=SMALL_CHUNKS)) as rag:
        try:
            off = await rag.ingest(kb, texts=CORPUS, extract_config=ExtractConfig(enabled=False, tags=["SAILED"]))
            assert off.extracted_chunks == 0 and off.counts.chunks > 0 and off.counts.entities == 0
            status = await rag.extract_config(kb)
            assert status.stored and status.globally_enabled and not status.extraction_enabled
            assert status.config.tags == ["SAILED"], "ingest stores the config it was given"

            await rag.set_extract_config(kb, status.config.model_copy(update={"enabled": True}))
            on = await rag.ingest(kb, texts=CORPUS)
            assert {document.status for document in on.documents} == {"unchanged"}
            assert on.extracted_chunks == off.counts.chunks and on.counts.entities > 0
            assert on.counts.chunks == off.counts.chunks and on.failed_chunks == []
        finally:
            await rag.delete_kb(kb)


async def test_the_global_switch_wins_over_the_kb(neo4j_settings: Settings, kb: str) -> None:
    switched_off = neo4j_settings.model_copy(update={**SMALL_CHUNKS, "graph_extraction": False})
    async with DriftRAG(switched_off) as rag:
        try:
            off = await rag.ingest(kb, texts=CORPUS, extract_config=ExtractConfig(enabled=True))
            assert off.extracted_chunks == 0 and off.counts.entities == 0 and off.counts.chunks > 0
            status = await rag.extract_config(kb)
            assert status.config.enabled and not status.globally_enabled and not status.extraction_enabled
            # A preview still extracts, saying that an ingestion would not.
            preview = await rag.preview_extraction(kb, CORPUS["voyage.txt"])
            assert preview.entities and any("switched off globally" in note for note in preview.notes)
        except BaseException:
            await rag.delete_kb(kb)
            raise
    async with DriftRAG(neo4j_settings.model_copy(update=SMALL_CHUNKS)) as rag:
        try:
            on = await rag.ingest(kb, texts=CORPUS)
            assert on.extracted_chunks == off.counts.chunks and on.counts.entities > 0
        finally:
            await rag.delete_kb(kb)
