"""`ModelClient` around any LlamaIndex LLM: OpenAI's request fields only for the OpenAI classes, usage
from the model's own report when it gives one and counted otherwise, streaming over `astream_chat`."""

from __future__ import annotations

import asyncio

from llama_index.llms.openai_like import OpenAILike

from driftrag.providers.factory import build_providers
from driftrag.providers.llm import ModelClient
from driftrag.providers.tokens import count_tokens
from driftrag.providers.usage import UsageTracker
from driftrag.settings import Settings
from tests.fakes.custom_llm import ScriptedCustomLLM, usage_of
from tests.fakes.hashing_embedding import HashingEmbedding
from tests.fakes.openai_server import FakeOpenAIServer

PROMPT = "You list the entities a question names.\n<<<QUESTION>>>\nWho is Mara Vell?\n<<<END_QUESTION>>>"
MESSAGES = [{"role": "user", "content": PROMPT}]


async def test_a_custom_llm_gets_no_openai_fields_and_its_reported_usage_counts() -> None:
    llm = ScriptedCustomLLM(report_usage=True)
    usage = UsageTracker()
    result = await ModelClient(llm, provider="custom", model="m", usage=usage).chat(
        MESSAGES, json_mode=True, max_tokens=50, temperature=0.5
    )
    assert llm.call_kwargs == [{}]
    assert (result.prompt_tokens, result.completion_tokens) == (usage_of(PROMPT), usage_of(result.text))
    assert usage.snapshot().prompt_tokens == usage_of(PROMPT)


async def test_without_a_usage_report_tokens_are_counted_with_the_project_tokenizer() -> None:
    llm = ScriptedCustomLLM(report_usage=False)
    client = ModelClient(llm, provider="custom", model="m", usage=UsageTracker())
    pieces: list[str] = []

    async def collect(piece: str) -> None:
        pieces.append(piece)

    result = await client.stream_chat(MESSAGES, on_delta=collect, json_mode=True)
    assert len(pieces) > 1 and "".join(pieces) == result.text
    # cl100k tokens of the message plus 4 framing tokens, and of the answer.
    assert result.prompt_tokens == count_tokens(PROMPT) + 4 != usage_of(PROMPT)
    assert result.completion_tokens == count_tokens(result.text)


async def test_openai_like_gets_json_mode_and_a_streams_usage_from_its_last_chunk() -> None:
    answer = '{"names": ["Mara Vell"]}'
    with FakeOpenAIServer(responder=lambda request: answer) as server:
        llm = OpenAILike(model="m", api_base=server.base_url, api_key="k", is_chat_model=True)
        usage = UsageTracker()
        client = ModelClient(llm, provider="openai-like", model="m", usage=usage)
        pieces: list[str] = []

        async def collect(piece: str) -> None:
            pieces.append(piece)

        streamed = await client.stream_chat(MESSAGES, on_delta=collect, json_mode=True, max_tokens=40)
        request = server.requests[-1].json
    assert request["stream"] and request["stream_options"] == {"include_usage": True}
    assert request["response_format"] == {"type": "json_object"} and request["max_tokens"] == 40
    assert "".join(pieces) == streamed.text == answer and len(pieces) > 1
    # The server's own count (one token per four characters), not driftrag's.
    assert streamed.prompt_tokens == -(-len(PROMPT) // 4) and streamed.completion_tokens == -(-len(answer) // 4)


async def test_an_embedder_of_unknown_size_is_probed_once() -> None:
    embed = HashingEmbedding(dimension=96)
    providers = build_providers(Settings(_env_file=None, llm_provider="offline"), embed_model=embed)
    assert providers.embedding_dimension is None and providers.mode == "offline"
    probed = await providers.with_probed_dimension()
    again = await probed.with_probed_dimension()
    assert probed.embedding_dimension == again.embedding_dimension == 96
    assert embed.text_requests == 1 and "(96 d)" in probed.describe()


def test_an_llm_makes_the_llm_mode_and_keeps_the_settings_embedder() -> None:
    providers = build_providers(Settings(_env_file=None, llm_provider="offline"), llm=ScriptedCustomLLM())
    assert providers.mode == "llm" and providers.model_client is not None
    assert providers.embedding_dimension == 384 and "ScriptedCustomLLM scripted-custom" in providers.describe()


async def test_a_watched_client_stops_a_looping_answer_and_closes_its_stream() -> None:
    looping = '{"answer": "' + "The keeper rang the bell all night long. " * 200 + '"}'
    with FakeOpenAIServer(responder=lambda request: looping, stream_delay_s=0.002) as server:
        llm = OpenAILike(model="m", api_base=server.base_url, api_key="k", is_chat_model=True, temperature=0.0)
        usage = UsageTracker()
        client = ModelClient(llm, provider="openai-like", model="m", usage=usage, stop_loops=True)
        result = await client.chat(MESSAGES, json_mode=True, max_tokens=4000)
        request = server.requests[-1].json
        # The server saw the connection go before the end of its answer (as llama.cpp then stops writing).
        for _ in range(200):
            if server.abandoned_streams:
                break
            await asyncio.sleep(0.025)
        assert server.abandoned_streams == 1
    # Streamed with the LLM's own fields (its temperature) and the call's.
    assert request["stream"] and request["temperature"] == 0.0 and request["max_tokens"] == 4000
    assert request["messages"] == MESSAGES
    assert result.text.count("The keeper rang the bell") == 3 and len(result.text) < len(looping) // 50
    snapshot = usage.snapshot()
    assert snapshot.loops_stopped == 1 and snapshot.chat_calls == 1
    # No usage report came (the stream was cut): the tokens written so far are counted.
    assert result.completion_tokens == count_tokens(result.text)


async def test_a_watched_client_passes_a_clean_answer_whole_with_the_servers_count() -> None:
    answer = '{"names": ["Mara Vell", "Old Mattias Crane"]}'
    with FakeOpenAIServer(responder=lambda request: answer) as server:
        llm = OpenAILike(model="m", api_base=server.base_url, api_key="k", is_chat_model=True)
        usage = UsageTracker()
        client = ModelClient(llm, provider="openai-like", model="m", usage=usage, stop_loops=True)
        result = await client.chat(MESSAGES, json_mode=True)
        assert server.abandoned_streams == 0 and server.streamed_requests == 1
    assert result.text == answer and usage.snapshot().loops_stopped == 0
    assert result.completion_tokens == -(-len(answer) // 4)
