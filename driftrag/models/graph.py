"""Typed boundaries of the ingestion stages.

Every model forbids extra fields so a misspelt key fails loudly instead of being dropped. Ids are
derived from content hashes (see the helpers below) so re-ingesting the same text yields the same ids.
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.json_schema import SkipJsonSchema

from driftrag.models.bounds import Cap

# Re-exported: the extraction config is imported from here by every stage.
from driftrag.models.extract_config import ExampleNode as ExampleNode
from driftrag.models.extract_config import ExampleRelation as ExampleRelation
from driftrag.models.extract_config import ExtractConfig as ExtractConfig
from driftrag.wording import plural

# The only shape a relationship or entity type may take once normalised; it is stored as data, never
# spliced into a query, but keeping it tame makes it safe to display and to group by.
TYPE_PATTERN = r"^[A-Z][A-Z0-9_]{0,63}$"
GENERIC_RELATIONSHIP_TYPE = "RELATED_TO"
UNKNOWN_ENTITY_TYPE = "UNKNOWN"
# The closed list of entity types the extraction prompt asks for (in English, whatever the text's language).
ENTITY_TYPES = ("PERSON", "ORGANIZATION", "LOCATION", "EVENT", "OBJECT", "CONCEPT")
OTHER_ENTITY_TYPE = "OTHER"

TypeName = Annotated[str, Field(pattern=TYPE_PATTERN)]
# Bounds of the model's answers (`driftrag.providers.structured`): what a useful answer needs, so that a
# constrained answer ends well before its output cap; a longer value is cut, not refused. Entities (and,
# separately, relationships) per chunk: a model listing every noun of a passage adds noise, not knowledge.
MAX_ITEMS_PER_CHUNK = 25
# A short passage gets fewer: about one item per TOKENS_PER_ITEM tokens, never under MIN_ITEMS_PER_CHUNK
# (`extraction_payload`). A small model fills every slot its schema leaves open, with invented or
# repeated items, so the bound must follow the passage, not the longest one.
MIN_ITEMS_PER_CHUNK = 5
TOKENS_PER_ITEM = 25
MAX_NAME_CHARS = 100
# One or two sentences for an entity, one for a relationship: a small model loops one phrase to the bound.
MAX_DESCRIPTION_CHARS = 200
MAX_RELATIONSHIP_DESCRIPTION_CHARS = 150
MAX_FINDINGS = 5
MAX_REPORT_CITATIONS = 30


def stable_hash(*parts: str, length: int = 20) -> str:
    """Hex digest of the parts joined by a separator that cannot occur in normal text."""
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()
    return digest[:length]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --- documents and chunks --------------------------------------------------------------------------


class PageSpan(_Model):
    """Where one page's text lies in its document's text (PDF input): characters [start_char, end_char)."""

    page: int = Field(ge=1, description="1-based page number in the file.")
    start_char: int = Field(ge=0)
    end_char: int = Field(ge=0)
    ocr: bool = Field(default=False, description="The page had no text layer: its text was read by OCR.")


SectionKind = Literal["chapter", "heading"]


class SectionSpan(_Model):
    """Where one section's text lies in its document's text: an EPUB chapter (a spine item) or the text
    under a DOCX heading; characters [start_char, end_char)."""

    number: int = Field(ge=1, description="EPUB: the chapter's 1-based place in the spine; DOCX: the heading's rank.")
    title: str = Field(default="", description="The chapter's or heading's title (may be empty).")
    start_char: int = Field(ge=0)
    end_char: int = Field(ge=0)


class SourceDocument(_Model):
    id: str = Field(description="`document-` + the first 32 hex digits of content_hash.")
    kb: str
    path: str | None = None
    title: str
    text: str
    content_hash: str = Field(description="sha256 of the normalised text.")
    pages: list[PageSpan] = Field(
        default_factory=list, description="PDF input: the page of each stretch of text (empty for other formats)."
    )
    sections: list[SectionSpan] = Field(
        default_factory=list, description="EPUB chapters or DOCX headings, where their text lies (else empty)."
    )
    section_kind: SectionKind | None = Field(default=None, description="What `sections` are: chapters or headings.")
    warnings: list[str] = Field(
        default_factory=list, description="What loading skipped, e.g. PDF pages without a text layer."
    )


class Chunk(_Model):
    id: str = Field(description="`chunk-` + hash of (document id, index, text).")
    document_id: str
    index: int = Field(ge=0)
    text: str
    n_tokens: int = Field(ge=0)
    start_char: int = Field(ge=0)
    end_char: int = Field(ge=0)
    extractable: bool = True
    skip_reason: str | None = None
    pages: list[int] | None = Field(
        default=None, description="PDF input: the page(s) the chunk's text came from; None for other formats."
    )
    ocr_pages: list[int] | None = Field(default=None, description="Of `pages`, those whose text was read by OCR.")
    sections: list[int] | None = Field(
        default=None, description="EPUB chapter numbers (spine places) or DOCX heading ranks the text lies in."
    )
    section_titles: list[str] | None = Field(default=None, description="The titles of `sections`, in the same order.")
    section_kind: SectionKind | None = Field(default=None, description="`chapter` (EPUB) or `heading` (DOCX).")


# --- per-knowledge-base extraction config: `driftrag.models.extract_config` (re-exported here) ------------


# --- extraction protocol (what the model must answer) ----------------------------------------------


class ExtractedEntity(_Model):
    name: Annotated[str, Cap(MAX_NAME_CHARS)] = Field(min_length=1)
    # The schema offers the closed list; the parser still maps any other word (`normalise_entity_type`).
    type: Annotated[TypeName, Cap(64)] = Field(
        default=UNKNOWN_ENTITY_TYPE, json_schema_extra={"enum": [*ENTITY_TYPES, OTHER_ENTITY_TYPE]}
    )
    description: Annotated[str, Cap(MAX_DESCRIPTION_CHARS)] = ""


class ExtractedRelationship(_Model):
    source: Annotated[str, Cap(MAX_NAME_CHARS)] = Field(min_length=1)
    target: Annotated[str, Cap(MAX_NAME_CHARS)] = Field(min_length=1)
    type: Annotated[TypeName, Cap(64)] = GENERIC_RELATIONSHIP_TYPE
    description: Annotated[str, Cap(MAX_RELATIONSHIP_DESCRIPTION_CHARS)] = ""
    strength: int = Field(default=5, ge=1, le=10)
    # Raw type string from the model, kept as data; hidden from the schema shown to the model.
    original_type: SkipJsonSchema[str | None] = None


class ExtractionPayload(_Model):
    """The system-owned JSON protocol of extraction: its schema is sent, its keys described in the prompt."""

    entities: Annotated[list[ExtractedEntity], Cap(MAX_ITEMS_PER_CHUNK)] = Field(default_factory=list)
    relationships: Annotated[list[ExtractedRelationship], Cap(MAX_ITEMS_PER_CHUNK)] = Field(default_factory=list)


def items_for_passage(n_tokens: int) -> int:
    """How many entities (and, apart, relationships) a passage of `n_tokens` tokens may give."""
    return max(MIN_ITEMS_PER_CHUNK, min(MAX_ITEMS_PER_CHUNK, -(-n_tokens // TOKENS_PER_ITEM)))


@functools.cache
def extraction_payload(max_items: int) -> type[ExtractionPayload]:
    """`ExtractionPayload` whose lists are bounded at `max_items` in the schema sent to the model (one
    class per bound, made once). Parsing still accepts up to `MAX_ITEMS_PER_CHUNK`."""
    if max_items == MAX_ITEMS_PER_CHUNK:
        return ExtractionPayload
    return create_model(
        ExtractionPayload.__name__,
        __base__=ExtractionPayload,
        entities=(Annotated[list[ExtractedEntity], Cap(max_items)], Field(default_factory=list)),
        relationships=(Annotated[list[ExtractedRelationship], Cap(max_items)], Field(default_factory=list)),
    )


class ExtractionOutcome(_Model):
    chunk_id: str
    entities: list[ExtractedEntity] = Field(default_factory=list)
    relationships: list[ExtractedRelationship] = Field(default_factory=list)
    failed: bool = False
    error: str | None = None
    raw_output: str | None = None
    attempts: int = Field(default=0, ge=0, description="Model calls spent on the first answer (re-asks included).")
    gleaning_rounds: int = Field(default=0, ge=0)
    skipped_reason: str | None = Field(default=None, description="Why no model call was made, if none was.")
    warnings: list[str] = Field(default_factory=list, description="Items dropped or coerced, with counts.")
    # Failed because the model's answer stayed unusable after its re-asks (not because the call failed):
    # the only failure the offline extractor may fill in (`extraction_offline_fallback`).
    output_unusable: bool = False
    origin: Literal["model", "offline"] = Field(
        default="model", description="offline = the model's answer was unusable; the offline extractor filled it."
    )


# --- merged graph ----------------------------------------------------------------------------------


class MergedEntity(_Model):
    id: str
    name: str = Field(description="Most frequent original form of the name.")
    normalised_name: str
    type: TypeName = UNKNOWN_ENTITY_TYPE
    descriptions: list[str] = Field(default_factory=list)
    source_chunk_ids: list[str] = Field(default_factory=list)
    summary: str | None = None
    summary_failed: bool = Field(
        default=False,
        description="The model failed on the summary: `summary` is its descriptions, asked again next run.",
    )
    aliases: list[str] = Field(
        default_factory=list,
        description="Names merged into this one at ingestion: one-word names and titled forms (ingestion.aliases).",
    )


class MergedRelationship(_Model):
    id: str
    source_id: str
    target_id: str
    type: TypeName = GENERIC_RELATIONSHIP_TYPE
    original_types: list[str] = Field(default_factory=list)
    descriptions: list[str] = Field(default_factory=list)
    weight: float = Field(default=0.0, ge=0)
    source_chunk_ids: list[str] = Field(default_factory=list)
    summary: str | None = None
    summary_failed: bool = Field(
        default=False,
        description="The model failed on the summary: `summary` is its descriptions, asked again next run.",
    )
    pmi: float | None = Field(
        default=None,
        description="log2(n_ab · N / (n_a · n_b)) over the N extracted chunks: n_ab = this relationship's "
        "source chunks, n_a and n_b = its endpoints' (see merge.pmi); None when unknown.",
    )


class MergeResult(_Model):
    entities: list[MergedEntity] = Field(default_factory=list)
    relationships: list[MergedRelationship] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    total_chunks: int = Field(default=0, ge=0, description="N of the PMIs: the extracted chunks merged.")


class StoredEntityKey(_Model):
    """What an incremental update of the entity layer reads of every stored entity."""

    id: str
    normalised_name: str
    name: str
    aliases: list[str] = Field(default_factory=list)


# Pages of the stored graph read for community detection: columns (one list per field) as the driver
# decoded them; pydantic checks each element once, which costs little beside the read.


class EntityChunkPage(_Model):
    ids: list[str]
    nodes: list[int] = Field(description="Internal node ids, matching `RelationshipEdgePage`'s ends.")
    chunk_ids: list[list[str]]


class RelationshipEdgePage(_Model):
    ids: list[str]
    source_nodes: list[int]
    target_nodes: list[int]
    weights: list[float]


# --- communities and reports -----------------------------------------------------------------------


class Community(_Model):
    id: str = Field(description="`community-<level>-<digest of its least member id>` (ingestion.communities).")
    level: int = Field(ge=0, description="0 = coarsest; higher = finer.")
    parent_id: str | None = None
    child_ids: list[str] = Field(default_factory=list)
    entity_ids: list[str] = Field(default_factory=list, description="All members, descendants included.")
    relationship_ids: list[str] = Field(default_factory=list)
    chunk_ids: list[str] = Field(default_factory=list)


class Finding(_Model):
    summary: Annotated[str, Cap(200)]
    explanation: Annotated[str, Cap(500)]


class Citations(_Model):
    entity_ids: list[str] = Field(default_factory=list)
    relationship_ids: list[str] = Field(default_factory=list)
    chunk_ids: list[str] = Field(default_factory=list)


class ReportPayload(_Model):
    """The JSON protocol of community reports: every field required (schema sent, keys described in the prompt).

    The short fields come first: a constrained model writes the keys in this order, and an answer cut at its
    output cap (a small model that fills its summary to the bound) still has its title and rating; the bounds
    keep a whole report, filled to every bound, under 2,000 tokens, the default cap."""

    title: Annotated[str, Cap(200)] = Field(min_length=1)
    rating: float = Field(ge=0, le=10, description="Impact/importance of the community, 0 to 10.")
    rating_explanation: Annotated[str, Cap(300)]
    summary: Annotated[str, Cap(1200)]
    findings: Annotated[list[Finding], Cap(MAX_FINDINGS)]
    citations: Annotated[list[Annotated[str, Cap(64)]], Cap(MAX_REPORT_CITATIONS)] = Field(
        description="Handles (S1, S2…) of the context rows that support the report."
    )


class CommunityReport(_Model):
    community_id: str
    level: int = Field(ge=0)
    title: str
    summary: str
    rating: float = Field(ge=0, le=10)
    rating_explanation: str = ""
    findings: list[Finding] = Field(default_factory=list)
    citations: Citations = Field(default_factory=Citations)
    failed: bool = Field(
        default=False, description="The model gave no usable report after its retries; generated again next run."
    )
    unknown_citations: int = Field(
        default=0, ge=0, description="Citations of handles or ids the report's context did not show (dropped)."
    )


class ChunkExcerpt(_Model):
    chunk_id: str
    text: str


class CommunityContext(_Model):
    """What a reporter receives: the selected material and its rendering, within a token budget."""

    community: Community
    entities: list[MergedEntity] = Field(default_factory=list)
    relationships: list[MergedRelationship] = Field(default_factory=list)
    chunks: list[ChunkExcerpt] = Field(default_factory=list)
    sub_reports: list[CommunityReport] = Field(default_factory=list)
    text: str = Field(description="The rendered context given to the model.")
    n_tokens: int = Field(ge=0)
    truncated: bool = False

    def citable_ids(self) -> set[str]:
        """Only ids rendered in the context may be cited by a report."""
        return {e.id for e in self.entities} | {r.id for r in self.relationships} | {c.chunk_id for c in self.chunks}


class KbCounts(BaseModel):
    model_config = ConfigDict(extra="forbid")

    documents: int = 0
    chunks: int = 0
    entities: int = 0
    relationships: int = 0
    communities: int = 0
    reports: int = 0
    aliases: int = Field(default=0, description="Names merged into another entity (its `aliases`).")
    offline_extracted_chunks: int = Field(
        default=0,
        description="Chunks whose model extraction stayed unusable, extracted by the offline extractor instead.",
    )
    empty_extracted_chunks: int = Field(
        default=0,
        description="Chunks whose model extraction named no entity (0 for a kb ingested offline).",
    )
    failed_chunks: int = Field(
        default=0, description="Chunks whose extraction failed (the model failed after its retries); retried next run."
    )
    placeholder_summaries: int = Field(
        default=0,
        description="Entity and relationship summaries the model failed on (their descriptions stand in); "
        "retried next run.",
    )
    placeholder_reports: int = Field(
        default=0,
        description="Community reports the model failed on (a placeholder, rating 0, stands in); retried next run.",
    )

    def extraction_warning(self) -> str | None:
        """What to say when more than half of the chunks got no usable model extraction (no entity, or the
        offline extractor filled in): the graph is then mostly not the model's. None otherwise."""
        unusable = self.offline_extracted_chunks + self.empty_extracted_chunks
        if not self.chunks or unusable * 2 <= self.chunks:
            return None
        return (
            f"{unusable} of {self.chunks} chunks got no usable model extraction ({self.offline_extracted_chunks} "
            f"extracted offline, {self.empty_extracted_chunks} with no entity): the graph is mostly not the "
            "model's; check the model and its server (docs/models.md)"
        )

    def warnings(self) -> list[str]:
        """What a run or `stats` must not pass over (the extraction warning, when there is one)."""
        warning = self.extraction_warning()
        return [warning] if warning else []

    @property
    def incomplete(self) -> bool:
        """Whether anything the model failed on is still missing (see docs/repair.md)."""
        return bool(self.failed_chunks or self.placeholder_summaries or self.placeholder_reports)

    def describe(self, *, every: bool = False) -> str:
        """`4 documents, 20 chunks, 25 entities, 45 relationships, 6 communities, 6 reports`; with `every`,
        the aliases and the chunks extracted offline too."""
        parts = [
            plural(self.documents, "document"),
            plural(self.chunks, "chunk"),
            plural(self.entities, "entity"),
            plural(self.relationships, "relationship"),
            plural(self.communities, "community"),
            plural(self.reports, "report"),
        ]
        if every:
            parts.append(plural(self.aliases, "alias"))
            parts.append(plural(self.offline_extracted_chunks, "chunk extracted offline", "chunks extracted offline"))
            if self.empty_extracted_chunks:
                parts.append(plural(self.empty_extracted_chunks, "chunk with no entity", "chunks with no entity"))
        return ", ".join(parts)


