"""Microsoft GraphRAG 2.x/3.x output folders in and out of a kb.

Import reads GraphRAG's parquet tables (documents, text_units, entities, relationships, communities,
community_reports, and the `embeddings.*` snapshots when present) and writes a kb the way ingestion
writes one, through the same store calls, so no query mode can tell it from an ingested kb:

- documents and chunks get driftrag's content ids (`document_from_text`, `chunk_id`);
- each text unit gets an extraction checkpoint listing the entities and relationships GraphRAG found
  in it, and the entity layer is the merge of those checkpoints (`merge_by_name`): driftrag's entity
  and relationship ids, sources (chunk → entity `MENTIONS`), search markers and PMIs. A later
  ingestion into the kb merges its new chunks with these checkpoints as with any other;
- communities keep GraphRAG's hierarchy (level 0 the coarsest, as in driftrag) with driftrag's ids
  (`community_id`: level and least member), their reports become `CommunityReport`s (rank → rating);
- vectors: GraphRAG's own when their dimension is the kb embedder's (`auto`), else computed with the
  kb's embedder, like ingestion's.

Everything is read and checked before anything is written, and a failed write deletes the new kb,
so a bad folder leaves the server as it was; an existing kb is never written to.

Export writes the same tables from a kb with GraphRAG's column names and types (3.x layout).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from driftrag.errors import DriftRAGError
from driftrag.ingestion.chunking import chunk_id
from driftrag.ingestion.communities import community_id, finest_community_by_entity
from driftrag.ingestion.deps import IngestionDeps
from driftrag.ingestion.embedding import community_text, embed_changed
from driftrag.ingestion.indexing import embed_chunks, embed_entities
from driftrag.ingestion.loading import InputError, document_from_text
from driftrag.ingestion.merge import entity_id, merge_by_name, normalise_name, relationship_id
from driftrag.ingestion.requests import no_progress
from driftrag.models.graph import (
    GENERIC_RELATIONSHIP_TYPE,
    TYPE_PATTERN,
    UNKNOWN_ENTITY_TYPE,
    Chunk,
    Community,
    CommunityReport,
    ExtractedEntity,
    ExtractedRelationship,
    ExtractionOutcome,
    Finding,
    KbCounts,
    KbProfile,
    MergeResult,
    SourceDocument,
    stable_hash,
)
from driftrag.models.identifiers import validate_kb_id
from driftrag.models.interchange import StoredKb
from driftrag.models.vector_spaces import space_for

if TYPE_CHECKING:
    import pyarrow as pa

    from driftrag.facade import DriftRAG

EXTRA_HINT = "pip install 'driftrag[graphrag]'"
TABLES = ("documents", "text_units", "entities", "relationships", "communities", "community_reports")
# GraphRAG 3.x names its embedding snapshots `embeddings.<field>`; 2.x `embeddings.<table>.<column>`.
EMBEDDING_TABLES: dict[str, tuple[str, ...]] = {
    "chunk": ("embeddings.text_unit_text", "embeddings.text_unit.text"),
    "entity": ("embeddings.entity_description", "embeddings.entity.description"),
    "community": ("embeddings.community_full_content", "embeddings.community.full_content"),
}
EmbeddingChoice = Literal["auto", "keep", "compute"]
_TYPE = re.compile(TYPE_PATTERN)

# What a row may hold, checked before anything is written (`check_index`). A title becomes an entity name
# (kept to MAX_NAME_CHARS characters), in range and text indexes whose keys Neo4j caps at a few kB: a
# title over MAX_TITLE_BYTES in UTF-8 is refused, never sent.
MAX_TITLE_BYTES = 4_000
MAX_ID_CHARS = 1_000
MAX_TEXT_CHARS = 50 * 1024 * 1024  # a text field: the JSON texts route's 50 MiB, as DRIFTRAG_MAX_DOCUMENT_CHARS
MAX_LEVEL = 64  # hierarchical Leiden on any graph GraphRAG indexes stays far below
MAX_WEIGHT = 1e12
MAX_RANK = 10.0
MAX_PROBLEMS_SHOWN = 5
Finite = Annotated[float, Field(allow_inf_nan=False)]
Id = Annotated[str, Field(max_length=MAX_ID_CHARS)]
Text = Annotated[str, Field(max_length=MAX_TEXT_CHARS)]


class GraphRAGInputError(InputError):
    """A GraphRAG output folder cannot be imported (missing, a table missing or unreadable, bad rows)."""


class GraphRAGExportError(DriftRAGError):
    """A kb cannot be exported to this folder."""


def _pyarrow() -> tuple[Any, Any]:
    """pyarrow and pyarrow.parquet, or an error naming the extra that installs them."""
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:  # an optional extra: the rest of driftrag runs without it
        raise DriftRAGError(f"reading and writing Microsoft GraphRAG tables needs pyarrow: {EXTRA_HINT}") from None
    return pyarrow, pyarrow.parquet


# --- GraphRAG's rows, as read -------------------------------------------------------------------------


class _Row(BaseModel):
    # GraphRAG adds columns between versions (x/y, period, metadata…): unknown ones are ignored.
    model_config = ConfigDict(extra="ignore")

    @field_validator("*", mode="before")
    @classmethod
    def _arrays_as_lists(cls, value: Any) -> Any:
        return list(value) if isinstance(value, tuple) else value


class GRDocument(_Row):
    id: Id
    title: str = ""
    text: Text
    text_unit_ids: list[Id] = Field(default_factory=list)


class GRTextUnit(_Row):
    id: Id
    human_readable_id: int | None = None
    text: Text
    n_tokens: int | None = Field(default=None, le=2**31)
    document_id: Id | None = None  # 3.x
    document_ids: list[Id] | None = None  # 2.x


class GREntity(_Row):
    id: Id
    title: str = Field(min_length=1)
    type: str | None = Field(default=None, max_length=MAX_ID_CHARS)
    description: Text | None = None
    text_unit_ids: list[Id] = Field(default_factory=list)


class GRRelationship(_Row):
    id: Id
    source: str
    target: str
    description: Text | None = None
    weight: Finite | None = Field(default=None, ge=0, le=MAX_WEIGHT)
    text_unit_ids: list[Id] = Field(default_factory=list)


class GRCommunity(_Row):
    id: Id
    community: int = Field(ge=0, le=2**53)
    level: int = Field(ge=0, le=MAX_LEVEL)
    parent: int | None = Field(default=None, ge=-1, le=2**53)
    children: list[int] = Field(default_factory=list)
    title: str | None = None
    entity_ids: list[Id] = Field(default_factory=list)
    relationship_ids: list[Id] | None = None
    text_unit_ids: list[Id] | None = None


class GRFinding(_Row):
    summary: Text = ""
    explanation: Text = ""


class GRReport(_Row):
    id: Id
    community: int = Field(ge=0, le=2**53)
    level: int = Field(ge=0, le=MAX_LEVEL)
    title: str = ""
    summary: Text = ""
    full_content: Text | None = None
    rank: Finite | None = Field(default=None, ge=0, le=MAX_RANK)
    rating_explanation: Text | None = None
    findings: list[GRFinding] = Field(default_factory=list)


class GRVector(_Row):
    id: Id
    embedding: list[Finite] = Field(min_length=1, max_length=65_536)


class GraphRAGIndex(BaseModel):
    """One GraphRAG output folder, every table checked."""

    model_config = ConfigDict(extra="forbid")

    folder: str
    documents: list[GRDocument]
    text_units: list[GRTextUnit]
    entities: list[GREntity]
    relationships: list[GRRelationship]
    communities: list[GRCommunity]
    community_reports: list[GRReport]
    vectors: dict[str, list[GRVector]] = Field(
        default_factory=dict, description="Per node kind (chunk, entity, community), from the embeddings.* tables."
    )


_REQUIRED_COLUMNS: dict[str, tuple[type[_Row], set[str]]] = {
    "documents": (GRDocument, {"id", "text"}),
    "text_units": (GRTextUnit, {"id", "text"}),
    "entities": (GREntity, {"id", "title"}),
    "relationships": (GRRelationship, {"id", "source", "target"}),
    "communities": (GRCommunity, {"id", "community", "level", "entity_ids"}),
    "community_reports": (GRReport, {"id", "community", "level"}),
}


def find_output_folder(folder: Path) -> Path:
    """The folder holding the tables: `folder` itself or, for a GraphRAG project root, its `output/`."""
    if not folder.exists():
        raise GraphRAGInputError(f"no such folder: {folder}")
    if not folder.is_dir():
        raise GraphRAGInputError(f"not a folder: {folder} (give the GraphRAG output folder)")
    if not (folder / "documents.parquet").exists() and (folder / "output" / "documents.parquet").exists():
        return folder / "output"
    return folder


def _read_table(pq: Any, path: Path) -> list[dict[str, Any]]:
    try:
        return pq.read_table(path).to_pylist()
    except Exception as exc:  # pyarrow's errors (ArrowInvalid, OSError…) for a file that is not parquet
        raise GraphRAGInputError(f"{path.name} is not a readable parquet table: {exc}") from None


def read_output_folder(folder: str | Path) -> GraphRAGIndex:
    """Read and check every table of a GraphRAG output folder; raises GraphRAGInputError naming the
    folder, table, column or row at fault."""
    _, pq = _pyarrow()
    root = find_output_folder(Path(folder))
    missing = [name for name in TABLES if not (root / f"{name}.parquet").is_file()]
    if missing and (root / "create_final_documents.parquet").is_file():
        raise GraphRAGInputError(
            f"{root} holds GraphRAG 1.x or older tables (create_final_*.parquet): index it with GraphRAG 2.x or 3.x"
        )
    if missing:
        raise GraphRAGInputError(
            f"{root} is not a Microsoft GraphRAG output folder: missing "
            + ", ".join(f"{name}.parquet" for name in missing)
        )
    tables: dict[str, list[Any]] = {}
    for name, (model, required) in _REQUIRED_COLUMNS.items():
        rows = _read_table(pq, root / f"{name}.parquet")
        absent = sorted(required - set(rows[0])) if rows else []
        if absent:
            raise GraphRAGInputError(f"{name}.parquet lacks the column(s) {', '.join(absent)}")
        tables[name] = [_row(model, name, number, row) for number, row in enumerate(rows)]
    vectors: dict[str, list[GRVector]] = {}
    for kind, names in EMBEDDING_TABLES.items():
        for name in names:
            if (root / f"{name}.parquet").is_file():
                rows = _read_table(pq, root / f"{name}.parquet")
                vectors[kind] = [_row(GRVector, name, number, row) for number, row in enumerate(rows)]
                break
    if not tables["documents"]:
        raise GraphRAGInputError(f"{root}/documents.parquet has no rows: nothing to import")
    index = GraphRAGIndex(folder=str(root), **tables, vectors=vectors)
    check_index(index)
    return index


def _row(model: type[_Row], table: str, number: int, row: dict[str, Any]) -> Any:
    try:
        return model.model_validate(row)
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(part) for part in problem["loc"])
        message = problem["msg"]
        if problem["type"] == "string_too_long":  # pydantic quotes no input here, but say which limit
            message = f"{message} (the store's limit on this field)"
        raise GraphRAGInputError(f"{table}.parquet row {number}: {where}: {message}; nothing was written") from None


def check_index(index: GraphRAGIndex) -> None:
    """What the row models cannot see alone, across rows and tables, before anything is written: unique
    ids, titles the store can index, communities whose parents form a tree with consistent levels, and
    reports of one community each at its level. `GraphRAGInputError` names table, row and field of the
    first problems found."""
    problems: list[str] = []
    for table, key in (
        ("documents", "id"),
        ("text_units", "id"),
        ("entities", "id"),
        ("relationships", "id"),
        ("communities", "id"),
        ("communities", "community"),
        ("community_reports", "id"),
        ("community_reports", "community"),
    ):
        problems += _duplicates(table, key, [getattr(row, key) for row in getattr(index, table)])
    for table, rows, fields in (
        ("entities", index.entities, ("title",)),
        ("relationships", index.relationships, ("source", "target")),
        ("communities", index.communities, ("title",)),
        ("community_reports", index.community_reports, ("title",)),
        ("documents", index.documents, ("title",)),
    ):
        for number, row in enumerate(rows):
            for name in fields:
                value = getattr(row, name) or ""
                if len(value) > MAX_TITLE_BYTES // 4 and len(value.encode("utf-8")) > MAX_TITLE_BYTES:
                    problems.append(
                        f"{table}.parquet row {number}: {name}: {len(value.encode('utf-8'))} bytes, above the "
                        f"{MAX_TITLE_BYTES} bytes a name or title may have (names are indexed in Neo4j, whose "
                        "index keys are limited)"
                    )
    problems += _community_tree(index.communities)
    level_of = {row.community: row.level for row in index.communities}
    for number, report in enumerate(index.community_reports):
        if report.community in level_of and level_of[report.community] != report.level:
            problems.append(
                f"community_reports.parquet row {number}: level: {report.level}, but community "
                f"{report.community} is at level {level_of[report.community]}"
            )
    if problems:
        shown = "; ".join(problems[:MAX_PROBLEMS_SHOWN])
        more = f"; and {len(problems) - MAX_PROBLEMS_SHOWN} more" if len(problems) > MAX_PROBLEMS_SHOWN else ""
        raise GraphRAGInputError(f"{index.folder}: {shown}{more}; nothing was written")


def _duplicates(table: str, field: str, values: list[Any]) -> list[str]:
    first: dict[Any, int] = {}
    problems = []
    for number, value in enumerate(values):
        if value in first:
            shown = value if isinstance(value, int) else "the id"
            problems.append(f"{table}.parquet row {number}: {field}: {shown} repeats row {first[value]}'s")
        else:
            first[value] = number
    return problems


def _community_tree(rows: list[GRCommunity]) -> list[str]:
    """Every parent a community of the table, one level up; no community its own ancestor; children
    listed only by their parent; a community without a parent at level 0."""
    number_of = {row.community: number for number, row in enumerate(rows)}
    problems = []
    for number, row in enumerate(rows):
        where = f"communities.parquet row {number}"
        parent = row.parent if row.parent is not None and row.parent >= 0 else None
        if parent is None:
            if row.level != 0:
                problems.append(f"{where}: level: {row.level} without a parent (a community without one is level 0)")
        elif parent == row.community:
            problems.append(f"{where}: parent: the community is its own parent")
        elif parent not in number_of:
            problems.append(f"{where}: parent: {parent} is no community of the table")
        elif rows[number_of[parent]].level != row.level - 1:
            problems.append(
                f"{where}: level: {row.level}, but its parent {parent} is at level {rows[number_of[parent]].level} "
                "(a child is one level below its parent)"
            )
        for child in row.children:
            if child not in number_of:
                problems.append(f"{where}: children: {child} is no community of the table")
            elif rows[number_of[child]].parent != row.community:
                problems.append(f"{where}: children: {child} names another parent")
    # A cycle of parents: walk up from each community (at most MAX_LEVEL + 1 steps: a longer walk has
    # broken the levels, said above); a walk that comes back to where it started never reaches a root.
    for number, row in enumerate(rows):
        current = row
        for _ in range(MAX_LEVEL + 1):
            parent = current.parent
            if parent is None or parent < 0 or parent not in number_of or parent == current.community:
                break
            if parent == row.community:
                problems.append(f"communities.parquet row {number}: parent: a cycle of parents through it")
                break
            current = rows[number_of[parent]]
    return problems


# --- GraphRAG → driftrag --------------------------------------------------------------------------------


class ImportPlan(BaseModel):
    """What an import writes, every id already driftrag's."""

    model_config = ConfigDict(extra="forbid")

    documents: list[tuple[SourceDocument, list[Chunk]]]
    outcomes: list[ExtractionOutcome]
    merged: MergeResult
    communities: list[Community]
    reports: dict[str, CommunityReport]
    vectors: dict[str, dict[str, list[float]]] = Field(description="Kind → driftrag id → GraphRAG's vector.")
    warnings: list[str] = Field(default_factory=list)


