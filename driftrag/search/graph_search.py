"""The bounded one-hop graph search contract: read-only, one knowledge base, no model call.

Entities whose name contains the query (case-sensitive) are the seeds: exact match first, then shorter
names, then alphabetical, at most `max_seeds`. Each seed brings its relationships (both directions) to
its neighbours, as (seed, relationship) rows — a seed without relationships is one row of its own — and
rows are kept in seed-rank order up to `max_rows`, so the best seeds' neighbourhoods survive a cut.
Only chunks that exist and are enabled count as sources: an entity or relationship left without any
is not returned. Every response says what was cut, and by how much, in `truncation`; the totals are
exact up to a counting cap (`graph_search_count_cap`) and flagged as lower bounds beyond it.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from driftrag.collector import collector_paused
from driftrag.errors import InvalidQueryError
from driftrag.models.identifiers import validate_kb_id
from driftrag.models.search import OneHopCounts, OneHopEntity, OneHopPart, OneHopRelationship
from driftrag.models.storage import GraphSearchStorage
from driftrag.settings import Settings

log = logging.getLogger(__name__)

MAX_QUERY_CHARS = 16384
# Hard ceilings on what a caller may ask for, so a request cannot turn into an unbounded read.
MAX_SEEDS_LIMIT = 10_000
MAX_ROWS_LIMIT = 100_000


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GraphSearchRequest(_Model):
    kb: str
    query: str = Field(max_length=MAX_QUERY_CHARS, description="Case-sensitive substring of entity names.")
    max_seeds: int | None = Field(default=None, ge=1, le=MAX_SEEDS_LIMIT)
    max_rows: int | None = Field(default=None, ge=1, le=MAX_ROWS_LIMIT)

    @field_validator("kb")
    @classmethod
    def _valid_kb(cls, kb: str) -> str:
        return validate_kb_id(kb)

    @field_validator("query")
    @classmethod
    def _not_blank(cls, query: str) -> str:
        # Matched as given (a leading space can be meant), but a blank query would match everything.
        if not query.strip():
            raise ValueError("the query must contain at least one non-whitespace character")
        return query


_SOURCE_IDS = (
    "Only chunks that exist and are enabled, in stored order, at most `graph_search_max_source_ids` (10 by "
    "default); a longer list is cut and listed in `truncation.fields` with the number of ids stored."
)


class GraphSearchEntity(_Model):
    id: str
    name: str
    type: str | None
    description: str
    attributes: list[str] = Field(description="The entity's descriptions, one per extraction.")
    source_chunk_ids: list[str] = Field(description=_SOURCE_IDS)
    is_seed: bool
    seed_rank: int | None = Field(description="1 = best-ranked seed; None for neighbours.")
    match: Literal["exact", "substring", "neighbour"]


class GraphSearchRelationship(_Model):
    id: str
    source_id: str
    source_name: str
    target_id: str
    target_name: str
    type: str | None
    description: str
    weight: float
    source_chunk_ids: list[str] = Field(description=_SOURCE_IDS)


class TruncatedField(_Model):
    owner_id: str = Field(description="Id of the entity or relationship the field belongs to.")
    field: str = Field(description="`description`, `attributes`, `attributes[i]` or `source_chunk_ids`.")
    original_length: int = Field(description="Characters of a text, items of a list.")
    returned_length: int


class Truncation(_Model):
    results_truncated: bool = Field(description="Rows were cut at max_rows.")
    rows_returned: int = Field(description="(seed, relationship) rows returned; a seed alone counts one.")
    rows_total: int = Field(
        description=(
            "Rows of the seeds within max_seeds, before the max_rows cut; exact up to the counting cap "
            "(`graph_search_count_cap`, or max_rows if larger), else the cap (see rows_total_is_lower_bound)."
        )
    )
    rows_total_is_lower_bound: bool = Field(
        description="rows_total reached the counting cap: there are at least that many rows, maybe more."
    )
    candidates_truncated: bool = Field(description="Fewer seeds returned than entities matched.")
    candidates_matched: int = Field(
        description=(
            "Entities with a valid source whose name contains the query; exact up to the counting cap "
            "(`graph_search_count_cap`, or max_seeds if larger), else the cap "
            "(see candidates_matched_is_lower_bound)."
        )
    )
    candidates_matched_is_lower_bound: bool = Field(
        description="candidates_matched reached the counting cap: at least that many entities match, maybe more."
    )
    candidates_returned: int = Field(description="Seeds in `entities` (cut by max_seeds, then by max_rows).")
    fields_truncated: bool
    fields: list[TruncatedField] = Field(default_factory=list)


class GraphSearchResponse(_Model):
    kb: str
    query: str
    entities: list[GraphSearchEntity] = Field(description="Seeds in rank order, then neighbours.")
    relationships: list[GraphSearchRelationship] = Field(description="Each relationship once.")
    truncation: Truncation
    stale: bool = Field(
        default=False,
        description="The kb is half-built (a killed run, `ingest --skip-communities`): chunks changed since its "
        "graph was last rebuilt, so this answer may miss what they hold until `driftrag communities` runs.",
    )


class FieldCutter:
    """Cuts long texts and lists to the configured bounds and records each cut."""

    def __init__(self, max_chars: int, max_items: int, max_sources: int | None = None) -> None:
        self.max_chars = max_chars
        self.max_items = max_items
        self.max_sources = max_items if max_sources is None else max_sources
        # `TruncatedField`s as plain dicts: the response validates them with the rest (a hub's answer
        # records about a thousand cuts, and a model per cut was a tenth of its Python time).
        self.fields: list[dict[str, Any]] = []

    def _record(self, owner_id: str, field: str, original: int, returned: int) -> None:
        self.fields.append(
            {"owner_id": owner_id, "field": field, "original_length": original, "returned_length": returned}
        )

    def text(self, owner_id: str, field: str, value: str) -> str:
        if len(value) <= self.max_chars:
            return value
        self._record(owner_id, field, len(value), self.max_chars)
        return value[: self.max_chars]

    def items(
        self, owner_id: str, field: str, values: list[str], original: int | None = None, cap: int | None = None
    ) -> list[str]:
        """At most `cap` (default max_items) of `values`; a cut is recorded with `original` (default: len(values))."""
        cap = self.max_items if cap is None else cap
        if len(values) <= cap:
            return values  # the caller's list, uncopied: the response's validation copies it anyway
        self._record(owner_id, field, max(original or 0, len(values)), cap)
        return list(values[:cap])

    def sources(self, owner_id: str, values: list[str], stored: int | None) -> list[str]:
        """A `source_chunk_ids` list: at most max_sources ids; a cut gives the number of ids stored."""
        return self.items(owner_id, "source_chunk_ids", values, stored, cap=self.max_sources)

    def texts(self, owner_id: str, field: str, values: list[str]) -> list[str]:
        """A list of texts: at most max_items items, each at most max_chars characters."""
        limit = self.max_chars
        if len(values) <= self.max_items and all(len(value) <= limit for value in values):
            return values  # nothing to cut, the usual case: no per-item call
        return [self.text(owner_id, f"{field}[{i}]", v) for i, v in enumerate(self.items(owner_id, field, values))]


# Rows are shaped as plain dicts and validated a part at a time by pydantic's core, as the parts arrive:
# building 4,000 nested models one `__init__` at a time cost 80-150 ms on a 2,000-row answer, validating
# them as lists about a third of that, and that now runs while Neo4j projects the next part.
_ENTITIES = TypeAdapter(list[GraphSearchEntity])
_RELATIONSHIPS = TypeAdapter(list[GraphSearchRelationship])


def _entity(row: OneHopEntity, cutter: FieldCutter, *, query: str, seed_rank: int | None) -> dict[str, Any]:
    is_seed = seed_rank is not None
    match = ("exact" if row.name == query else "substring") if is_seed else "neighbour"
    return {
        "id": row.id,
        "name": row.name,
        "type": row.type,
        "description": cutter.text(row.id, "description", row.description),
        "attributes": cutter.texts(row.id, "attributes", row.attributes),
        "source_chunk_ids": cutter.sources(row.id, row.source_chunk_ids, row.stored_chunk_ids),
        "is_seed": is_seed,
        "seed_rank": seed_rank,
        "match": match,
    }


def _relationship(row: OneHopRelationship, cutter: FieldCutter, names: dict[str, str]) -> dict[str, Any]:
    # The endpoints are the row's seed and neighbour, both in `names` already.
    return {
        "id": row.id,
        "source_id": row.source_id,
        "source_name": names[row.source_id],
        "target_id": row.target_id,
        "target_name": names[row.target_id],
        "type": row.type,
        "description": cutter.text(row.id, "description", row.description),
        "weight": row.weight,
        "source_chunk_ids": cutter.sources(row.id, row.source_chunk_ids, row.stored_chunk_ids),
    }


class ResponseBuilder:
    """Shapes the store's parts into the response as they arrive: entities and relationships once each
    (seeds in rank order, then neighbours in the order of their first row), cuts recorded.

    The first part's seeds come before any pair, so a seed that is also another seed's neighbour keeps
    its rank; a relationship's endpoints are its seed and its neighbour, named by the parts already seen.
    """

    def __init__(self, request: GraphSearchRequest, cutter: FieldCutter) -> None:
        self._request = request
        self._cutter = cutter
        self._entity_ids: set[str] = set()
        self._relationship_ids: set[str] = set()
        self._entities: list[GraphSearchEntity] = []
        self._relationships: list[GraphSearchRelationship] = []
        self._names: dict[str, str] = {}
        self._seed_ids: list[str] = []
        self._seeds_with_rows: set[int] = set()
        self._pairs = 0

    def add(self, part: OneHopPart) -> None:
        # Thousands of dicts and lists, no cycle: collections here walk the whole answer and free nothing.
        with collector_paused():
            self._add(part)

    def _add(self, part: OneHopPart) -> None:
        query, cutter, names = self._request.query, self._cutter, self._names
        entities: list[dict[str, Any]] = []
        for seed in part.seeds:
            if seed.id not in self._entity_ids:
                self._entity_ids.add(seed.id)
                entities.append(_entity(seed, cutter, query=query, seed_rank=len(self._seed_ids) + 1))
            self._seed_ids.append(seed.id)
            names[seed.id] = seed.name
        neighbours = {row.id: row for row in part.neighbours}
        names.update((row.id, row.name) for row in part.neighbours)
        relationships: list[dict[str, Any]] = []
        for seed_index, relationship, neighbour_id in part.pairs:
            self._seeds_with_rows.add(seed_index)
            if neighbour_id not in self._entity_ids:
                self._entity_ids.add(neighbour_id)
                entities.append(_entity(neighbours[neighbour_id], cutter, query=query, seed_rank=None))
            if relationship.id not in self._relationship_ids:
                self._relationship_ids.add(relationship.id)
                relationships.append(_relationship(relationship, cutter, names))
        self._pairs += len(part.pairs)
        self._entities += _ENTITIES.validate_python(entities)
        self._relationships += _RELATIONSHIPS.validate_python(relationships)

    def finish(self, counts: OneHopCounts) -> GraphSearchResponse:
        """The response, once every part has been added; `counts` are the store's."""
        # A seed without any pair is one row of its own.
        rows_returned = self._pairs + len(self._seed_ids) - len(self._seeds_with_rows)
        rows_lower_bound = bool(counts.rows_total_is_lower_bound)
        candidates_lower_bound = bool(counts.candidates_matched_is_lower_bound)
        seeds = len(self._seed_ids)
        truncation = Truncation.model_validate(
            {
                # A lower-bound count means more exist than were counted, so more than were returned.
                "results_truncated": rows_lower_bound or rows_returned < counts.rows_total,
                "rows_returned": rows_returned,
                "rows_total": counts.rows_total,
                "rows_total_is_lower_bound": rows_lower_bound,
                "candidates_truncated": candidates_lower_bound or seeds < counts.candidates_matched,
                "candidates_matched": counts.candidates_matched,
                "candidates_matched_is_lower_bound": candidates_lower_bound,
                "candidates_returned": seeds,
                "fields_truncated": bool(self._cutter.fields),
                "fields": self._cutter.fields,
            }
        )
        # Every part is validated already, and kb and query with the request: the whole is not again.
        return GraphSearchResponse.model_construct(
            kb=self._request.kb,
            query=self._request.query,
            entities=self._entities,
            relationships=self._relationships,
            truncation=truncation,
        )


