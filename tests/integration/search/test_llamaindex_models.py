"""Any LlamaIndex LLM and embedding model, end to end on the real Neo4j, and streamed answers.

- `OpenAILike` (llama-index-llms-openai-like, the class of vLLM and LM Studio users) and `OpenAIEmbedding`
  against the project's OpenAI-compatible test server: ingestion, then every mode, streamed and not;
- `ScriptedCustomLLM`, a non-OpenAI `CustomLLM` test double without JSON mode, with a bag-of-words
  embedder of unknown size (probed once): its JSON answers go through the repair re-ask.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import aclosing
from pathlib import Path

import httpx
import openai
import pytest
from llama_index.embeddings.openai import OpenAIEmbedding
from llama_index.llms.openai_like import OpenAILike

from driftrag.api import ApiKeys, create_app
from driftrag.api.models import QueryResponse
from driftrag.api.server import BackgroundServer
from driftrag.errors import EmbeddingDimensionMismatchError
from driftrag.facade import DriftRAG
from driftrag.search.modes import MODE_NAMES
from driftrag.search.streaming import AnswerDelta, AnswerReset, ProgressEvent, QueryFinished
from driftrag.settings import Settings
from tests.fakes.custom_llm import ScriptedCustomLLM
from tests.fakes.harbor_corpus import CORPUS
from tests.fakes.hashing_embedding import HashingEmbedding
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.scripted_llm import ScriptedResponder
from tests.support.sse import events_of

DIMENSION = 384  # the offline embedder's, so the shared vector indexes stay as they are
QUESTION = "What did Captain Mirela Voss tell Jonas Pell about the Grey Reef?"


def _settings(neo4j_settings: Settings, home: Path) -> Settings:
    # No response cache: the streamed and the unstreamed query must both reach the model.
    return neo4j_settings.model_copy(
        update={"home": home, "llm_cache": False, "llm_max_retries": 0, "chunk_size": 120, "chunk_overlap": 10}
    )


def _models(server: FakeOpenAIServer) -> tuple[OpenAILike, OpenAIEmbedding]:
    llm = OpenAILike(model="served-model", api_base=server.base_url, api_key="test", is_chat_model=True)
    embed = OpenAIEmbedding(
        model_name="served-embedder", api_base=server.base_url, api_key="test", dimensions=DIMENSION
    )
    return llm, embed


@pytest.fixture(scope="module")
async def served(neo4j_settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple]:
    """The corpus ingested through `OpenAILike` and `OpenAIEmbedding` on the test server."""
    with FakeOpenAIServer(responder=ScriptedResponder(), embedding_dimension=DIMENSION, stream_delay_s=0.002) as server:
        llm, embed = _models(server)
        rag = DriftRAG(_settings(neo4j_settings, tmp_path_factory.mktemp("openai-like")), llm=llm, embed_model=embed)
        kb = f"test-llamaindex-{uuid.uuid4().hex[:8]}"
        await rag.connect()
        try:
            ingested = await rag.ingest(kb, texts=CORPUS)
            yield rag, kb, server, ingested
        finally:
            await rag.delete_kb(kb)
            await rag.close()


async def test_openai_like_ingests_and_answers_drift(served) -> None:
    rag, kb, server, ingested = served
    assert rag.mode == "llm" and "OpenAILike served-model" in rag.describe()
    assert not ingested.failed_chunks and ingested.counts.entities and ingested.counts.reports
    result = await rag.query(kb, QUESTION, mode="drift")
    assert result.answer.strip() and result.source_ids and not result.extractive
    assert set(result.source_ids) <= {source.id for source in result.retrieved_sources()}
    assert result.llm_calls >= 3 and result.usage.chat_calls == result.llm_calls
    chats = server.requests_to("/v1/chat/completions")
    # OpenAILike speaks OpenAI's protocol: the JSON tasks send their answer's strict schema, and the
    # answer cap is sent.
    formats = [r.json["response_format"] for r in chats if "response_format" in r.json]
    assert formats and all(f["type"] == "json_schema" and f["json_schema"]["strict"] for f in formats)
    assert all("max_tokens" in r.json for r in chats)


async def _events(rag: DriftRAG, kb: str, mode: str) -> list:
    return [event async for event in rag.stream(kb, QUESTION, mode=mode)]


@pytest.mark.parametrize("mode", MODE_NAMES)
async def test_every_mode_streams_its_answer_and_ends_with_the_unstreamed_result(served, mode: str) -> None:
    rag, kb, server, _ = served
    before = server.streamed_requests
    events = await _events(rag, kb, mode)
    assert isinstance(events[0], ProgressEvent) and isinstance(events[-1], QueryFinished)
    assert sum(isinstance(e, QueryFinished) for e in events) == 1
    first_delta = next(i for i, e in enumerate(events) if isinstance(e, AnswerDelta))
    assert any(isinstance(e, ProgressEvent) for e in events[:first_delta])
    # The final answer was streamed by the model (one request with "stream": true), token by token.
    assert server.streamed_requests == before + 1
    deltas = [e for e in events if isinstance(e, AnswerDelta)]
    assert not any(isinstance(e, AnswerReset) for e in events) and len(deltas) > 5
    streamed = events[-1].result
    assert "".join(d.text for d in deltas) == streamed.answer
    # Handles are written back as ids while streaming: no `[S1]` ever reaches the reader.
    assert not any("[S" in d.text for d in deltas)
    plain = await rag.query(kb, QUESTION, mode=mode)
    assert (streamed.answer, streamed.source_ids) == (plain.answer, plain.source_ids)
    assert {s.id for s in streamed.retrieved_sources()} == {s.id for s in plain.retrieved_sources()}
    if mode != "drift":  # DRIFT's fused ranking may order ties by which follow-up finished first
        assert [s.id for s in streamed.retrieved_sources()] == [s.id for s in plain.retrieved_sources()]


async def test_closing_the_stream_early_cancels_the_query(served) -> None:
    rag, kb, server, _ = served
    async with aclosing(rag.stream(kb, QUESTION, mode="drift")) as events:
        async for event in events:
            assert isinstance(event, ProgressEvent)
            break
    sent = server.request_count
    await asyncio.sleep(1.0)
    assert server.request_count == sent  # no model call after the close
    # The engine is still usable afterwards.
    assert (await rag.query(kb, QUESTION, mode="basic")).answer


async def test_a_custom_llm_without_json_mode_goes_through_the_repair_path(
    neo4j_settings: Settings, tmp_path: Path
) -> None:
    llm = ScriptedCustomLLM(query_misbehave={"answer": "invalid_once", "reduce": "invalid_once"})
    embed = HashingEmbedding(dimension=DIMENSION)
    rag = DriftRAG(_settings(neo4j_settings, tmp_path), llm=llm, embed_model=embed)
    assert rag.providers.embedding_dimension is None  # unknown until probed
    kb = f"test-custom-llm-{uuid.uuid4().hex[:8]}"
    await rag.connect()
    try:
        assert rag.providers.embedding_dimension == DIMENSION
        ingested = await rag.ingest(kb, texts=CORPUS)
        assert not ingested.failed_chunks and ingested.counts.entities and ingested.counts.reports
        drift = await rag.query(kb, QUESTION, mode="drift")
        events = [event async for event in rag.stream(kb, QUESTION, mode="local")]
    finally:
        await rag.delete_kb(kb)
        await rag.close()
    assert drift.answer.strip() and drift.source_ids
    # The answers came in prose first and were asked again with the repair prompt.
    assert llm.calls["repair"] >= 2
    # None of OpenAI's request fields reached the custom LLM (no max_tokens, no response_format).
    assert llm.call_kwargs and all(kwargs == {} for kwargs in llm.call_kwargs)
    # Streamed through the re-ask: the prose attempt never showed (it has no "answer" field).
    final = events[-1]
    assert isinstance(final, QueryFinished) and final.result.source_ids
    text = ""
    for event in events:
        if isinstance(event, AnswerReset):
            text = ""
        elif isinstance(event, AnswerDelta):
            text += event.text
    assert text == final.result.answer


def test_the_http_stream_carries_the_models_tokens(served, neo4j_settings: Settings, tmp_path: Path) -> None:
    """SSE over real uvicorn in the llm mode: the answer's deltas are the model's words, in order."""
    _, kb, server, _ = served
    # The server's own engine (its event loop owns its Neo4j driver and HTTP clients), on the same kb.
    llm, embed = _models(server)
    rag = DriftRAG(_settings(neo4j_settings, tmp_path), llm=llm, embed_model=embed)
    before = server.streamed_requests
    with BackgroundServer(create_app(rag, ApiKeys.insecure_no_auth())) as api:
        body = {"question": QUESTION, "mode": "local"}
        with httpx.stream("POST", f"{api.url}/api/v1/knowledge-bases/{kb}/query/stream", json=body, timeout=120) as r:
            assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
            events = list(events_of(r.iter_lines()))
    assert server.streamed_requests == before + 1
    names = [name for name, _ in events]
    assert names[0] == "progress" and names[-1] == "result" and "error" not in names
    deltas = [data["text"] for name, data in events if name == "delta"]
    result = QueryResponse.model_validate(events[-1][1])
    assert len(deltas) > 5 and "".join(deltas) == result.answer and not result.extractive
    assert result.cited_source_ids and set(result.cited_source_ids) <= {s.id for s in result.sources}


def test_the_chat_route_streams_the_models_words_and_counts_its_tokens(
    served, neo4j_settings: Settings, tmp_path: Path
) -> None:
    """`/v1/chat/completions` in the llm mode, with the `openai` client: the model's answer, word by word, and
    the tokens of every call the query made."""
    _, kb, server, _ = served
    llm, embed = _models(server)
    rag = DriftRAG(_settings(neo4j_settings, tmp_path), llm=llm, embed_model=embed)
    with BackgroundServer(create_app(rag, ApiKeys.insecure_no_auth())) as api:
        chat = openai.OpenAI(base_url=f"{api.url}/v1", api_key="unused", max_retries=0, timeout=120)
        messages = [{"role": "user", "content": QUESTION}]
        chunks = list(
            chat.chat.completions.create(
                model=f"{kb}:local", messages=messages, stream=True, stream_options={"include_usage": True}
            )
        )
        whole = chat.chat.completions.create(model=f"{kb}:local", messages=messages)
    texts = [chunk.choices[0].delta.content for chunk in chunks if chunk.choices and chunk.choices[0].delta.content]
    assert len(texts) > 5 and "".join(texts) == whole.choices[0].message.content
    assert not whole.choices[0].message.content.startswith("_Extractive")
    streamed_usage = chunks[-1].usage
    assert whole.usage.prompt_tokens > 0 and whole.usage.completion_tokens > 0
    assert whole.usage.total_tokens == whole.usage.prompt_tokens + whole.usage.completion_tokens
    assert streamed_usage.prompt_tokens > 0 and streamed_usage.completion_tokens > 0


async def test_a_probed_embedder_of_another_size_connects_and_is_refused_by_a_kb_of_another(
    neo4j_settings: Settings, tmp_path: Path, graph_kb: str
) -> None:
    """Kbs of several embedders share a server: connecting probes the embedder once; querying a kb
    another embedder filled is refused, naming the kb and its embedder."""
    embed = HashingEmbedding(dimension=128)
    rag = DriftRAG(_settings(neo4j_settings, tmp_path), llm=ScriptedCustomLLM(), embed_model=embed)
    try:
        await rag.connect()
        assert embed.text_requests == 1  # one probe, no other embedding
        with pytest.raises(EmbeddingDimensionMismatchError, match=f"knowledge base {graph_kb!r} holds vectors of"):
            await rag.query(graph_kb, "Who keeps the lighthouse?", mode="basic")
    finally:
        await rag.close()
