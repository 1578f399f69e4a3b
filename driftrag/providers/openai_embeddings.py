"""The OpenAI embedder (any OpenAI-compatible endpoint), with one retry layer."""

from __future__ import annotations

from typing import Any

from llama_index.core.base.embeddings.base import Embedding
from llama_index.embeddings.openai import OpenAIEmbedding
from pydantic import Field

from driftrag.providers.http_clients import openai_http_client
from driftrag.providers.unusable import retry_unusable
from driftrag.settings import Settings


class ClientRetryOpenAIEmbedding(OpenAIEmbedding):
    """OpenAIEmbedding whose retries are done once, by the openai client (backoff, Retry-After).

    The stock class retries twice over: tenacity around the call and the client inside it, so
    `max_retries=2` could mean nine requests. Here the tenacity layer is off (`max_retries=0`).
    """

    client_max_retries: int = Field(default=3, ge=0, description="Retries done by the openai client.")

    @classmethod
    def class_name(cls) -> str:
        return "ClientRetryOpenAIEmbedding"

    def _get_credential_kwargs(self, is_async: bool = False) -> dict[str, Any]:
        kwargs = {**super()._get_credential_kwargs(is_async=is_async), "max_retries": self.client_max_retries}
        if kwargs.get("http_client") is None:  # none given: one on the process's TLS context (http_clients.py)
            kwargs["http_client"] = openai_http_client(is_async=is_async)
        return kwargs

    # An unreadable body is asked again like a 500 (the client only retries statuses and time-outs).
    async def _aget_query_embedding(self, query: str) -> Embedding:
        return await retry_unusable(
            lambda: super(ClientRetryOpenAIEmbedding, self)._aget_query_embedding(query), self.client_max_retries
        )

    async def _aget_text_embedding(self, text: str) -> Embedding:
        return await retry_unusable(
            lambda: super(ClientRetryOpenAIEmbedding, self)._aget_text_embedding(text), self.client_max_retries
        )

    async def _aget_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        return await retry_unusable(
            lambda: super(ClientRetryOpenAIEmbedding, self)._aget_text_embeddings(texts), self.client_max_retries
        )


def openai_embedding(settings: Settings) -> ClientRetryOpenAIEmbedding:
    """The OpenAI embedder of `settings`; building it does no network I/O."""
    api_key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
    return ClientRetryOpenAIEmbedding(
        # `model_name` rather than `model`: the latter only accepts OpenAI's own model names.
        model_name=settings.embedding_model,
        api_key=api_key,
        api_base=settings.openai_base_url,
        dimensions=settings.embedding_dimensions,
        embed_batch_size=settings.embed_batch_size,
        max_retries=0,
        client_max_retries=settings.llm_max_retries,
        timeout=settings.llm_timeout_s,
    )