def parse_request(
    kb: str, query: str, *, max_seeds: int | None = None, max_rows: int | None = None
) -> GraphSearchRequest:
    """The validated request, or the project's errors: InvalidIdentifierError, InvalidQueryError."""
    validate_kb_id(kb)
    try:
        return GraphSearchRequest(kb=kb, query=query, max_seeds=max_seeds, max_rows=max_rows)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise InvalidQueryError(f"invalid graph search request: {problems}") from exc


def check_caps(request: GraphSearchRequest, settings: Settings) -> None:
    """The configured caps are ceilings: a caller may lower `max_seeds` / `max_rows`, never raise them."""
    over = [
        f"{name} {asked} is above the server's cap of {cap}"
        for name, asked, cap in (
            ("max_seeds", request.max_seeds, settings.graph_search_max_seeds),
            ("max_rows", request.max_rows, settings.graph_search_max_rows),
        )
        if asked is not None and asked > cap
    ]
    if over:
        raise InvalidQueryError(f"invalid graph search request: {'; '.join(over)} (a request may only lower the caps)")


async def graph_search(
    store: GraphSearchStorage,
    settings: Settings,
    kb: str,
    query: str,
    *,
    max_seeds: int | None = None,
    max_rows: int | None = None,
) -> GraphSearchResponse:
    """Run the bounded one-hop graph search on one knowledge base.

    Before any query: InvalidIdentifierError for a bad kb id, InvalidQueryError for a blank or too long
    query or caps out of range or above the server's settings. Then KnowledgeBaseNotFoundError (its
    subclass KnowledgeBaseDeletingError for a kb being deleted, also when the delete started during the
    read), GraphDisabledError (a BackendUnavailableError) or BackendUnavailableError. A kb without any match gives
    an empty response.
    """
    request = parse_request(kb, query, max_seeds=max_seeds, max_rows=max_rows)
    check_caps(request, settings)
    seeds_cap = request.max_seeds or settings.graph_search_max_seeds
    rows_cap = request.max_rows or settings.graph_search_max_rows
    cutter = FieldCutter(
        settings.graph_search_max_field_chars,
        settings.graph_search_max_list_items,
        settings.graph_search_max_source_ids,
    )
    builder = ResponseBuilder(request, cutter)
    counts = await store.one_hop(
        request.kb,
        request.query,
        max_seeds=seeds_cap,
        max_rows=rows_cap,
        on_part=builder.add,
        max_source_ids=settings.graph_search_max_source_ids,
        count_cap=settings.graph_search_count_cap,
    )
    # Read after the answer: a kb whose delete started meanwhile is refused (KnowledgeBaseDeletingError),
    # never answered from a half-deleted graph.
    status = await store.status(request.kb)
    response = builder.finish(counts).model_copy(update={"stale": status.stale})
    if response.truncation.results_truncated:
        log.warning(
            "graph search in kb %s cut at max_rows=%d: %d of %s%d rows returned",
            request.kb,
            rows_cap,
            response.truncation.rows_returned,
            "at least " if response.truncation.rows_total_is_lower_bound else "",
            response.truncation.rows_total,
        )
    return response
