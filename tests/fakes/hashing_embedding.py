"""TEST DOUBLE: a deterministic bag-of-words embedding, for tests where the embedding model does not matter.

Each lower-cased word adds 1 to one of `dimension` coordinates chosen by a stable hash, so texts
sharing words have a higher cosine; queries and passages embed alike. It counts its requests, so
tests can check that a task batches its texts.
"""

from __future__ import annotations

import hashlib
import re

from llama_index.core.base.embeddings.base import BaseEmbedding, Embedding
from pydantic import Field

_WORD = re.compile(r"\w+")


class HashingEmbedding(BaseEmbedding):
    dimension: int = Field(default=256)
    query_requests: int = Field(default=0)
    text_requests: int = Field(default=0)

    @classmethod
    def class_name(cls) -> str:
        return "HashingEmbedding"

    def _vector(self, text: str) -> Embedding:
        vector = [0.0] * self.dimension
        for word in _WORD.findall(text.casefold()):
            vector[int(hashlib.sha1(word.encode()).hexdigest(), 16) % self.dimension] += 1.0
        return vector

    def _get_query_embedding(self, query: str) -> Embedding:
        self.query_requests += 1
        return self._vector(query)

    def _get_text_embedding(self, text: str) -> Embedding:
        self.text_requests += 1
        return self._vector(text)

    def _get_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        self.text_requests += 1
        return [self._vector(text) for text in texts]

    async def _aget_query_embedding(self, query: str) -> Embedding:
        return self._get_query_embedding(query)

    async def _aget_text_embedding(self, text: str) -> Embedding:
        return self._get_text_embedding(text)

    async def _aget_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        return self._get_text_embeddings(texts)