def _entity_type(value: str | None) -> str:
    """GraphRAG's type as a driftrag type name (upper case, `_` for anything else), else UNKNOWN."""
    name = re.sub(r"[^A-Z0-9_]+", "_", (value or "").strip().upper()).strip("_")[:64]
    return name if _TYPE.fullmatch(name) else UNKNOWN_ENTITY_TYPE


def _display_name(title: str, texts: Iterable[str]) -> str:
    """GraphRAG upper-cases every name; the form its own text units spell it in (most frequent) is
    shown instead, so names read and match (entity search compares names as written) as ingested ones."""
    if title != title.upper():
        return title
    pattern = re.compile(re.escape(title), re.IGNORECASE)
    forms = Counter(match.group(0) for text in texts for match in pattern.finditer(text))
    return forms.most_common(1)[0][0] if forms else title


def plan_import(index: GraphRAGIndex, kb: str) -> ImportPlan:
    """Map the tables to driftrag's models; pure, so every problem shows before anything is written."""
    kb = validate_kb_id(kb)
    warnings: list[str] = []
    units = {unit.id: unit for unit in index.text_units}

    # Documents and chunks: a document's units in the order it lists them, then any others by number.
    documents, chunk_of_unit = [], {}
    listed = {u for d in index.documents for u in d.text_unit_ids}
    unlisted: dict[str, list[GRTextUnit]] = defaultdict(list)  # units only their own row ties to a document
    for unit in index.text_units:
        if unit.id not in listed and _unit_document(unit) is not None:
            unlisted[_unit_document(unit) or ""].append(unit)
    for doc in index.documents:
        try:
            document = document_from_text(doc.text, kb, doc.title or doc.id)
        except InputError as exc:
            raise GraphRAGInputError(f"documents.parquet: {exc}") from None
        own = [u for u in doc.text_unit_ids if u in units and u not in chunk_of_unit]
        own += [u.id for u in sorted(unlisted.get(doc.id, []), key=lambda u: (u.human_readable_id or 0, u.id))]
        chunks = []
        for position, unit_id in enumerate(dict.fromkeys(own)):
            unit = units[unit_id]
            chunk = Chunk(
                id=chunk_id(document.id, position, unit.text),
                document_id=document.id,
                index=position,
                text=unit.text,
                n_tokens=max(unit.n_tokens or 0, 0),
                start_char=0,
                end_char=0,
            )
            chunk_of_unit[unit_id] = chunk.id
            chunks.append(chunk)
        documents.append((document, chunks))
    orphans = len(units) - len(chunk_of_unit)
    if orphans:
        warnings.append(f"{orphans} text units of no listed document left out")

    # One checkpoint per chunk: what GraphRAG extracted from that text unit.
    names = {
        e.id: _display_name(e.title, (units[u].text for u in e.text_unit_ids if u in units)) for e in index.entities
    }
    name_of_title = {e.title: names[e.id] for e in index.entities}
    found_entities: dict[str, list[ExtractedEntity]] = defaultdict(list)
    for entity in index.entities:
        extracted = ExtractedEntity(
            name=names[entity.id], type=_entity_type(entity.type), description=entity.description or ""
        )
        for unit_id in entity.text_unit_ids:
            if unit_id in chunk_of_unit:
                found_entities[chunk_of_unit[unit_id]].append(extracted)
    found_relationships: dict[str, list[ExtractedRelationship]] = defaultdict(list)
    for rel in index.relationships:
        sources = [chunk_of_unit[u] for u in rel.text_unit_ids if u in chunk_of_unit]
        strength = min(10, max(1, round((rel.weight or 1.0) / max(1, len(sources)))))
        extracted_rel = ExtractedRelationship(
            source=name_of_title.get(rel.source, rel.source),
            target=name_of_title.get(rel.target, rel.target),
            type=GENERIC_RELATIONSHIP_TYPE,
            description=rel.description or "",
            strength=strength,
        )
        for chunk in sources:
            found_relationships[chunk].append(extracted_rel)
    outcomes = [
        ExtractionOutcome(
            chunk_id=chunk.id,
            entities=found_entities.get(chunk.id, []),
            relationships=found_relationships.get(chunk.id, []),
            attempts=0,
            skipped_reason=None,
        )
        for _, chunks in documents
        for chunk in chunks
    ]
    merged = merge_by_name(outcomes)
    warnings += merged.warnings

    # GraphRAG's ids → the merged ones; weights are GraphRAG's (summed where two rows merged).
    entity_of = {e.id: entity_id(normalise_name(names[e.id])) for e in index.entities}
    known_entities = {e.id for e in merged.entities}
    relationship_of: dict[str, str] = {}
    weights: dict[str, float] = defaultdict(float)
    for rel in index.relationships:
        source = entity_id(normalise_name(name_of_title.get(rel.source, rel.source)))
        target = entity_id(normalise_name(name_of_title.get(rel.target, rel.target)))
        if source == target:
            continue
        if target < source:  # as merge_by_name orders a generic relationship's ends
            source, target = target, source
        relationship_of[rel.id] = relationship_id(source, target, GENERIC_RELATIONSHIP_TYPE)
        weights[relationship_of[rel.id]] += rel.weight if rel.weight is not None else 1.0
    merged = merged.model_copy(
        update={
            "relationships": [
                r.model_copy(update={"weight": max(0.0, weights.get(r.id, r.weight))}) for r in merged.relationships
            ]
        }
    )
    known_relationships = {r.id for r in merged.relationships}
    folded = len(relationship_of) - len(set(relationship_of.values()))
    if folded:  # GraphRAG keeps A→B and B→A apart; its own graph (networkx, undirected) is one edge
        warnings.append(f"{folded} relationships that join the same two entities as another merged into it")
    unsourced = sum(1 for e in index.entities if entity_of[e.id] not in known_entities)
    if unsourced:
        warnings.append(f"{unsourced} entities without a text unit left out")

    communities, reports, community_of = _plan_communities(
        index, entity_of, known_entities, relationship_of, known_relationships, chunk_of_unit, warnings
    )
    vectors = _plan_vectors(index, chunk_of_unit, entity_of, known_entities, community_of)
    return ImportPlan(
        documents=documents,
        outcomes=outcomes,
        merged=merged,
        communities=communities,
        reports=reports,
        vectors=vectors,
        warnings=warnings,
    )


