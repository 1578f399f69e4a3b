"""Model-server faults through the project's OpenAI-compatible test server: an ingestion never aborts, records
what failed, keeps what succeeded, and a rerun without faults completes what was left (failed chunks,
placeholders, embeddings)."""

from __future__ import annotations

import uuid
from pathlib import Path

from pydantic import SecretStr

from driftrag.facade import DriftRAG
from driftrag.settings import Settings
from tests.fakes.harbor_corpus import CORPUS
from tests.fakes.openai_server import FakeOpenAIServer, Fault, FaultRates
from tests.fakes.scripted_llm import ScriptedResponder

DIMENSION = 384  # the offline embedder's, so the shared vector indexes stay as they are


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
            "llm_timeout_s": 1.0,
            "chunk_size": 120,
            "chunk_overlap": 10,
        }
    )


async def _graph(rag: DriftRAG, kb: str) -> tuple:
    return (
        sorted((e["id"], e["summary"], tuple(sorted(e["source_chunk_ids"]))) for e in await rag.entities(kb)),
        sorted((r["id"], r["summary"]) for r in await rag.relationships(kb)),
        sorted((c["id"], c["title"], c["summary"]) for c in await rag.communities(kb)),
    )


async def test_faults_past_the_retries_are_recorded_and_a_rerun_completes_the_graph(
    neo4j_settings: Settings, tmp_path: Path
) -> None:
    kb, clean_kb = f"test-faults-{uuid.uuid4().hex[:8]}", f"test-faults-clean-{uuid.uuid4().hex[:8]}"
    with FakeOpenAIServer(responder=ScriptedResponder(), embedding_dimension=DIMENSION) as server:
        async with DriftRAG(_settings(neo4j_settings, server, tmp_path, retries=2)) as rag:
            await rag.ingest(clean_kb, texts=CORPUS)
            expected = await _graph(rag, clean_kb)
            await rag.delete_kb(clean_kb)
        # Without retries, about half the answers fail: nothing aborts, failures are recorded.
        # Draws are seeded by the request bodies: a change of the prompts may need another seed, one that
        # leaves some chunks extracted and some failed.
        server.fault_rates = FaultRates(rate_limit=0.1, server_error=0.1, malformed_json=0.3, timeout=0.03, seed=2)
        server.inject(Fault.malformed_json(), Fault.malformed_json())  # the first answers, at least, are unreadable
        async with DriftRAG(_settings(neo4j_settings, server, tmp_path, retries=0)) as rag:
            faulty = await rag.ingest(kb, texts=CORPUS)
            assert faulty.failed_chunks, "some extraction failed and was recorded"
            assert faulty.usage.failed_calls > 0
            assert server.faults_served.get("malformed_json", 0) > 0
            entity_ids = {row[0] for row in (await _graph(rag, kb))[0]}
        assert entity_ids and entity_ids <= {row[0] for row in expected[0]}, "what was extracted is in the graph"
        server.fault_rates = None
        async with DriftRAG(_settings(neo4j_settings, server, tmp_path, retries=2)) as rag:
            try:
                rerun = await rag.ingest(kb, texts=CORPUS)
                # The failed chunks are asked for again, and embeddings a failed request left out are made.
                assert rerun.retried_chunks == len(faulty.failed_chunks)
                stores = rag.stores
                assert not await stores.kbs.is_stale(kb)
                assert await stores.extractions.chunks_without_embedding(kb) == []
                assert await rag.failed_chunks(kb) == []
                assert await _graph(rag, kb) == expected
            finally:
                await rag.delete_kb(kb)
