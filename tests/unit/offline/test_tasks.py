"""Wiring: the offline task set from settings, and ingestion deps without a model."""

from __future__ import annotations

from driftrag.ingestion.run import IngestionDeps, IngestionTasks
from driftrag.ingestion.tasks import CommunityReporter, DescriptionSummarizer, GraphExtractor, GraphRefiner
from driftrag.offline.extractor import OfflineGraphExtractor
from driftrag.offline.tasks import offline_ingestion_tasks
from driftrag.providers import build_providers
from driftrag.settings import Settings
from tests.fakes.scripted_llm import ScriptedChatModel


def _offline(**fields) -> Settings:
    return Settings(_env_file=None, llm_provider="offline", **fields)


def test_the_offline_task_set_fills_every_slot() -> None:
    tasks = offline_ingestion_tasks(_offline(offline_cooccurrence_window=0))
    assert isinstance(tasks, IngestionTasks)
    assert isinstance(tasks.extractor, GraphExtractor) and isinstance(tasks.extractor, OfflineGraphExtractor)
    assert isinstance(tasks.summarizer, DescriptionSummarizer)
    assert isinstance(tasks.reporter, CommunityReporter)
    assert isinstance(tasks.refiner, GraphRefiner)


def test_without_a_model_ingestion_is_offline_with_capped_chunks() -> None:
    settings = _offline()
    providers = build_providers(settings)
    assert providers.model_client is None and "no LLM: ingestion extracts" in providers.describe()
    deps = IngestionDeps.from_providers(settings, store=None, providers=providers)  # type: ignore[arg-type]
    assert isinstance(deps.tasks.extractor, OfflineGraphExtractor)
    assert deps.chunking() == (settings.offline_chunk_size, settings.offline_chunk_overlap)
    # Smaller explicit chunks stay as they are.
    small = _offline(chunk_size=120, chunk_overlap=10)
    assert IngestionDeps.from_providers(small, None, build_providers(small)).chunking() == (120, 10)  # type: ignore[arg-type]


def test_a_chat_model_keeps_the_llm_tasks_and_no_refiner() -> None:
    settings = _offline()
    deps = IngestionDeps.from_providers(settings, None, build_providers(settings), ScriptedChatModel())  # type: ignore[arg-type]
    assert not isinstance(deps.tasks.extractor, OfflineGraphExtractor)
    assert deps.tasks.refiner is None
