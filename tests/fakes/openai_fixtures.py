"""pytest fixtures around the local OpenAI-compatible server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from driftrag.settings import Settings
from tests.fakes.openai_server import FakeOpenAIServer

__all__ = ["openai_server", "openai_settings"]


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def openai_settings(tmp_path: Path, openai_server: FakeOpenAIServer) -> Settings:
    """OpenAI mode pointed at the local server, with short timeouts and a per-test cache."""
    return Settings(
        _env_file=None,
        llm_provider="openai",
        openai_api_key="test-key",
        openai_base_url=openai_server.base_url,
        home=tmp_path,
        llm_max_retries=2,
        llm_timeout_s=2.0,
    )