def _unit_document(unit: GRTextUnit) -> str | None:
    return unit.document_id or (unit.document_ids[0] if unit.document_ids else None)


def _plan_communities(
    index: GraphRAGIndex,
    entity_of: dict[str, str],
    known_entities: set[str],
    relationship_of: dict[str, str],
    known_relationships: set[str],
    chunk_of_unit: dict[str, str],
    warnings: list[str],
) -> tuple[list[Community], dict[str, CommunityReport], dict[int, str]]:
    """GraphRAG's communities with driftrag's ids; its `community` numbers link parents and reports."""
    id_of: dict[int, str] = {}
    members_of: dict[int, list[str]] = {}
    for row in index.communities:
        members = sorted({entity_of[e] for e in row.entity_ids if e in entity_of and entity_of[e] in known_entities})
        if not members:
            continue
        new_id = community_id(row.level, members[0])
        if new_id in id_of.values():  # two communities of a level share no member, unless names merged
            new_id = f"community-{row.level}-{stable_hash(row.id, length=16)}"
        id_of[row.community] = new_id
        members_of[row.community] = members
    skipped = len(index.communities) - len(id_of)
    if skipped:
        warnings.append(f"{skipped} communities without a known member left out")
    communities = []
    for row in index.communities:
        if row.community not in id_of:
            continue
        rel_ids = row.relationship_ids or []
        unit_ids = row.text_unit_ids or []
        communities.append(
            Community(
                id=id_of[row.community],
                level=row.level,
                parent_id=id_of.get(row.parent) if row.parent is not None and row.parent >= 0 else None,
                child_ids=sorted(id_of[c] for c in row.children if c in id_of),
                entity_ids=members_of[row.community],
                relationship_ids=sorted(
                    {relationship_of[r] for r in rel_ids if relationship_of.get(r) in known_relationships}
                ),
                chunk_ids=sorted({chunk_of_unit[u] for u in unit_ids if u in chunk_of_unit}),
            )
        )
    communities.sort(key=lambda c: (c.level, c.id))
    reports = {}
    for report in index.community_reports:
        if report.community not in id_of:
            continue
        community = id_of[report.community]
        reports[community] = CommunityReport(
            community_id=community,
            level=report.level,
            title=report.title or f"Community {report.community}",
            summary=report.summary,
            rating=min(10.0, max(0.0, report.rank if report.rank is not None else 0.0)),
            rating_explanation=report.rating_explanation or "",
            findings=[Finding(summary=f.summary, explanation=f.explanation) for f in report.findings],
        )
    return communities, reports, id_of


