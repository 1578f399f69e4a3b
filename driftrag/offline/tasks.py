"""The offline extractive implementations of the ingestion tasks, configured from settings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from driftrag.offline.extractor import OfflineGraphExtractor
from driftrag.offline.nlp import LanguageResources
from driftrag.offline.refine import OfflineGraphRefiner
from driftrag.offline.reports import OfflineCommunityReporter
from driftrag.offline.summaries import OfflineDescriptionSummarizer
from driftrag.settings import Settings

if TYPE_CHECKING:
    from driftrag.ingestion.run import IngestionTasks


def offline_ingestion_tasks(settings: Settings, resources: LanguageResources | None = None) -> IngestionTasks:
    """Extractor, summarizer, reporter and refiner that need no model API (and do no I/O until used)."""
    from driftrag.ingestion.run import IngestionTasks

    resources = resources or LanguageResources()
    language = settings.offline_language
    return IngestionTasks(
        extractor=OfflineGraphExtractor(resources, language=language, window=settings.offline_cooccurrence_window),
        summarizer=OfflineDescriptionSummarizer(resources, language=language, max_words=settings.offline_summary_words),
        reporter=OfflineCommunityReporter(resources, language=language),
        refiner=OfflineGraphRefiner(
            min_entity_chunks=settings.offline_min_entity_chunks,
            min_cooccurrences=settings.offline_min_cooccurrences,
        ),
    )
