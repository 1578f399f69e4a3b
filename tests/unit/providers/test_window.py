from llama_index.core.llms import MockLLM

from driftrag.errors import PromptTooLongError
from driftrag.providers import build_providers
from driftrag.providers.window import (
    ServerReport,
    fit_settings,
    llamacpp_window,
    metadata_window,
    ollama_window,
    probe_server,
    server_root,
)
from driftrag.settings import Settings
from tests.fakes.openai_server import FakeOpenAIServer, estimate_tokens, message_text

CHAT = "/v1/chat/completions"


def test_llamacpp_props_give_the_context_of_one_slot() -> None:
    assert llamacpp_window({"default_generation_settings": {"n_ctx": 8192}, "total_slots": 1}) == 8192
    assert llamacpp_window({"default_generation_settings": {"n_ctx": 8192}, "total_slots": 2}) == 4096
    per_slot = {"default_generation_settings": {"n_ctx": 8192, "n_ctx_slot": 8192}, "total_slots": 2}
    assert llamacpp_window(per_slot) == 8192
    assert llamacpp_window({"default_generation_settings": {}}) is None
    assert llamacpp_window({"build_info": "b4000"}) is None


def test_ollama_show_prefers_the_num_ctx_it_runs_with() -> None:
    show = {"parameters": "stop <|im_end|>\nnum_ctx 4096", "model_info": {"qwen2.context_length": 32768}}
    assert ollama_window(show) == 4096
    assert ollama_window({"model_info": {"llama.context_length": 131072}}) == 131072
    assert ollama_window({"parameters": "temperature 0.7"}) is None


def test_server_root_drops_the_v1_suffix() -> None:
    assert server_root("http://127.0.0.1:8080/v1/") == "http://127.0.0.1:8080"
    assert server_root("http://127.0.0.1:11434") == "http://127.0.0.1:11434"


def test_metadata_window_ignores_llama_index_generic_default() -> None:
    assert metadata_window(MockLLM()) is None  # 3900: llama-index's default, not the model's


async def test_props_detection_against_the_server() -> None:
    with FakeOpenAIServer(context_window=2048, total_slots=2) as server:
        report = await probe_server(server.base_url, "smol")
        assert (report.window, report.slots) == (2048, 2)
        assert server.props_requests == 1
    with FakeOpenAIServer() as server:  # no /props, no /api/show: unknown
        assert await probe_server(server.base_url, "smol") == ServerReport()
        assert server.request_count == 0


def test_unknown_or_large_window_leaves_the_settings_unchanged() -> None:
    settings = Settings(_env_file=None)
    assert fit_settings(settings, None) is settings
    assert fit_settings(settings, 128_000) == settings


def test_a_small_window_shrinks_caps_and_budgets_to_fit() -> None:
    settings = Settings(_env_file=None)
    fitted = fit_settings(settings, 2048)
    assert fitted.answer_max_tokens <= 512 and fitted.extraction_max_tokens <= 512
    assert fitted.local_context_tokens + fitted.answer_max_tokens < 2048
    assert fitted.report_context_tokens + fitted.report_max_tokens < 2048
    assert fitted.global_map_context_tokens < 2048 and fitted.chunk_size < 1200
    assert fitted.chunk_overlap < fitted.chunk_size


async def test_model_client_caps_every_request_to_the_window(tmp_path: object) -> None:
    with FakeOpenAIServer(context_window=2048) as server:
        settings = Settings(
            _env_file=None,
            llm_provider="openai",
            openai_api_key="k",
            openai_base_url=server.base_url,
            llm_model="smol-local",
            home=tmp_path,
        )
        client = build_providers(settings).model_client
        assert client is not None
        assert await client.context_window() == 2048
        await client.chat([{"role": "user", "content": "word " * 800}], max_tokens=4096)
        await client.chat([{"role": "user", "content": "short"}])
        for request in server.requests_to(CHAT):
            prompt = sum(estimate_tokens(message_text(m)) for m in request.json["messages"])
            assert prompt + request.json["max_tokens"] <= 2048
        try:
            await client.chat([{"role": "user", "content": "word " * 3000}])
        except PromptTooLongError as exc:
            assert "2048-token context window" in str(exc)
        else:
            raise AssertionError("a prompt larger than the window was sent")
        assert server.props_requests == 1  # probed once per client
        assert len(server.requests_to(CHAT)) == 2


async def test_configured_window_is_not_probed(tmp_path: object) -> None:
    with FakeOpenAIServer(context_window=2048) as server:
        settings = Settings(
            _env_file=None,
            llm_provider="openai",
            openai_api_key="k",
            openai_base_url=server.base_url,
            llm_model="smol-local",
            llm_context_window=4096,
            home=tmp_path,
        )
        client = build_providers(settings).model_client
        assert client is not None
        assert await client.context_window() == 4096
        assert server.props_requests == 0


async def test_a_large_window_leaves_caps_and_uncapped_calls_alone(tmp_path: object) -> None:
    with FakeOpenAIServer() as server:
        settings = Settings(
            _env_file=None,
            llm_provider="openai",
            openai_api_key="k",
            openai_base_url=server.base_url,
            llm_context_window=128_000,
            home=tmp_path,
        )
        client = build_providers(settings).model_client
        assert client is not None
        await client.chat([{"role": "user", "content": "word " * 3000}])
        await client.chat([{"role": "user", "content": "other " * 3000}], max_tokens=4096)
        first, second = (request.json for request in server.requests_to(CHAT))
        assert "max_tokens" not in first and second["max_tokens"] == 4096
