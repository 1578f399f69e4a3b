"""What an ingestion run is asked (`IngestRequest`), what it reports while it runs (`Progress`) and what it returns."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from driftrag.ingestion.formats import ExtractedText
from driftrag.ingestion.loading import document_from_text
from driftrag.models.estimate import ExtractionEstimate
from driftrag.models.graph import FailedChunk, KbCounts, PageSpan, SectionKind, SectionSpan, SourceDocument
from driftrag.providers.usage import Usage


class TextInput(BaseModel):
    """A document given as text (notebooks, tests, the HTTP API); `title` identifies it across versions.

    A file read already (an HTTP upload, `from_document`) keeps its pages or sections and the warnings of
    its reader, so that its chunks know where in the file they are."""

    model_config = ConfigDict(extra="forbid")

    title: str = Field(min_length=1)
    text: str
    pages: list[PageSpan] = Field(default_factory=list)
    sections: list[SectionSpan] = Field(default_factory=list)
    section_kind: SectionKind | None = None
    warnings: list[str] = Field(default_factory=list)

    @classmethod
    def from_document(cls, document: SourceDocument) -> TextInput:
        return cls(
            title=document.title,
            text=document.text,
            pages=document.pages,
            sections=document.sections,
            section_kind=document.section_kind,
            warnings=document.warnings,
        )

    def document(self, kb: str) -> SourceDocument:
        extracted = ExtractedText(self.text, self.pages, self.sections, self.section_kind)
        return document_from_text(self.text, kb, self.title, extracted=extracted, warnings=self.warnings)


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


class Progress(BaseModel):
    model_config = ConfigDict(extra="forbid")

    stage: str
    done: int
    total: int
    message: str = ""
    # On the extraction's first event (done 0, before any chunk) and, once a rate is measured, now and then.
    estimate: ExtractionEstimate | None = None


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
    warnings: list[str] = Field(
        default_factory=list,
        description="What loading skipped, e.g. PDF pages without a text layer that OCR could not read.",
    )


class IngestionResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kb: str
    documents: list[DocumentOutcome]
    counts: KbCounts
    extracted_chunks: int = 0
    retried_chunks: int = Field(
        default=0, description="Chunks whose extraction had failed, asked for again by this run (the kb-wide half)."
    )
    failed_chunks: list[FailedChunk] = Field(default_factory=list)
    graph_rebuilt: bool = False
    stale: bool = Field(
        default=False, description="The kb-wide layers lag its chunks (`driftrag communities` brings them up to date)."
    )
    summaries_generated: int = 0
    reports_generated: int = 0
    unknown_report_citations: int = Field(
        default=0, description="Citations in the generated reports to handles their context did not show (dropped)."
    )
    embedded: dict[str, int] = Field(default_factory=dict)
    usage: Usage
    seconds_per_stage: dict[str, float] = Field(default_factory=dict)
    warnings: list[str] = Field(
        default_factory=list,
        description="What the run must not pass over: more than half of the chunks got no usable model "
        "extraction (no entity, or the offline extractor filled in).",
    )


class RepairResult(BaseModel):
    """What `DriftRAG.repair` asked for again and what is still missing afterwards."""

    model_config = ConfigDict(extra="forbid")

    kb: str
    before: KbCounts = Field(description="The kb's counts before: its failed chunks and placeholders were retried.")
    after: KbCounts = Field(description="The kb's counts after: what is still incomplete.")
    stale_before: bool
    stale_after: bool
    failed_chunks: list[FailedChunk] = Field(description="The chunks whose extraction still fails, with the reason.")
    run: IngestionResult = Field(description="The kb-wide run that did it (model calls, reports, summaries).")

    @property
    def complete(self) -> bool:
        """Nothing the model failed on is missing and the kb is not stale."""
        return not (self.after.incomplete or self.stale_after)
