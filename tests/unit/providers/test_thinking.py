from driftrag.providers import UsageTracker
from driftrag.providers.thinking import ThinkingFilter, no_thinking_request, split_thinking
from driftrag.settings import Settings
from tests.fakes.openai_server import FakeOpenAIServer

CHAT = "/v1/chat/completions"


def test_split_thinking_removes_blocks_and_orphan_closings() -> None:
    assert split_thinking("<think>\nThe user wants a name.\n</think>\n\nAlice.") == ("Alice.", "The user wants a name.")
    assert split_thinking("reasoning first</think>The Hatter.") == ("The Hatter.", "reasoning first")
    assert split_thinking("<think>still thinking when cut off") == ("", "still thinking when cut off")
    assert split_thinking("No thinking here.") == ("No thinking here.", "")


def test_thinking_filter_hides_a_leading_block_from_a_stream() -> None:
    shown = ThinkingFilter()
    pieces = ["<th", "ink>let me", " see</th", "ink>\nThe ", "answer."]
    assert "".join(shown.feed(p) for p in pieces) + shown.flush() == "The answer."
    plain = ThinkingFilter()
    assert "".join(plain.feed(p) for p in ["<", "b>bold</b> text"]) + plain.flush() == "<b>bold</b> text"


def test_no_thinking_request_per_host() -> None:
    local = no_thinking_request("http://127.0.0.1:8080/v1", "qwen3-0.6b")
    assert local == {"extra_body": {"chat_template_kwargs": {"enable_thinking": False}}}
    assert no_thinking_request(None, "o3-mini") == {"reasoning_effort": "low"}
    assert no_thinking_request("https://api.openai.com/v1", "gpt-5-mini") == {"reasoning_effort": "low"}
    assert no_thinking_request("https://api.openai.com/v1", "gpt-4o-mini") == {}


async def test_compatible_server_is_asked_not_to_think_and_thinking_is_counted_apart(tmp_path: object) -> None:
    from driftrag.providers import build_providers

    with FakeOpenAIServer(responder=lambda _: "<think>Hmm, plan the summary.</think>A short summary.") as server:
        settings = Settings(
            _env_file=None,
            llm_provider="openai",
            openai_api_key="k",
            openai_base_url=server.base_url,
            home=tmp_path,
            llm_cache=False,
        )
        usage = UsageTracker()
        client = build_providers(settings, usage).model_client
        assert client is not None
        result = await client.chat([{"role": "user", "content": "Summarise."}])
        assert result.text == "A short summary."
        assert server.requests_to(CHAT)[0].json["chat_template_kwargs"] == {"enable_thinking": False}
        assert 0 < usage.snapshot().reasoning_tokens < usage.snapshot().completion_tokens

        off = build_providers(settings.model_copy(update={"llm_disable_thinking": False})).model_client
        assert off is not None
        await off.chat([{"role": "user", "content": "Again."}])
        assert "chat_template_kwargs" not in server.requests_to(CHAT)[-1].json
