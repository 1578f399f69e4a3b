import asyncio
import time
from pathlib import Path

import httpx
import openai
import pytest
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.llms import MockLLM

from driftrag.errors import ModelError
from driftrag.providers import ModelClient, ResponseCache, UsageTracker, build_providers
from driftrag.providers.llm import ClientRetryOpenAI
from driftrag.settings import Settings
from tests.fakes.openai_server import FakeOpenAIServer, Fault, estimate_tokens

CHAT = "/v1/chat/completions"


def _client(settings: Settings, **updates: object) -> ModelClient:
    client = build_providers(settings.model_copy(update=updates)).model_client
    assert client is not None
    return client


async def test_chat_returns_responder_text_and_records_usage(
    openai_settings: Settings, openai_server: FakeOpenAIServer
) -> None:
    openai_server.responder = lambda request: f"answer to {request['messages'][-1]['content']}"
    client = _client(openai_settings)
    messages = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Who is Alice?"}]

    result = await client.chat(messages, temperature=0.2, max_tokens=50, json_mode=True)

    assert result.text == "answer to Who is Alice?"
    assert not result.cached
    expected_prompt = estimate_tokens("You are terse.") + estimate_tokens("Who is Alice?")
    assert (result.prompt_tokens, result.completion_tokens) == (expected_prompt, estimate_tokens(result.text))
    usage = client.usage.snapshot()
    assert (usage.chat_calls, usage.prompt_tokens, usage.completion_tokens) == (
        1,
        expected_prompt,
        result.completion_tokens,
    )
    sent = openai_server.requests_to(CHAT)[0].json
    assert sent["model"] == "gpt-4o-mini"
    assert (sent["temperature"], sent["max_tokens"], sent["response_format"]) == (
        0.2,
        50,
        {"type": "json_object"},
    )


async def test_identical_call_is_a_cache_hit(openai_settings: Settings, openai_server: FakeOpenAIServer) -> None:
    client = _client(openai_settings)
    first = await client.chat([{"role": "system", "content": "be kind"}, {"role": "user", "content": "hello"}])
    second = await client.chat([ChatMessage(role="system", content="be kind"), {"role": "user", "content": "hello"}])

    assert openai_server.request_count == 1
    assert second.cached and second.text == first.text
    assert client.usage.snapshot().cache_hits == 1
    assert client.usage.snapshot().chat_calls == 1

    # Another client on the same cache directory (a new run) hits it too, once the first one's answers are
    # written; a changed param does not.
    await client.drain()
    again = _client(openai_settings)
    assert (await again.chat([{"role": "system", "content": "be kind"}, {"role": "user", "content": "hello"}])).cached
    await again.chat([{"role": "system", "content": "be kind"}, {"role": "user", "content": "hello"}], temperature=0.9)
    assert openai_server.request_count == 2


async def test_rate_limit_honours_retry_after_then_succeeds(
    openai_settings: Settings, openai_server: FakeOpenAIServer
) -> None:
    client = _client(openai_settings)
    openai_server.inject(Fault.rate_limit(retry_after=1.0))
    started = time.monotonic()
    result = await client.chat([{"role": "user", "content": "ping"}])
    elapsed = time.monotonic() - started

    assert result.text == "echo: ping"
    assert openai_server.request_count == 2
    assert elapsed >= 0.9  # the client's own first backoff is ≤ 0.5 s, so this is Retry-After
    assert client.usage.snapshot().failed_calls == 0


async def test_server_error_then_success_is_retried(openai_settings: Settings, openai_server: FakeOpenAIServer) -> None:
    client = _client(openai_settings)
    openai_server.inject(Fault.server_error(503))
    assert (await client.chat([{"role": "user", "content": "ping"}])).text == "echo: ping"
    assert openai_server.request_count == 2