class KbProfile(BaseModel):
    """How a kb was last ingested: the model mode and the embedder whose vectors it holds."""

    model_config = ConfigDict(extra="forbid")

    mode: str = Field(description="offline (extractive, no model) or openai (a language model).")
    embedder: str = Field(description="The embedding model's name, e.g. multilingual-e5-small.")
    embedding_dimension: int


class KbSummary(BaseModel):
    """One knowledge base in a listing: its counts and how it was ingested."""

    model_config = ConfigDict(extra="forbid")

    kb: str
    graph_enabled: bool
    stale: bool = Field(description="Chunks changed since the last complete rebuild of the derived layers.")
    incomplete: bool = Field(
        default=False,
        description="Something the model failed on is missing (failed chunks, placeholder summaries or reports).",
    )
    deleting: bool = Field(
        default=False,
        description="A delete of the kb started and did not finish (e.g. it was killed); deleting it again "
        "finishes it.",
    )
    mode: str | None = Field(description="The model mode of its last ingestion; None if ingested before it was kept.")
    embedder: str | None = None
    embedding_dimension: int | None = None
    counts: KbCounts


class KbStatus(BaseModel):
    """The switches and state of a kb that readers see (a kb being deleted has none: it is refused)."""

    model_config = ConfigDict(extra="forbid")

    graph_enabled: bool
    stale: bool = Field(
        description="Half-built: chunks changed since the derived layers were last rebuilt completely (a killed "
        "run, `ingest --skip-communities`); `driftrag communities` rebuilds them."
    )


class FailedChunk(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    document_id: str
    index: int
    error: str | None


class StoredState(BaseModel):
    """What a rebuild may reuse: hashes of inputs and the outputs they produced."""

    model_config = ConfigDict(extra="forbid")

    id: str
    input_hash: str | None = None
    output: str | None = None
    embedding_hash: str | None = None
    embedded: bool = False


def pmi(pair_chunks: int, source_chunks: int, target_chunks: int, total_chunks: int) -> float | None:
    """log2 of p(a,b) / (p(a) p(b)), probabilities over chunks; None when a count is zero."""
    if min(pair_chunks, source_chunks, target_chunks, total_chunks) <= 0:
        return None
    return math.log2(pair_chunks * total_chunks / (source_chunks * target_chunks))


def descriptions_hash(descriptions: Sequence[str]) -> str:
    """A digest of an entity's or relationship's descriptions: the input of its stored summary."""
    return stable_hash(*descriptions, length=32)


def community_structure_hash(community: Community) -> str:
    """A digest of everything a community is besides its report: equal digests, equal nodes."""
    return stable_hash(community.model_dump_json(), length=32)
