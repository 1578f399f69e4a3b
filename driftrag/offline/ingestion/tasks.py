"""The offline extractive implementations of the ingestion tasks, configured from settings."""

from __future__ import annotations

from driftrag.ingestion.deps import IngestionTasks
from driftrag.offline.ingestion.extractor import OfflineGraphExtractor
from driftrag.offline.ingestion.refine import OfflineGraphRefiner
from driftrag.offline.ingestion.reports import OfflineCommunityReporter
from driftrag.offline.ingestion.summaries import OfflineDescriptionSummarizer
from driftrag.offline.nlp import LanguageResources
from driftrag.offline.scripts import check_document
from driftrag.settings import Settings


def offline_ingestion_tasks(settings: Settings, resources: LanguageResources | None = None) -> IngestionTasks:
    """Extractor, summarizer, reporter, refiner and document check that need no model API (and do no
    I/O until used)."""

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
        document_check=check_document,
    )
