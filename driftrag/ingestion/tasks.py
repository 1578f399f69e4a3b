"""Task interfaces of ingestion, so the LLM and the offline extractive implementations interchange."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from driftrag.models.graph import (
    Chunk,
    CommunityContext,
    CommunityReport,
    ExtractConfig,
    ExtractionOutcome,
    MergeResult,
)


@runtime_checkable
class GraphExtractor(Protocol):
    async def extract(self, chunk: Chunk, config: ExtractConfig) -> ExtractionOutcome:
        """Entities and relationships of one chunk, or a failed outcome carrying reason and raw output."""
        ...


@runtime_checkable
class DescriptionSummarizer(Protocol):
    async def summarize(self, name: str, descriptions: list[str]) -> str:
        """One description from several; callers only call it with >= 2 distinct descriptions. A
        `ModelError` (the model failed after its retries) leaves a marked placeholder (`summarize_all`)."""
        ...


@runtime_checkable
class CommunityReporter(Protocol):
    async def report(self, community: CommunityContext) -> CommunityReport:
        """The report of one community, citing only ids present in its context."""
        ...


@runtime_checkable
class GraphRefiner(Protocol):
    async def refine(self, merged: MergeResult, extracted_chunks: int) -> MergeResult:
        """Corpus-level pass over a fresh merge, before summaries: may drop items and re-weight.

        `extracted_chunks` is the number of chunks whose extraction neither failed nor was skipped
        (the N of the PMI). It must be a pure function of its inputs: reruns merge again and call it again.
        """
        ...