def _plan_vectors(
    index: GraphRAGIndex,
    chunk_of_unit: dict[str, str],
    entity_of: dict[str, str],
    known_entities: set[str],
    community_of: dict[int, str],
) -> dict[str, dict[str, list[float]]]:
    """GraphRAG's vectors by driftrag id (an entity merged from several keeps the first's)."""
    # 3.x keys community vectors by report id; an id of the communities table is taken too.
    number_of = {r.id: r.community for r in index.community_reports} | {c.id: c.community for c in index.communities}
    keys: dict[str, Callable[[str], str | None]] = {
        "chunk": chunk_of_unit.get,
        "entity": lambda i: entity_of[i] if entity_of.get(i) in known_entities else None,
        "community": lambda i: community_of.get(number_of[i]) if i in number_of else None,
    }
    vectors: dict[str, dict[str, list[float]]] = {}
    for kind, rows in index.vectors.items():
        kept: dict[str, list[float]] = {}
        for row in rows:
            key = keys[kind](row.id)
            if key is not None:
                kept.setdefault(key, row.embedding)
        vectors[kind] = kept
    return vectors


# --- writing an import ------------------------------------------------------------------------------


class VectorCounts(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kept: int = Field(default=0, description="GraphRAG's own vectors stored as they were.")
    computed: int = Field(default=0, description="Made with the kb's embedder.")


class GraphRAGImportResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kb: str
    folder: str
    tables: dict[str, int] = Field(description="Rows read per GraphRAG table.")
    counts: KbCounts
    vectors: dict[str, VectorCounts] = Field(description="Per node kind: chunk, entity, community.")
    embedder: str
    warnings: list[str] = Field(default_factory=list)

    def render(self) -> str:
        read = ", ".join(f"{n} {name}" for name, n in self.tables.items())
        c = self.counts
        vectors = "; ".join(f"{kind} {v.kept} kept, {v.computed} computed" for kind, v in self.vectors.items())
        lines = [
            f"imported {self.folder} into {self.kb}",
            f"read: {read}",
            f"kb: {c.describe()}",
            f"vectors ({self.embedder}): {vectors}",
        ]
        return "\n".join(lines + [f"warning: {w}" for w in self.warnings])


class GraphRAGImportError(DriftRAGError):
    """An import stopped while writing; the new kb was removed."""


def _vectors_to_keep(
    plan: ImportPlan, choice: EmbeddingChoice, dimension: int, embedder: str, warnings: list[str]
) -> dict[str, dict[str, list[float]]]:
    if choice == "compute":
        return {}
    keep = {}
    for kind in EMBEDDING_TABLES:
        rows = plan.vectors.get(kind, {})
        sizes = sorted({len(v) for v in rows.values()})
        if rows and sizes == [dimension]:
            keep[kind] = rows
            continue
        if not rows:
            problem = f"the folder holds no {kind} vectors ({EMBEDDING_TABLES[kind][0]}.parquet)"
        else:
            shown = "/".join(str(s) for s in sizes)
            problem = f"GraphRAG's {kind} vectors have {shown} dimensions, the embedder {embedder} {dimension}"
        if choice == "keep":
            raise GraphRAGInputError(f"{problem}: import with --embeddings compute (or auto)")
        warnings.append(f"{problem}: {kind} vectors computed with {embedder}")
    return keep


def _entity_text(name: str, summary: str | None, descriptions: Sequence[str]) -> str:
    """What an entity's vector is made from: `indexing.embed_entities`' text, so kept vectors get the
    hash that bookkeeping compares (a later rebuild keeps them while the text is unchanged)."""
    return f"{name}: {summary or (descriptions[0] if descriptions else '')}"


async def import_graphrag(
    rag: DriftRAG,
    kb: str,
    folder: str | Path,
    *,
    embeddings: EmbeddingChoice = "auto",
    on_lock_wait: Callable[[str], None] | None = None,
) -> GraphRAGImportResult:
    """Import a GraphRAG output folder as the new kb `kb` (refused if it exists). `embeddings`:
    `auto` keeps GraphRAG's vectors whose dimension is the embedder's and computes the rest, `keep`
    requires them, `compute` makes all with the kb's embedder. Kept vectors must come from the model
    the kb's embedder runs: queries are embedded with it."""

    kb = validate_kb_id(kb)
    index = await asyncio.to_thread(read_output_folder, folder)
    plan = await asyncio.to_thread(plan_import, index, kb)
    await rag.connect()
    deps = rag.ingestion_deps()
    warnings = list(plan.warnings)
    embedder = deps.profile.embedder
    keep = _vectors_to_keep(plan, embeddings, deps.embedding_dimension, embedder, warnings)
    store = rag.stores.database
    failed: BaseException | None = None
    async with rag.kb_lock(kb, on_wait=on_lock_wait):
        if await rag.stores.interchange.kb_exists(kb):
            raise GraphRAGInputError(
                f"knowledge base {kb!r} exists: import into a new kb id, or delete it first "
                f"(driftrag delete --kb {kb} --yes); nothing was written"
            )
        try:
            vectors = await _write_plan(deps, kb, plan, keep)
        except BaseException as exc:
            failed = exc
            space = await asyncio.shield(store.vector_space(kb))
            await asyncio.shield(deps.kbs.delete_kb(kb))  # all or nothing: the kb did not exist before
    if failed is not None:
        # What `DriftRAG.delete_kb` removes after the nodes, once the lock is released: the lock node,
        # and the embedder's indexes if this kb was the first to claim them.
        await asyncio.shield(rag.stores.locks.discard(kb))
        await asyncio.shield(store.drop_unused_vector_space(space))
        raise failed
    return GraphRAGImportResult(
        kb=kb,
        folder=index.folder,
        tables={name: len(getattr(index, name)) for name in TABLES},
        counts=await deps.kbs.counts(kb),
        vectors=vectors,
        embedder=f"{embedder}, {deps.embedding_dimension} dimensions",
        warnings=warnings,
    )


async def _write_plan(
    deps: IngestionDeps, kb: str, plan: ImportPlan, keep: dict[str, dict[str, list[float]]]
) -> dict[str, VectorCounts]:
    """Ingestion's own writes, in its order: chunks, checkpoints, the entity layer, communities with
    their reports and memberships, then vectors; the kb is stale until the last is stored."""
    # As the ingestion workflow starts: the schema, then the embedder's vector space claimed for the kb.
    await deps.stores.database.ensure_schema()
    await deps.stores.database.claim_vector_space(kb, space_for(deps.profile.embedder, deps.embedding_dimension))
    await deps.kbs.mark_stale(kb, True)
    for document, chunks in plan.documents:
        await deps.documents.upsert_document(document, chunks)
    await deps.extractions.save_extractions(kb, plan.outcomes)
    merged = plan.merged
    await deps.entity_layer.replace_entity_layer(
        kb, merged.entities, merged.relationships, total_chunks=merged.total_chunks
    )
    await deps.communities.replace_communities(
        kb, plan.communities, plan.reports, {}, finest_community_by_entity(plan.communities)
    )
    entity_texts = {e.id: _entity_text(e.name, e.summary, e.descriptions) for e in merged.entities}
    community_texts = {cid: community_text(report) for cid, report in plan.reports.items()}
    texts = {"entity": entity_texts, "community": community_texts}
    for kind, rows in keep.items():
        kept = [(i, vector) for i, vector in sorted(rows.items()) if kind == "chunk" or i in texts[kind]]
        hashes = {node_id: stable_hash(texts[kind][node_id], length=32) for node_id, _ in kept if kind != "chunk"}
        await deps.documents.set_embeddings(kind, kb, kept, hashes)
        keep[kind] = dict(kept)
    chunk = await embed_chunks(deps, kb, no_progress)
    entity = await embed_entities(deps, kb, merged, no_progress)
    community = await embed_changed(
        deps, kb, "community", community_texts, await deps.communities.community_state(kb), no_progress
    )
    failed = chunk[1] + entity[1] + community[1]
    if failed:
        raise GraphRAGImportError(
            f"{failed} vectors could not be made (the embedder failed after its retries); nothing was imported"
        )
    await deps.kbs.set_profile(
        kb, KbProfile(mode="graphrag", embedder=deps.profile.embedder, embedding_dimension=deps.embedding_dimension)
    )
    await deps.kbs.mark_stale(kb, False)
    return {
        kind: VectorCounts(kept=len(keep.get(kind, {})), computed=done[0])
        for kind, done in (("chunk", chunk), ("entity", entity), ("community", community))
    }


# --- export -----------------------------------------------------------------------------------------


class GraphRAGExportResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kb: str
    folder: str
    tables: dict[str, int] = Field(description="Rows written per table (file `<table>.parquet`).")

    def render(self) -> str:
        written = ", ".join(f"{n} {name}" for name, n in self.tables.items())
        return f"exported {self.kb} to {self.folder}\nwrote: {written}"


def _schemas(pa: Any) -> dict[str, pa.Schema]:
    """GraphRAG 3.x's column names and types (as its own tables hold them)."""
    s, i, f, strings = pa.large_string(), pa.int64(), pa.float64(), pa.list_(pa.string())
    finding = pa.struct([("explanation", pa.string()), ("summary", pa.string())])
    hierarchy = [("community", i), ("level", i), ("parent", i), ("children", pa.list_(i))]
    vector = pa.schema([("id", s), ("embedding", pa.list_(f))])
    return {
        "documents": pa.schema(
            [
                ("id", s),
                ("human_readable_id", i),
                ("title", s),
                ("text", s),
                ("text_unit_ids", strings),
                ("creation_date", s),
                ("raw_data", pa.null()),
            ]
        ),
        "text_units": pa.schema(
            [
                ("id", s),
                ("human_readable_id", i),
                ("text", s),
                ("n_tokens", i),
                ("document_id", s),
                ("entity_ids", strings),
                ("relationship_ids", strings),
                ("covariate_ids", strings),
            ]
        ),
        "entities": pa.schema(
            [
                ("id", s),
                ("human_readable_id", i),
                ("title", s),
                ("type", s),
                ("description", s),
                ("text_unit_ids", strings),
                ("frequency", i),
                ("degree", i),
            ]
        ),
        "relationships": pa.schema(
            [
                ("id", s),
                ("human_readable_id", i),
                ("source", s),
                ("target", s),
                ("description", s),
                ("weight", f),
                ("combined_degree", i),
                ("text_unit_ids", strings),
            ]
        ),
        "communities": pa.schema(
            [
                ("id", s),
                ("human_readable_id", i),
                *hierarchy,
                ("title", s),
                ("entity_ids", strings),
                ("relationship_ids", strings),
                ("text_unit_ids", strings),
                ("period", s),
                ("size", i),
            ]
        ),
        "community_reports": pa.schema(
            [
                ("id", s),
                ("human_readable_id", i),
                *hierarchy,
                ("title", s),
                ("summary", s),
                ("full_content", s),
                ("rank", f),
                ("rating_explanation", s),
                ("findings", pa.list_(finding)),
                ("full_content_json", s),
                ("period", s),
                ("size", i),
            ]
        ),
        "embeddings.text_unit_text": vector,
        "embeddings.entity_description": vector,
        "embeddings.community_full_content": vector,
    }


def _overlap(before: str, after: str) -> int:
    """Length of the longest end of `before` that `after` starts with (chunks overlap by a few tokens);
    ends shorter than 8 characters do not count (a coincidence more often than an overlap)."""
    probe = after[:8]
    if len(probe) < 8:
        return 0
    position = before.find(probe, max(0, len(before) - len(after)))
    while position != -1:
        if after.startswith(before[position:]):
            return len(before) - position
        position = before.find(probe, position + 1)
    return 0


def join_chunks(texts: Sequence[str]) -> str:
    """A document's text from its chunks in order, each overlap kept once (driftrag keeps no document text)."""
    joined = ""
    for text in texts:
        shared = _overlap(joined, text)
        joined += text[shared:] if shared else ("\n" if joined else "") + text
    return joined


def export_rows(stored: StoredKb, *, period: str) -> dict[str, list[dict[str, Any]]]:
    """The kb as GraphRAG's rows: ids are driftrag's; communities are numbered by (level, id)."""
    chunks_of: dict[str, list[Any]] = defaultdict(list)
    for chunk in stored.chunks:
        chunks_of[chunk.document_id].append(chunk)
    entities_of: dict[str, list[str]] = defaultdict(list)
    for entity in stored.entities:
        for chunk_id_ in entity.source_chunk_ids:
            entities_of[chunk_id_].append(entity.id)
    relationships_of: dict[str, list[str]] = defaultdict(list)
    for rel in stored.relationships:
        for chunk_id_ in rel.source_chunk_ids:
            relationships_of[chunk_id_].append(rel.id)
    # GraphRAG links relationships to entities by title, so titles are unique.
    titles: dict[str, str] = {}
    used: set[str] = set()
    for entity in stored.entities:
        title = entity.name if entity.name not in used else f"{entity.name} ({entity.id})"
        titles[entity.id] = title
        used.add(title)
    degree = {e.id: e.degree for e in stored.entities}
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in TABLES}
    for number, doc in enumerate(stored.documents):
        own = chunks_of.get(doc.id, [])
        rows["documents"].append(
            {
                "id": doc.id,
                "human_readable_id": number,
                "title": doc.title,
                "text": join_chunks([c.text for c in own]),
                "text_unit_ids": [c.id for c in own],
                "creation_date": doc.updated_at,
                "raw_data": None,
            }
        )
    for number, chunk in enumerate(stored.chunks):
        rows["text_units"].append(
            {
                "id": chunk.id,
                "human_readable_id": number,
                "text": chunk.text,
                "n_tokens": chunk.n_tokens,
                "document_id": chunk.document_id,
                "entity_ids": entities_of.get(chunk.id, []),
                "relationship_ids": relationships_of.get(chunk.id, []),
                "covariate_ids": [],
            }
        )
    for number, entity in enumerate(stored.entities):
        rows["entities"].append(
            {
                "id": entity.id,
                "human_readable_id": number,
                "title": titles[entity.id],
                "type": entity.type,
                "description": entity.description,
                "text_unit_ids": entity.source_chunk_ids,
                "frequency": len(entity.source_chunk_ids),
                "degree": entity.degree,
            }
        )
    for number, rel in enumerate(stored.relationships):
        rows["relationships"].append(
            {
                "id": rel.id,
                "human_readable_id": number,
                "source": titles.get(rel.source_id, rel.source_id),
                "target": titles.get(rel.target_id, rel.target_id),
                "description": rel.description,
                "weight": rel.weight,
                "combined_degree": degree.get(rel.source_id, 0) + degree.get(rel.target_id, 0),
                "text_unit_ids": rel.source_chunk_ids,
            }
        )
    number_of = {c.id: n for n, c in enumerate(stored.communities)}
    for number, community in enumerate(stored.communities):
        hierarchy = {
            "community": number,
            "level": community.level,
            "parent": number_of.get(community.parent_id, -1) if community.parent_id else -1,
            "children": sorted(number_of[c] for c in community.child_ids if c in number_of),
        }
        rows["communities"].append(
            {
                "id": community.id,
                "human_readable_id": number,
                **hierarchy,
                "title": f"Community {number}",
                "entity_ids": community.entity_ids,
                "relationship_ids": community.relationship_ids,
                "text_unit_ids": community.chunk_ids,
                "period": period,
                "size": len(community.entity_ids),
            }
        )
        if community.full_content is None:
            continue
        findings = [f.model_dump() for f in community.findings]
        report = {
            "title": community.title or "",
            "summary": community.summary or "",
            "findings": findings,
            "rating": community.rating,
            "rating_explanation": community.rating_explanation or "",
        }
        rows["community_reports"].append(
            {
                "id": community.id,
                "human_readable_id": number,
                **hierarchy,
                "title": report["title"],
                "summary": report["summary"],
                "full_content": community.full_content,
                "rank": community.rating,
                "rating_explanation": report["rating_explanation"],
                "findings": findings,
                "full_content_json": json.dumps(report, indent=4),
                "period": period,
                "size": len(community.entity_ids),
            }
        )
    vectors = {
        "embeddings.text_unit_text": [(c.id, c.embedding) for c in stored.chunks],
        "embeddings.entity_description": [(e.id, e.embedding) for e in stored.entities],
        "embeddings.community_full_content": [
            (c.id, c.embedding) for c in stored.communities if c.full_content is not None
        ],
    }
    for name, pairs in vectors.items():
        present = [{"id": node_id, "embedding": vector} for node_id, vector in pairs if vector is not None]
        if present:
            rows[name] = present
    return rows


