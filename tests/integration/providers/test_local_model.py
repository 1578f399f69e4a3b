"""The `local` provider for real: llama.cpp serving SmolLM2-135M inside the engine's process, started on
connect, answering a chat call through the engine's model client, and gone once the engine closes."""

from __future__ import annotations

import socket
from pathlib import Path

from driftrag.facade import DriftRAG
from driftrag.settings import Settings


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


async def test_the_local_model_starts_on_connect_answers_and_stops_on_close(
    neo4j_settings: Settings,
    smollm2_gguf: Path,
    tmp_path: Path,
) -> None:
    settings = neo4j_settings.model_copy(
        update={
            "home": tmp_path,
            "llm_provider": "local",
            "local_model": smollm2_gguf,
            "local_context": 2048,
            "local_threads": 1,
            "llm_concurrency": 1,
            "llm_cache": False,
        }
    )
    rag = DriftRAG(settings)
    await rag.connect()
    try:
        status = rag.providers.local_server.status if rag.providers.local_server else None
        assert status is not None and status.owned and status.context == 2048 and status.slots == 1
        assert status.model.quantisation == "Q4_1" and status.model.trained_context == 8192
        port = int(status.base_url.rsplit(":", 1)[1].removesuffix("/v1"))
        assert _port_open(port)
        assert status.base_url in rag.describe()
        client = rag.providers.model_client
        assert client is not None and client.base_url == status.base_url
        answer = await client.chat([{"role": "user", "content": "Say hello."}], max_tokens=16)
        assert answer.text.strip() and answer.completion_tokens > 0
        assert (tmp_path / "local-model" / "server.json").is_file()
    finally:
        await rag.close()
    assert not _port_open(port), "the server stopped with the engine"
    assert not (tmp_path / "local-model" / "server.json").exists()


async def test_providers_built_without_an_engine_start_the_server_on_their_first_call(
    smollm2_gguf: Path, tmp_path: Path
) -> None:
    from driftrag.providers.factory import build_providers

    settings = Settings(
        _env_file=None,
        home=tmp_path,
        llm_provider="local",
        local_model=smollm2_gguf,
        local_context=1024,
        local_threads=1,
        llm_concurrency=1,
        llm_cache=False,
    )
    providers = build_providers(settings)
    assert providers.local_server is not None and providers.local_server.status is None
    try:
        assert providers.model_client is not None
        answer = await providers.model_client.chat([{"role": "user", "content": "Hi"}], max_tokens=4)
        assert answer.text.strip()
        status = providers.local_server.status
        assert status is not None and status.owned and status.context == 1024
        assert providers.model_client.llm.metadata.context_window == 1024
    finally:
        await providers.stop()
    assert providers.local_server.status is None
