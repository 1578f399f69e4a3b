"""The model calls' concurrency and time-out follow the provider, the settings and the server's slots."""

from __future__ import annotations

import asyncio
from pathlib import Path

from llama_index.llms.openai_like import OpenAILike

from driftrag.providers import build_providers
from driftrag.providers.limits import call_timeout, concurrency, within_slots
from driftrag.providers.llm import ModelClient
from driftrag.providers.window import ServerReport
from driftrag.settings import Settings
from tests.fakes.openai_server import FakeOpenAIServer


def _settings(tmp_path: Path, server: FakeOpenAIServer, **fields: object) -> Settings:
    return Settings(
        _env_file=None,
        llm_provider="openai",
        openai_api_key="test-key",
        openai_base_url=server.base_url,
        llm_model="smol",
        home=tmp_path,
        llm_cache=False,
        **fields,
    )


def _client(settings: Settings) -> ModelClient:
    client = build_providers(settings).model_client
    assert client is not None
    return client


def test_an_explicit_setting_wins_then_the_local_slots_then_the_servers() -> None:
    default = Settings(_env_file=None)
    assert concurrency(Settings(_env_file=None, llm_concurrency=6), local=False, report=ServerReport(slots=1)) == (
        6,
        "DRIFTRAG_LLM_CONCURRENCY",
    )
    assert concurrency(default, local=True) == (2, "the local server's slots")
    assert concurrency(default, local=False, report=ServerReport(slots=2)) == (2, "the server's 2 slot(s), GET /props")
    assert concurrency(default, local=False) == (8, "the DRIFTRAG_LLM_CONCURRENCY default")
    assert within_slots(8, 16) == (8, "the DRIFTRAG_LLM_CONCURRENCY default, within the server's 16 slot(s)")
    assert within_slots(8, None)[0] == 8


def test_the_call_time_out_follows_the_provider_and_a_given_llm() -> None:
    settings = Settings(_env_file=None)
    assert call_timeout(settings, local=True) == (600.0, "DRIFTRAG_LOCAL_TIMEOUT_S")
    assert call_timeout(settings, local=False) == (60.0, "DRIFTRAG_LLM_TIMEOUT_S")
    given = OpenAILike(model="m", api_base="http://127.0.0.1:1/v1", api_key="none", timeout=240.0)
    assert call_timeout(settings, local=False, llm=given) == (240.0, "the LLM's timeout")


async def test_calls_wait_for_the_servers_slots_when_concurrency_is_not_set(tmp_path: Path) -> None:
    with FakeOpenAIServer(total_slots=1, latency_s=0.05) as server:
        client = _client(_settings(tmp_path, server))
        await asyncio.gather(*(client.chat([{"role": "user", "content": f"q{i}"}]) for i in range(4)))
        assert server.max_in_flight == 1  # not 8 queued against one slot
        assert server.props_requests == 1  # asked once, before the first call took a place
        limits = await client.call_limits()
        assert (limits.concurrency, limits.concurrency_source) == (1, "the server's 1 slot(s), GET /props")
        assert (limits.timeout_s, limits.timeout_source) == (60.0, "DRIFTRAG_LLM_TIMEOUT_S")


async def test_an_explicit_concurrency_is_not_lowered_by_the_server(tmp_path: Path) -> None:
    with FakeOpenAIServer(total_slots=1, latency_s=0.1) as server:
        client = _client(_settings(tmp_path, server, llm_concurrency=3))
        await asyncio.gather(*(client.chat([{"role": "user", "content": f"q{i}"}]) for i in range(3)))
        assert server.max_in_flight == 3
        limits = await client.call_limits()
        assert (limits.concurrency, limits.concurrency_source) == (3, "DRIFTRAG_LLM_CONCURRENCY")


async def test_a_server_that_reports_no_slots_keeps_the_default(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:  # no /props
        limits = await _client(_settings(tmp_path, server)).call_limits()
        assert (limits.concurrency, limits.concurrency_source) == (
            8,
            "the DRIFTRAG_LLM_CONCURRENCY default; the server reports no slots",
        )


def test_the_local_provider_takes_its_own_slots_and_time_out(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    settings = Settings(_env_file=None, llm_provider="local", local_model=model, home=tmp_path)
    client = _client(settings)
    assert client.timeout_s == 600.0
    assert asyncio.run(client.call_limits()).concurrency == 2  # not probed: its server is its own
