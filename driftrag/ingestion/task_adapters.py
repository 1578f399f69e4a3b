"""Wrappers around the ingestion tasks that add what a run needs on top of the stage functions.

`extract_all`, `summarize_all` and `generate_reports` own ordering and concurrency; these adapters
implement the same task protocols and add checkpointing, reuse of outputs whose inputs did not
change, and progress events.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from driftrag.ingestion.requests import Progress, ProgressCallback
from driftrag.ingestion.tasks import CommunityReporter, DescriptionSummarizer, GraphExtractor
from driftrag.models.graph import (
    Chunk,
    CommunityContext,
    CommunityReport,
    ExtractConfig,
    ExtractionOutcome,
    StoredState,
    stable_hash,
)
from driftrag.models.storage import ExtractionStorage


class CheckpointingExtractor:
    """Saves each outcome on its chunk as soon as it exists, so a killed run never repeats it.

    The save is not waited for: the next chunk's model call starts at once, and outcomes that finish
    while a save is under way are saved together in the next one. `flush` waits until every outcome
    is saved (and raises what a save raised).
    """

    def __init__(
        self, extractor: GraphExtractor, graph: ExtractionStorage, kb: str, total: int, progress: ProgressCallback
    ) -> None:
        self._extractor, self._graph, self._kb = extractor, graph, kb
        self._total, self._progress, self._done = total, progress, 0
        self._unsaved: list[ExtractionOutcome] = []
        self._saving: asyncio.Task[None] | None = None

    async def extract(self, chunk: Chunk, config: ExtractConfig) -> ExtractionOutcome:
        outcome = await self._extractor.extract(chunk, config)
        self._unsaved.append(outcome)
        if self._saving is None or self._saving.done():
            self._saving = asyncio.ensure_future(self._save())
        self._done += 1
        await self._progress(Progress(stage="extract", done=self._done, total=self._total, message=chunk.id))
        return outcome

    async def _save(self) -> None:
        while self._unsaved:
            batch, self._unsaved = self._unsaved, []
            await self._graph.save_extractions(self._kb, batch)

    async def flush(self) -> None:
        while self._saving is not None:
            saving = self._saving
            await saving
            if self._saving is saving:
                self._saving = None


class ProgressSummarizer:
    """Reports each finished summary."""

    def __init__(self, summarizer: DescriptionSummarizer, total: int, progress: ProgressCallback) -> None:
        self._summarizer, self._total, self._progress, self._done = summarizer, total, progress, 0

    async def summarize(self, name: str, descriptions: list[str]) -> str:
        summary = await self._summarizer.summarize(name, descriptions)
        self._done += 1
        await self._progress(Progress(stage="summarize", done=self._done, total=self._total, message=name))
        return summary


def context_hash(context: CommunityContext) -> str:
    return stable_hash(context.community.id, context.text, length=32)


class ReusingReporter:
    """Returns the stored report of a community whose rendered context is unchanged."""

    def __init__(
        self,
        reporter: CommunityReporter,
        known: Mapping[str, StoredState],
        total: int,
        progress: ProgressCallback,
    ) -> None:
        self._reporter, self._known, self._total, self._progress = reporter, known, total, progress
        self.context_hashes: dict[str, str] = {}
        self.generated = 0
        self.unknown_citations = 0
        self._done = 0

    async def report(self, context: CommunityContext) -> CommunityReport:
        community_id = context.community.id
        digest = context_hash(context)
        self.context_hashes[community_id] = digest
        state = self._known.get(community_id)
        stored = CommunityReport.model_validate_json(state.output) if state is not None and state.output else None
        if stored is not None and state is not None and state.input_hash == digest and not stored.failed:
            report = stored
        else:
            report = await self._reporter.report(context)
            self.generated += 1
            self.unknown_citations += report.unknown_citations
        self._done += 1
        await self._progress(Progress(stage="reports", done=self._done, total=self._total, message=community_id))
        return report
