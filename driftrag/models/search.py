"""Search rows: what the store's query-time reads return, and the `Source` every mode shows its answerer.

Every source is identified by the id it carries in the graph (`chunk-…`, `entity-…`,
`relationship-…`, `community-…`), so an answer's citations can be checked against the graph.
"""

from __future__ import annotations

import json
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

SourceKind = Literal["chunk", "entity", "relationship", "community"]


class _Row(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Positioned(_Row):
    """Where a chunk's text lies in its file: pages (PDF), chapters (EPUB) or headings (DOCX)."""

    pages: list[int] | None = Field(
        default=None, description="Chunks of a PDF: the page(s) of the file the text came from."
    )
    ocr_pages: list[int] | None = Field(default=None, description="Of `pages`, those whose text was read by OCR.")
    sections: list[int] | None = Field(
        default=None, description="Chunks of an EPUB (chapter numbers, spine order) or a DOCX (heading ranks)."
    )
    section_titles: list[str] | None = Field(default=None, description="The titles of `sections`, in order.")
    section_kind: Literal["chapter", "heading"] | None = Field(default=None, description="What `sections` are.")

    def positions(self) -> dict[str, Any]:
        """The position fields, to copy onto another positioned row."""
        return {name: getattr(self, name) for name in POSITION_FIELDS}

    def page_label(self) -> str:
        """`p. 3` or `pp. 3-4` (`, OCR` when any was read by OCR) for a PDF chunk; `ch. 2 “Title”` for
        an EPUB chunk; `§ Title` for a DOCX chunk under a heading; else empty."""
        if self.pages:
            first, last = min(self.pages), max(self.pages)
            label = f"p. {first}" if first == last else f"pp. {first}-{last}"
            return f"{label}, OCR" if self.ocr_pages else label
        if not self.sections:
            return ""
        titles = [title for title in self.section_titles or [] if title]
        if self.section_kind == "heading":
            return "§ " + " / ".join(titles) if titles else ""
        first, last = min(self.sections), max(self.sections)
        label = f"ch. {first}" if first == last else f"ch. {first}-{last}"
        return f"{label} \u201c{titles[0]}\u201d" if first == last and titles else label


POSITION_FIELDS = tuple(_Positioned.model_fields)


class Source(_Positioned):
    """One piece of retrieved material, as shown to the answering step."""

    id: str
    kind: SourceKind
    title: str = Field(default="", description="Entity name, community title, or the chunk's document title.")
    text: str
    score: float | None = Field(default=None, description="Retrieval score (similarity, rank weight) if any.")
    origin: str = Field(default="", description="How it was found: vector, entity:<name>, neighbour, community…")
    rating: float | None = Field(default=None, description="Community reports: the report's rating, 0-10.")


class ChunkRow(_Positioned):
    id: str
    title: str = Field(description="The chunk's document title.")
    text: str
    entity_ids: list[str] = Field(default_factory=list, description="Which of the given entities it mentions.")
    best_rank: int = Field(default=0, description="Rank (in the given list) of the best entity it mentions.")


class EntityRow(_Row):
    id: str
    name: str
    type: str = ""
    description: str = ""
    exact: bool = False
    via_rank: int | None = Field(default=None, description="Neighbours: rank of the entity they neighbour.")
    weight: float | None = Field(default=None, description="Neighbours: weight of the strongest relationship.")


class RelationshipRow(_Row):
    id: str
    source_id: str
    source: str
    target_id: str
    target: str
    type: str = ""
    description: str = ""
    weight: float = 0.0


class CommunityRow(_Row):
    id: str
    title: str
    summary: str = ""
    full_content: str
    rating: float | None = None
    level: int = 0
    size: int = 0
    n_entities: int = Field(default=0, description="How many of the given entities it contains.")


def community_source(row: CommunityRow, *, score: float | None = None, origin: str = "") -> Source:
    return Source(
        id=row.id,
        kind="community",
        title=row.title,
        text=row.full_content,
        score=score,
        origin=origin,
        rating=row.rating,
    )


class EntitySurroundings(_Row):
    """What local search reads around its entities (`SearchStore.entity_surroundings`)."""

    chunks: list[ChunkRow] = Field(default_factory=list, description="Enabled chunks mentioning them.")
    communities: list[CommunityRow] = Field(default_factory=list, description="Their reported communities.")
    among: list[RelationshipRow] = Field(default_factory=list, description="Relationships among them.")
    outside: list[RelationshipRow] = Field(default_factory=list, description="Relationships to their neighbours.")


class ReportRow(_Row):
    """A community report as global search reads it: its place in the hierarchy, its provenance chunks and
    how close its stored embedding is to the question."""

    id: str
    title: str
    full_content: str
    rating: float | None = None
    level: int = 0
    size: int = 0
    leaf: bool = Field(description="No sub-community: the finest report of its members at every deeper level.")
    similarity: float | None = Field(default=None, description="Cosine of its embedding to the question's.")
    report: str | None = Field(default=None, description="The report as stored (JSON), with its citations.")

    @property
    def failed(self) -> bool:
        """The model gave no usable report (stored with rating 0 and asked again next ingestion)."""
        return bool(self.report) and bool(json.loads(self.report).get("failed"))

    def source(self) -> Source:
        return Source(
            id=self.id,
            kind="community",
            title=self.title,
            text=self.full_content,
            score=self.similarity,
            origin=f"level {self.level}",
            rating=self.rating,
        )


# The bounded one-hop read (`GraphSearchStorage.one_hop`) hands over tuples, not models: a hub's answer holds
# thousands of rows, which the graph-search response validates as they come.
class OneHopEntity(NamedTuple):
    id: str
    name: str
    type: str | None
    description: str
    attributes: list[str]
    source_chunk_ids: list[str]  # the first valid ones, at most `max_source_ids + 1`
    stored_chunk_ids: int  # the stored list's length


class OneHopRelationship(NamedTuple):
    id: str
    source_id: str
    target_id: str
    type: str | None
    description: str
    weight: float
    source_chunk_ids: list[str]
    stored_chunk_ids: int


class OneHopPart(NamedTuple):
    """One part of a one-hop answer; parts come in order, and together hold every kept row once."""

    seeds: list[OneHopEntity]  # every kept seed, in rank order, in the first part; empty in the others
    pairs: list[tuple[int, OneHopRelationship, str]]  # (seed index, relationship, neighbour id), in row order
    neighbours: list[OneHopEntity]  # the neighbours whose first pair is in this part, each once


class OneHopCounts(NamedTuple):
    candidates_matched: int
    candidates_matched_is_lower_bound: bool
    rows_total: int
    rows_total_is_lower_bound: bool
