"""Model calls and tokens in the answer of `POST …/query` over real uvicorn: zeros offline; with a model
behind the OpenAI-compatible test server, exactly the calls and tokens that server saw for the query, the
same in the streamed `result` event."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from driftrag.api import ApiKeys, create_app
from driftrag.api.auth import ApiKeyEntry, hash_key
from driftrag.api.models import QueryResponse
from driftrag.api.server import BackgroundServer
from driftrag.facade import DriftRAG
from driftrag.search.modes import MODE_NAMES
from driftrag.settings import Settings
from tests.fakes.harbor_corpus import CORPUS
from tests.fakes.openai_server import FakeOpenAIServer, estimate_tokens, message_text
from tests.fakes.scripted_llm import ScriptedResponder
from tests.support.sse import read_events

QUESTION = "Who repaired the lamp of the Glass Lighthouse?"
CHAT = "/v1/chat/completions"


def _counts(answer: QueryResponse) -> tuple[int, int, int]:
    return answer.llm_calls, answer.prompt_tokens, answer.completion_tokens


@pytest.mark.parametrize("mode", MODE_NAMES)
def test_offline_answers_report_no_model_call_and_no_token(reader: httpx.Client, corpus_kb: str, mode: str) -> None:
    response = reader.post(f"/knowledge-bases/{corpus_kb}/query", json={"question": QUESTION, "mode": mode})
    assert response.status_code == 200, response.text
    plain = QueryResponse.model_validate(response.json())
    assert plain.extractive and _counts(plain) == (0, 0, 0) and plain.unknown_citations == 0
    assert plain.usage.chat_calls == 0
    _, events = read_events(reader, corpus_kb, {"question": QUESTION, "mode": mode})
    streamed = QueryResponse.model_validate(events[-1][1])
    assert _counts(streamed) == (0, 0, 0)


def _model_settings(neo4j_settings: Settings, server: FakeOpenAIServer, home: Path) -> Settings:
    return neo4j_settings.model_copy(
        update={
            "llm_provider": "openai",
            "openai_api_key": SecretStr("test"),
            "openai_base_url": server.base_url,
            "home": home,
            "embedding_dimensions": 384,  # the offline embedder's: the shared vector indexes stay as they are
            "llm_cache": False,
            "llm_max_retries": 0,
            "llm_timeout_s": 10.0,
            "chunk_size": 120,
            "chunk_overlap": 10,
        }
    )


def _seen(requests: list) -> tuple[int, int, int]:
    """(calls, prompt tokens, completion tokens) of chat requests, as the test server counts and reports them."""
    responder = ScriptedResponder()  # stateless: it answers a request again with the same text
    prompt = sum(estimate_tokens(message_text(m)) for r in requests for m in r.json["messages"])
    completion = sum(estimate_tokens(responder(r.json)) for r in requests)
    return len(requests), prompt, completion


def _ask_over_http(url: str, key: str, kb: str, model_server: FakeOpenAIServer) -> None:
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=f"{url}/api/v1", headers=headers, timeout=120) as client:
        for mode in ("local", "drift"):
            body = {"question": "What did Captain Mirela Voss tell Jonas Pell?", "mode": mode}
            before = len(model_server.requests_to(CHAT))
            response = client.post(f"/knowledge-bases/{kb}/query", json=body)
            assert response.status_code == 200, response.text
            plain = QueryResponse.model_validate(response.json())
            seen = _seen(model_server.requests_to(CHAT)[before:])
            assert not plain.extractive and seen[0] >= (1 if mode == "local" else 3)
            assert _counts(plain) == seen, mode
            # The streamed result carries the same accounting of its own calls.
            before = len(model_server.requests_to(CHAT))
            _, events = read_events(client, kb, body)
            streamed = QueryResponse.model_validate(events[-1][1])
            assert _counts(streamed) == _seen(model_server.requests_to(CHAT)[before:]), mode


async def test_model_answers_report_the_calls_and_tokens_the_model_server_saw(
    neo4j_settings: Settings, tmp_path: Path
) -> None:
    kb = f"test-usage-{uuid.uuid4().hex[:8]}"
    key = f"drk_usage_{uuid.uuid4().hex}"
    keys = ApiKeys([ApiKeyEntry(name="usage", key_sha256=hash_key(key), scopes=["read"], kbs=[kb])])
    with FakeOpenAIServer(responder=ScriptedResponder(), embedding_dimension=384) as model_server:
        settings = _model_settings(neo4j_settings, model_server, tmp_path)
        async with DriftRAG(settings) as rag:
            try:
                ingested = await rag.ingest(kb, texts=CORPUS)
                assert not ingested.failed_chunks
                with BackgroundServer(create_app(DriftRAG(settings), keys)) as api:
                    await asyncio.to_thread(_ask_over_http, api.url, key, kb, model_server)
            finally:
                await rag.delete_kb(kb)
