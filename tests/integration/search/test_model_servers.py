"""Ingestion and DRIFT through the OpenAI-compatible test server when the server or the model misbehaves
in the two common ways of local model servers: `response_format` refused, JSON wrapped in prose."""

from __future__ import annotations

import uuid
from pathlib import Path

from pydantic import SecretStr

from driftrag.facade import DriftRAG
from driftrag.settings import Settings
from tests.fakes.harbor_corpus import CORPUS
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.scripted_llm import REPAIR_MARK, ScriptedResponder

DIMENSION = 384  # the offline embedder's, so the shared vector indexes stay as they are
QUESTION = "What did Captain Mirela Voss tell Jonas Pell about the Grey Reef?"


def _settings(neo4j_settings: Settings, server: FakeOpenAIServer, home: Path, *, structured: str) -> Settings:
    return neo4j_settings.model_copy(
        update={
            "llm_provider": "openai",
            "openai_api_key": SecretStr("test"),
            "openai_base_url": server.base_url,
            "home": home,
            "embedding_dimensions": DIMENSION,
            "llm_cache": False,
            "llm_max_retries": 0,
            "llm_timeout_s": 5.0,
            "chunk_size": 120,
            "chunk_overlap": 10,
            "llm_structured": structured,
        }
    )


async def _ingest_and_drift(settings: Settings) -> tuple:
    kb = f"test-server-{uuid.uuid4().hex[:8]}"
    async with DriftRAG(settings) as rag:
        try:
            ingested = await rag.ingest(kb, texts=CORPUS)
            result = await rag.query(kb, QUESTION, mode="drift")
            entities = await rag.entities(kb)
        finally:
            await rag.delete_kb(kb)
    return ingested, result, entities


async def test_a_server_refusing_response_format_works_with_the_setting_off_or_auto(
    neo4j_settings: Settings, tmp_path: Path
) -> None:
    with FakeOpenAIServer(
        responder=ScriptedResponder(), embedding_dimension=DIMENSION, rejects_response_format=True
    ) as server:
        ingested, result, entities = await _ingest_and_drift(
            _settings(neo4j_settings, server, tmp_path, structured="off")
        )
        assert server.rejected_response_format == 0
        assert not ingested.failed_chunks and entities
        assert result.answer.strip() and result.source_ids
        assert set(result.source_ids) <= {s.id for s in result.retrieved_sources()}
        # Set to JSON mode, the same server refuses every JSON call: extraction fails and says so.
        kb = f"test-server-{uuid.uuid4().hex[:8]}"
        async with DriftRAG(_settings(neo4j_settings, server, tmp_path / "on", structured="json_object")) as rag:
            try:
                refused = await rag.ingest(kb, texts=CORPUS)
            finally:
                await rag.delete_kb(kb)
        assert server.rejected_response_format > 0 and refused.failed_chunks
        # `auto` steps down to the prompt alone on the first refusals and stays there.
        before = server.rejected_response_format
        ingested, result, entities = await _ingest_and_drift(
            _settings(neo4j_settings, server, tmp_path / "auto", structured="auto")
        )
        assert not ingested.failed_chunks and entities and result.answer.strip()
        # Calls already under way when the first refusal came are refused too (at most the concurrency, twice).
        assert 2 <= server.rejected_response_format - before <= 2 * neo4j_settings.llm_concurrency


async def test_json_wrapped_in_prose_is_still_used(neo4j_settings: Settings, tmp_path: Path) -> None:
    with FakeOpenAIServer(
        responder=ScriptedResponder(), embedding_dimension=DIMENSION, prose_around_json=True
    ) as server:
        ingested, result, entities = await _ingest_and_drift(
            _settings(neo4j_settings, server, tmp_path, structured="auto")
        )
        assert not ingested.failed_chunks and entities
        assert result.answer.strip() and result.source_ids
        chat = server.requests_to("/v1/chat/completions")
        sent = [str(message.get("content", "")) for r in chat for message in r.json.get("messages", [])]
        assert chat and not [text for text in sent if REPAIR_MARK in text], "JSON in prose is used without a re-ask"