async def test_persistent_server_error_raises_model_error_and_is_not_cached(
    openai_settings: Settings, openai_server: FakeOpenAIServer
) -> None:
    client = _client(openai_settings)
    openai_server.inject(*[Fault.server_error()] * 3)

    with pytest.raises(ModelError) as caught:
        await client.chat([{"role": "user", "content": "ping"}])

    message = str(caught.value)
    assert openai_server.request_count == openai_settings.llm_max_retries + 1 == 3
    assert "HTTP 500" in message and "3 attempts" in message
    assert "gpt-4o-mini" in message and openai_server.base_url in message
    assert isinstance(caught.value.__cause__, openai.InternalServerError)
    assert client.usage.snapshot().failed_calls == 1

    result = await client.chat([{"role": "user", "content": "ping"}])
    assert not result.cached and result.text == "echo: ping"
    assert openai_server.request_count == 4


async def test_client_error_is_not_retried(openai_settings: Settings, openai_server: FakeOpenAIServer) -> None:
    client = _client(openai_settings)
    openai_server.inject(Fault.server_error(400))
    with pytest.raises(ModelError, match="failed after 1 attempt: HTTP 400"):
        await client.chat([{"role": "user", "content": "ping"}])
    assert openai_server.request_count == 1


async def test_slow_response_times_out_within_bounded_time(
    openai_settings: Settings, openai_server: FakeOpenAIServer
) -> None:
    client = _client(openai_settings, llm_timeout_s=0.3, llm_max_retries=1)
    openai_server.inject(Fault.slow(3.0), Fault.slow(3.0))
    started = time.monotonic()

    with pytest.raises(ModelError, match=r"timed out after 2 attempts of 0\.3 s") as caught:
        await client.chat([{"role": "user", "content": "ping"}])

    assert time.monotonic() - started < 5.5  # waiting out the slow answers would take 6 s
    assert isinstance(caught.value.__cause__, openai.APITimeoutError)
    assert openai_server.request_count == 2


async def test_a_malformed_body_is_retried_like_a_500(
    openai_settings: Settings, openai_server: FakeOpenAIServer
) -> None:
    client = _client(openai_settings)
    openai_server.inject(Fault.malformed_json(), Fault.malformed_json())
    result = await client.chat([{"role": "user", "content": "ping"}])
    assert result.text == "echo: ping"
    usage = client.usage.snapshot()
    assert (usage.chat_calls, usage.retried_calls, usage.failed_calls) == (1, 2, 0)
    assert openai_server.request_count == 3


async def test_malformed_bodies_past_the_retries_are_a_model_error(
    openai_settings: Settings, openai_server: FakeOpenAIServer
) -> None:
    client = _client(openai_settings)  # llm_max_retries=2: three answers in all
    openai_server.inject(*[Fault.malformed_json()] * 3)
    with pytest.raises(ModelError, match="unusable response"):
        await client.chat([{"role": "user", "content": "ping"}])
    assert client.usage.snapshot().chat_calls == 0
    assert openai_server.request_count == 3
    assert not list(openai_settings.llm_cache_dir.glob("*/*.json"))


async def test_a_malformed_embedding_body_is_retried(
    openai_settings: Settings, openai_server: FakeOpenAIServer
) -> None:
    embedder = build_providers(openai_settings.model_copy(update={"embedding_dimensions": 8})).embedder
    openai_server.inject(Fault.malformed_json())
    vectors = await embedder.aget_text_embedding_batch(["one", "two"])
    assert len(vectors) == 2 and len(vectors[0]) == 8
    assert openai_server.request_count == 2


async def test_concurrency_limit_is_honoured(openai_settings: Settings, openai_server: FakeOpenAIServer) -> None:
    openai_server.latency_s = 0.2
    client = _client(openai_settings, llm_concurrency=2, llm_cache=False)
    started = time.monotonic()

    results = await asyncio.gather(*(client.chat([{"role": "user", "content": f"q{i}"}]) for i in range(6)))

    assert [r.text for r in results] == [f"echo: q{i}" for i in range(6)]
    assert openai_server.max_in_flight == 2
    assert time.monotonic() - started >= 0.55  # three waves of 0.2 s


