"""Repairable kbs, through the project's OpenAI-compatible test server and the real Neo4j: an ingestion under
harsh model faults leaves failed chunks and placeholder summaries and reports, marked in the graph; `stats`
and `kb list` call the kb incomplete; a fault-free `repair` (or a fault-free re-ingest) asks for exactly
those again and ends with the graph a fault-free ingestion gives."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from driftrag.facade import DriftRAG
from driftrag.settings import Settings
from tests.fakes.harbor_corpus import CORPUS, MONASTERY, DescriptiveChatModel
from tests.fakes.openai_server import FakeOpenAIServer, FaultPlan, FirstSightFaults
from tests.fakes.scripted_llm import REPORT_MARK, SUMMARY_MARK, ScriptedResponder

DIMENSION = 384  # the offline embedder's, so the shared vector indexes stay as they are
CHAT = "/v1/chat/completions"
# Harsh and the same in every run, with no client retry: the extraction of the chunk holding the
# monastery's first words, and every summary and report, fail (each asked at most twice). (Random shares of
# faults are the benchmark's: `benchmarks/faults.py --repair`.)
HARSH = FirstSightFaults(marks=(MONASTERY[:40], SUMMARY_MARK, REPORT_MARK))


def _server(faults: FaultPlan | None = None) -> FakeOpenAIServer:
    """The test server answering as the scripted model whose descriptions quote their sentences (so an
    entity named in several sentences needs a summary)."""
    return FakeOpenAIServer(
        responder=ScriptedResponder(DescriptiveChatModel()), embedding_dimension=DIMENSION, fault_rates=faults
    )


def _settings(neo4j_settings: Settings, server: FakeOpenAIServer, home: Path, retries: int) -> Settings:
    return neo4j_settings.model_copy(
        update={
            "llm_provider": "openai",
            "openai_api_key": SecretStr("test"),
            "openai_base_url": server.base_url,
            "home": home,
            "embedding_dimensions": DIMENSION,
            "llm_cache": False,
            "llm_max_retries": retries,
            "llm_timeout_s": 2.0,
            "chunk_size": 120,
            "chunk_overlap": 10,
        }
    )


async def canonical_graph(rag: DriftRAG, kb: str) -> dict[str, Any]:
    """Entities, relationships and communities with their reports' text, without run-specific fields
    (vectors, flags), in a canonical order: what a repaired kb must share with a fault-free one."""
    entities = sorted(
        (e["id"], e["name"], e["type"], e["summary"], tuple(sorted(e["source_chunk_ids"])))
        for e in await rag.entities(kb)
    )
    relationships = sorted(
        (r["id"], r["source_id"], r["target_id"], r["type"], r["summary"], tuple(sorted(r["source_chunk_ids"])))
        for r in await rag.relationships(kb)
    )
    communities = sorted(
        (
            c["id"],
            c["level"],
            tuple(sorted(c["entity_ids"])),
            c["title"],
            c["summary"],
            c["rating"],
            json.dumps(c["findings"], sort_keys=True),
        )
        for c in await rag.communities(kb)
    )
    return {"entities": entities, "relationships": relationships, "communities": communities}


async def _fault_free_graph(neo4j_settings: Settings, tmp_path: Path) -> tuple[dict[str, Any], Any]:
    kb = f"test-repair-clean-{uuid.uuid4().hex[:8]}"
    with _server() as server:
        async with DriftRAG(_settings(neo4j_settings, server, tmp_path, retries=2)) as rag:
            try:
                result = await rag.ingest(kb, texts=CORPUS)
                assert not result.counts.incomplete, "the fault-free run leaves nothing to repair"
                return await canonical_graph(rag, kb), result.counts
            finally:
                await rag.delete_kb(kb)


async def _harsh_ingest(neo4j_settings: Settings, tmp_path: Path, kb: str) -> None:
    """Ingest under harsh faults; check that what failed is marked and the kb reads as incomplete."""
    with _server(HARSH) as server:
        async with DriftRAG(_settings(neo4j_settings, server, tmp_path, retries=0)) as rag:
            result = await rag.ingest(kb, texts=CORPUS)
            assert result.usage.failed_calls > 0
            counts = await rag.stats(kb)
            assert counts.failed_chunks == len(result.failed_chunks) == 1
            assert counts.chunks > 1 and counts.entities > 0, "the other chunks were extracted"
            assert counts.placeholder_reports == counts.communities > 0
            assert counts.placeholder_summaries > 0
            assert counts.incomplete
            placeholders = [c for c in await rag.communities(kb) if c["summary"].startswith("No report")]
            assert len(placeholders) == counts.placeholder_reports
            listed = {summary.kb: summary for summary in await rag.knowledge_bases()}[kb]
            assert listed.incomplete and not listed.stale and listed.counts == counts


async def test_a_harsh_fault_ingest_is_incomplete_and_a_fault_free_repair_gives_the_fault_free_graph(
    neo4j_settings: Settings, tmp_path: Path
) -> None:
    expected, expected_counts = await _fault_free_graph(neo4j_settings, tmp_path)
    kb = f"test-repair-{uuid.uuid4().hex[:8]}"
    try:
        await _harsh_ingest(neo4j_settings, tmp_path, kb)
        with _server() as server:
            async with DriftRAG(_settings(neo4j_settings, server, tmp_path, retries=2)) as rag:
                before = await rag.stats(kb)
                repaired = await rag.repair(kb)
                assert repaired.before == before
                assert repaired.run.retried_chunks == before.failed_chunks
                assert repaired.run.reports_generated >= before.placeholder_reports
                assert repaired.complete and repaired.failed_chunks == []
                assert await canonical_graph(rag, kb) == expected
                assert await rag.stats(kb) == expected_counts
                # Nothing is left: a second repair makes no model call.
                calls = len(server.requests_to(CHAT))
                again = await rag.repair(kb)
                assert again.complete and len(server.requests_to(CHAT)) == calls
    finally:
        async with DriftRAG(neo4j_settings) as rag:
            await rag.delete_kb(kb)


async def test_a_fault_free_reingest_after_harsh_faults_retries_what_failed(
    neo4j_settings: Settings, tmp_path: Path
) -> None:
    expected, _ = await _fault_free_graph(neo4j_settings, tmp_path)
    kb = f"test-repair-reingest-{uuid.uuid4().hex[:8]}"
    try:
        await _harsh_ingest(neo4j_settings, tmp_path, kb)
        with _server() as server:
            async with DriftRAG(_settings(neo4j_settings, server, tmp_path, retries=2)) as rag:
                result = await rag.ingest(kb, texts=CORPUS)
                assert result.retried_chunks > 0 and result.failed_chunks == []
                assert not result.counts.incomplete and not result.stale
                assert await canonical_graph(rag, kb) == expected
    finally:
        async with DriftRAG(neo4j_settings) as rag:
            await rag.delete_kb(kb)


async def test_communities_retries_what_failed_after_a_skip_communities_ingest(
    neo4j_settings: Settings, tmp_path: Path
) -> None:
    """The per-document half leaves the kb stale (flagged by stats and graph search); `build_graph`
    (`driftrag communities`) builds it and asks again for the chunks that failed."""
    expected, _ = await _fault_free_graph(neo4j_settings, tmp_path)
    kb = f"test-repair-skip-{uuid.uuid4().hex[:8]}"
    try:
        with _server(HARSH) as server:
            async with DriftRAG(_settings(neo4j_settings, server, tmp_path, retries=0)) as rag:
                half = await rag.ingest(kb, texts=CORPUS, skip_communities=True)
                assert half.stale and half.failed_chunks
                assert (await rag.status(kb)).stale
                assert (await rag.graph_search(kb, "harbour")).stale
        with _server() as server:
            async with DriftRAG(_settings(neo4j_settings, server, tmp_path, retries=2)) as rag:
                built = await rag.build_graph(kb)
                assert built.retried_chunks == len(half.failed_chunks) and built.failed_chunks == []
                assert not built.stale and not built.counts.incomplete
                assert not (await rag.status(kb)).stale
                assert await canonical_graph(rag, kb) == expected
    finally:
        async with DriftRAG(neo4j_settings) as rag:
            await rag.delete_kb(kb)
