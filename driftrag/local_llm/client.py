"""The chat model of `llm_provider=local`: the OpenAI client pointed at the local llama.cpp server.

The server's address is known once it runs, so the LLM starts it on its first call when the engine's
`connect` has not already (a script that builds the providers itself, a server whose Neo4j was down at
start-up); every call after that is a plain OpenAI-protocol request.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.base.llms.types import LLMMetadata
from pydantic import PrivateAttr

from driftrag.local_llm.server import LocalModelServer
from driftrag.providers.llm import ClientRetryOpenAI
from driftrag.settings import Settings

# llama.cpp's server runs without an API key on 127.0.0.1; the openai client insists on one.
_NO_KEY = "local"


class LocalServerOpenAI(ClientRetryOpenAI):
    """`ClientRetryOpenAI` whose server is started on first use."""

    _server: LocalModelServer = PrivateAttr()

    def __init__(self, server: LocalModelServer, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._server = server

    @classmethod
    def class_name(cls) -> str:
        return "LocalServerOpenAI"

    async def achat(self, messages: Any, **kwargs: Any) -> Any:
        await self.ready()
        return await super().achat(messages, **kwargs)

    async def astream_chat(self, messages: Any, **kwargs: Any) -> Any:
        await self.ready()
        return await super().astream_chat(messages, **kwargs)

    async def ready(self) -> None:
        """Start the server if needed and aim the client at it (before its HTTP client is made)."""
        if self._server.status is None or self.api_base != self._server.status.base_url:
            status = await self._server.astart()
            self.api_base = status.base_url
            self._aclient = None  # a client made for another address is not reused

    @property
    def metadata(self) -> LLMMetadata:
        status = self._server.status
        metadata = super().metadata
        if status is None:
            return metadata
        return metadata.model_copy(update={"context_window": status.context, "is_chat_model": True})


def local_llm(settings: Settings, server: LocalModelServer) -> LocalServerOpenAI:
    """The chat model served by `server`; building it does no I/O."""
    return LocalServerOpenAI(
        server,
        model=server.model_path.name,
        api_key=_NO_KEY,
        temperature=settings.llm_temperature,
        timeout=settings.local_timeout_s,
        max_retries=0,
        client_max_retries=settings.llm_max_retries,
    )
