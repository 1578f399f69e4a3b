"""Window fitting against a server whose model has a 2,048-token context (reported by llama.cpp's
`GET /props`): ingestion of a small corpus and a query in each mode send no request whose prompt and
output cap exceed the window."""

from __future__ import annotations

import uuid
from pathlib import Path

from pydantic import SecretStr

from driftrag.facade import DriftRAG
from driftrag.search.modes import MODES
from driftrag.settings import Settings
from tests.fakes.harbor_corpus import CORPUS
from tests.fakes.openai_server import FakeOpenAIServer, estimate_tokens, message_text
from tests.fakes.scripted_llm import ScriptedResponder

DIMENSION = 384  # the offline embedder's, so the shared vector indexes stay as they are
WINDOW = 2048
QUESTION = "What did Captain Mirela Voss tell Jonas Pell about the Grey Reef?"


async def test_every_request_fits_a_2048_token_window(neo4j_settings: Settings, tmp_path: Path) -> None:
    with FakeOpenAIServer(
        responder=ScriptedResponder(), embedding_dimension=DIMENSION, context_window=WINDOW, total_slots=2
    ) as server:
        settings = neo4j_settings.model_copy(
            update={
                "llm_provider": "openai",
                "openai_api_key": SecretStr("test"),
                "openai_base_url": server.base_url,
                "llm_model": "small-local-model",  # unknown to llama-index: the server's report decides
                "home": tmp_path,
                "embedding_dimensions": DIMENSION,
                "llm_cache": False,
                "llm_max_retries": 0,
                "llm_timeout_s": 5.0,
            }
        )
        kb = f"test-window-{uuid.uuid4().hex[:8]}"
        async with DriftRAG(settings) as rag:
            try:
                ingested = await rag.ingest(kb, texts=CORPUS)
                results = {mode: await rag.query(kb, QUESTION, mode=mode) for mode in MODES}
            finally:
                await rag.delete_kb(kb)
        chat = server.requests_to("/v1/chat/completions")
        assert server.props_requests == 1
    # Fitted, not refused: every step got a model answer (no offline fill-in, no fallback).
    assert ingested.counts.entities > 0 and ingested.counts.offline_extracted_chunks == 0
    assert not [d for result in results.values() for d in result.degraded if d.reason == "fallback"]
    assert set(results) == {"basic", "local", "entity", "drift", "global"}
    assert all(result.answer.strip() for result in results.values())
    assert chat
    for request in chat:
        prompt = sum(estimate_tokens(message_text(m)) for m in request.json["messages"])
        assert "max_tokens" in request.json
        assert prompt + request.json["max_tokens"] <= WINDOW, (prompt, request.json["max_tokens"])
