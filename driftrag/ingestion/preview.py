"""What extraction would write for one short text, with a given config: nothing is stored.

The text is chunked as an ingestion of this engine would chunk it, each chunk goes to the engine's own
extractor (the model's, with its offline fill-in, or the offline one), and the outcomes are merged by
name as the entity layer merges them. Only the kb-wide steps are left out: merging with the kb's other
chunks, summaries, and the offline mode's corpus-level thresholds (`notes` says so).
"""

from __future__ import annotations

import itertools

from pydantic import BaseModel, ConfigDict, Field

from driftrag.ingestion.chunking import iter_chunks
from driftrag.ingestion.deps import IngestionDeps
from driftrag.ingestion.extraction import extract_all
from driftrag.ingestion.loading import InputError, document_from_text
from driftrag.ingestion.merge import merge_extractions
from driftrag.models.graph import ExtractConfig, ExtractionOutcome

MAX_PREVIEW_CHARS = 5000
_PREVIEW_TITLE = "extraction preview"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PreviewEntity(_Model):
    name: str
    type: str
    descriptions: list[str] = Field(description="One per chunk that describes it.")
    aliases: list[str] = Field(default_factory=list, description="Names merged into this one.")


class PreviewRelationship(_Model):
    source: str = Field(description="The source entity's name.")
    target: str = Field(description="The target entity's name.")
    type: str = Field(description="The stored type: an allowed tag, else RELATED_TO.")
    original_types: list[str] = Field(description="The types as the extractor wrote them.")
    descriptions: list[str]
    weight: float = Field(description="Summed strengths over the chunks.")


class ExtractionPreview(_Model):
    """The entities and relationships extraction would write for a text; nothing was stored."""

    mode: str = Field(description="offline (extractive) or openai / llm (a language model).")
    chunks: int = Field(description="Chunks the text was split into, as ingestion would split it.")
    entities: list[PreviewEntity]
    relationships: list[PreviewRelationship]
    failed_chunks: int = Field(description="Chunks whose extraction failed (the model's calls failed).")
    offline_filled_chunks: int = Field(
        description="Chunks whose model answer was unusable, extracted by the offline extractor instead."
    )
    warnings: list[str] = Field(description="What the extractor dropped, coerced or ignored, once each.")
    notes: list[str] = Field(description="How this differs from what an ingestion of the text would store.")


async def preview_extraction(
    deps: IngestionDeps, kb: str, text: str, config: ExtractConfig, *, mode: str, notes: list[str]
) -> ExtractionPreview:
    """Extract `text` (at most `MAX_PREVIEW_CHARS` characters) with `config`; `InputError` for a blank,
    too long or unextractable text. The config's `enabled` is not consulted: a preview always extracts."""
    if len(text) > MAX_PREVIEW_CHARS:
        raise InputError(f"the preview text has {len(text)} characters; at most {MAX_PREVIEW_CHARS}")
    document = document_from_text(text, kb, _PREVIEW_TITLE)
    if deps.tasks.document_check is not None:
        deps.tasks.document_check(document)
    size, overlap = deps.chunking()
    on = config.model_copy(update={"enabled": True})
    concurrency = deps.settings.llm_concurrency
    # Cut as they are extracted, `concurrency` at a time (as many as run at once): counted, never all held.
    outcomes: list[ExtractionOutcome] = []
    chunks = iter_chunks(document, chunk_size=size, chunk_overlap=overlap)
    while batch := list(itertools.islice(chunks, concurrency)):
        outcomes += await extract_all(batch, on, deps.tasks.extractor, concurrency=concurrency)
    merged = merge_extractions(outcomes)
    names = {entity.id: entity.name for entity in merged.entities}
    notes = list(notes)
    if deps.tasks.refiner is not None:
        notes.append(
            "the kb-wide refinement is not applied: an ingestion keeps only the names and pairs that recur "
            "often enough across the whole kb, so it may store fewer of these"
        )
    skipped = [outcome.skipped_reason for outcome in outcomes if outcome.skipped_reason]
    if skipped:
        notes.append(f"{len(skipped)} chunk(s) not extracted: {', '.join(sorted(set(skipped)))}")
    return ExtractionPreview(
        mode=mode,
        chunks=len(outcomes),
        entities=[
            PreviewEntity(name=e.name, type=e.type, descriptions=e.descriptions, aliases=e.aliases)
            for e in merged.entities
        ],
        relationships=[
            PreviewRelationship(
                source=names[r.source_id],
                target=names[r.target_id],
                type=r.type,
                original_types=r.original_types,
                descriptions=r.descriptions,
                weight=r.weight,
            )
            for r in merged.relationships
        ],
        failed_chunks=sum(1 for outcome in outcomes if outcome.failed),
        offline_filled_chunks=sum(1 for outcome in outcomes if outcome.origin == "offline"),
        warnings=list(dict.fromkeys(w for outcome in outcomes for w in [*outcome.warnings, *_error(outcome.error)])),
        notes=notes,
    )


def _error(error: str | None) -> list[str]:
    return [f"extraction failed: {error}"] if error else []