async def test_without_reported_usage_tokens_are_estimated(tmp_path: Path) -> None:
    usage = UsageTracker()
    client = ModelClient(MockLLM(), provider="mock", model="mock", usage=usage, cache=ResponseCache(tmp_path))

    result = await client.chat([{"role": "user", "content": "hello world"}])

    assert result.prompt_tokens == 2 + 4  # "hello world" is two cl100k tokens, plus message framing
    assert result.completion_tokens > 0
    assert usage.snapshot().prompt_tokens == result.prompt_tokens
    assert (await client.chat([{"role": "user", "content": "hello world"}])).cached


async def test_dict_messages_are_validated(tmp_path: Path) -> None:
    client = ModelClient(MockLLM(), provider="mock", model="mock", usage=UsageTracker())
    with pytest.raises(ValueError, match="unknown keys"):
        await client.chat([{"role": "user", "content": "hi", "name": "x"}])


async def test_model_names_unknown_to_llama_index_work(
    openai_settings: Settings, openai_server: FakeOpenAIServer
) -> None:
    client = _client(openai_settings, llm_model="llama3-8b-instruct")
    assert (await client.chat([{"role": "user", "content": "hi"}])).text == "echo: hi"
    assert openai_server.requests_to(CHAT)[0].json["model"] == "llama3-8b-instruct"


async def test_a_server_refusing_response_format_gets_the_prompt_alone_under_auto(
    openai_settings: Settings, openai_server: FakeOpenAIServer
) -> None:
    openai_server.rejects_response_format = True
    with pytest.raises(ModelError, match=r"400|response_format"):
        await _client(openai_settings, llm_structured="json_object").chat(
            [{"role": "user", "content": "{}"}], json_mode=True
        )
    result = await _client(openai_settings, llm_structured="off").chat(
        [{"role": "user", "content": "Who?"}], json_mode=True
    )
    assert result.text and "response_format" not in openai_server.requests_to(CHAT)[-1].json
    # `auto`: refused in JSON mode, the same call is asked without a format, and the level is kept.
    client = _client(openai_settings)
    refused = openai_server.rejected_response_format
    assert (await client.chat([{"role": "user", "content": "Why?"}], json_mode=True)).text
    assert (await client.chat([{"role": "user", "content": "When?"}], json_mode=True)).text
    assert openai_server.rejected_response_format == refused + 1
    usage = client.usage.snapshot()
    assert (usage.chat_calls, usage.structured_fallbacks, usage.prompt_only_json_calls, usage.failed_calls) == (
        2,
        1,
        2,
        0,
    )


async def test_openai_clients_share_one_tls_context_each_with_its_own_pool(
    openai_settings: Settings, openai_server: FakeOpenAIServer
) -> None:
    # Each new client made its own TLS context (the CA bundle loaded again, ~40 ms) inside the event loop.
    first, second = build_providers(openai_settings), build_providers(openai_settings)
    assert first.model_client is not None and second.model_client is not None
    clients = [
        first.model_client.llm._get_aclient(),
        second.model_client.llm._get_aclient(),
        first.embedder.inner._get_aclient(),
    ]
    pools = [client._client._transport._pool for client in clients]
    assert len({id(pool) for pool in pools}) == 3
    assert len({id(pool._ssl_context) for pool in pools}) == 1
    # The clients still work, through the server.
    assert (await first.model_client.chat([{"role": "user", "content": "hello"}])).text
    assert len(await second.embedder.aget_text_embedding_batch(["hello"])) == 1


def test_a_given_http_client_is_kept() -> None:
    given = httpx.AsyncClient()
    llm = ClientRetryOpenAI(model="gpt-4o-mini", api_key="test", async_http_client=given)
    assert llm._get_aclient()._client is given