def _export_target(out: Path, overwrite: bool) -> list[str]:
    """The parquet files already in `out` (to replace), after refusing a file or, without `overwrite`,
    a folder that holds tables."""
    if out.exists() and not out.is_dir():
        raise GraphRAGExportError(f"{out} is a file, not a folder")
    present = sorted(p.name for p in out.glob("*.parquet")) if out.is_dir() else []
    if present and not overwrite:
        raise GraphRAGExportError(f"{out} already holds {', '.join(present)}: pass --overwrite to replace them")
    return present


async def export_graphrag(
    rag: DriftRAG, kb: str, folder: str | Path, *, vectors: bool = True, overwrite: bool = False
) -> GraphRAGExportResult:
    """Write the kb's tables to `folder` as GraphRAG names them (`vectors`: the `embeddings.*` tables
    too). A folder already holding parquet tables is refused unless `overwrite`."""
    kb = validate_kb_id(kb)
    pa, pq = _pyarrow()
    out = Path(folder)
    present = await asyncio.to_thread(_export_target, out, overwrite)
    await rag.connect()
    await rag.graph_enabled(kb)  # an unknown kb is KnowledgeBaseNotFoundError, not an empty export
    stored = await rag.stores.interchange.read_kb(kb, vectors=vectors)
    rows = export_rows(stored, period=datetime.now(UTC).date().isoformat())
    schemas = _schemas(pa)

    def write() -> None:
        out.mkdir(parents=True, exist_ok=True)
        for name in present:  # an overwrite leaves no table of the previous export behind
            (out / name).unlink()
        for name, table_rows in rows.items():
            table = pa.Table.from_pylist(table_rows, schema=schemas[name])
            partial = out / f".{name}.parquet.partial"
            pq.write_table(table, partial)
            partial.replace(out / f"{name}.parquet")  # a reader never sees half a table

    await asyncio.to_thread(write)
    return GraphRAGExportResult(kb=kb, folder=str(out), tables={name: len(r) for name, r in rows.items()})
