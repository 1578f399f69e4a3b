"""Query-time reads: vector searches over chunks, entities and community reports, and the graph reads
behind local and entity search.

Nothing here returns a disabled chunk, an entity no enabled chunk mentions, or a relationship none of
whose source chunks is enabled (see `driftrag.store.cypher.search`). Vector searches filter after the
index lookup (`Neo4jStore.vector_hits`, the one over-fetch loop), widening it until k valid hits are found
or the kb has no more.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal, LiteralString

from driftrag.models.identifiers import validate_kb_id
from driftrag.models.search import (
    POSITION_FIELDS,
    ChunkRow,
    CommunityRow,
    EntityRow,
    EntitySurroundings,
    RelationshipRow,
    ReportRow,
    Source,
    community_source,
)
from driftrag.models.seen_rows import SeenRows
from driftrag.models.vector_spaces import VectorKind
from driftrag.store.cypher import search as cy
from driftrag.store.neo4j_store import Neo4jStore

# The graph reads around given entities read at most this many of one entity's relationships or
# mentioning chunks (the first the store yields), so a hub of tens of thousands costs as much as a
# modest entity. Far more than a context of a few thousand tokens can show of one entity; entities
# below it (every entity of a book-sized kb) are read whole.
READS_PER_ENTITY = 500
# Relationships among the entities: a pair is read whole when its smaller end has at most this many
# times the bound (walking a chain reads no properties, so it may go further than the bounded reads).
_PAIR_FACTOR = 10
# Chunks ranked on the bounded reads whose mentions of the given entities are then counted exactly.
_CHUNK_POOL_FACTOR = 2

# The best-rated communities read first for the top-rated report (the whole kb only if none has one).
_TOP_RATED_CANDIDATES = 8

# Entity search: names longer than this cannot be entity names, and more than this many is an abuse.
_MAX_NAME_CHARS = 200
_MAX_NAMES = 64

# Full-text search: a question's words of at least this many characters (shorter ones carry little
# topic in any alphabetic language), at most this many of them.
_WORD = re.compile(r"\w+")
_MIN_TERM_CHARS = 3
_MAX_TERMS = 64


def lucene_words_query(kb: str, text: str) -> str | None:
    """The Lucene query of the chunk full-text index for the words of `text` within kb `kb` (None when
    `text` has no word to search). Words are runs of word characters, lower-cased: no Lucene operator or special
    character can pass, so caller text never becomes query syntax; the kb id is validated."""
    words = list(dict.fromkeys(w for w in _WORD.findall(text.casefold()) if len(w) >= _MIN_TERM_CHARS))
    if not words:
        return None
    return f'+kb:"{validate_kb_id(kb)}" +({" ".join(words[:_MAX_TERMS])})'


class SearchStore:
    """The reads of the query modes for one store; every method validates the kb id first."""

    def __init__(self, store: Neo4jStore) -> None:
        self._store = store

    # --- vector searches ------------------------------------------------------------------------------

    async def search_chunks(
        self, kb: str, vector: Sequence[float], k: int, *, seen: SeenRows | None = None
    ) -> list[Source]:
        """Top-k enabled chunks by similarity, best first."""
        hits = await self._valid_vector_hits("chunk", kb, vector, k, cy.MATCH_ENABLED_CHUNKS, seen=seen)
        return [_chunk_source(row, score=score, origin="vector") for row, score in hits]

    async def search_chunks_text(self, kb: str, text: str, k: int, *, seen: SeenRows | None = None) -> list[Source]:
        """Top-k enabled chunks by the full-text (BM25) score of the words of `text`, best first."""
        kb = validate_kb_id(kb)
        query = lucene_words_query(kb, text)
        if query is None:
            return []
        checked = seen.of(kb, cy.MATCH_ENABLED_CHUNKS, {}) if seen is not None else None
        hits = await self._store.text_hits(kb, query, k, cy.MATCH_ENABLED_CHUNKS, checked=checked)
        return [_chunk_source(row, score=score, origin="fulltext") for row, score in hits]

    async def search_entities(
        self, kb: str, vector: Sequence[float], k: int, *, seen: SeenRows | None = None
    ) -> list[Source]:
        """Top-k entities by similarity of `name: summary`, skipping entities no enabled chunk mentions."""
        hits = await self._valid_vector_hits("entity", kb, vector, k, cy.MATCH_VALID_ENTITIES, seen=seen)
        return [
            Source(
                id=row["id"],
                kind="entity",
                title=row["name"],
                text=f"{row['name']}: {row['description']}".strip(),
                score=score,
                origin="vector",
            )
            for row, score in hits
        ]

    async def search_communities(
        self, kb: str, vector: Sequence[float], k: int, min_rating: float, *, seen: SeenRows | None = None
    ) -> list[Source]:
        """Top-k community reports rated above `min_rating`, by similarity; `rating` carries the rating."""
        hits = await self._valid_vector_hits(
            "community",
            kb,
            vector,
            k,
            cy.MATCH_RATED_COMMUNITIES,
            seen=seen,
            min_rating=float(min_rating),
        )
        return [community_source(CommunityRow.model_validate(row), score=score, origin="vector") for row, score in hits]

    async def top_rated_report(self, kb: str) -> Source | None:
        """The highest-rated report (ties: larger community, then smaller id), or None without reports."""
        kb = validate_kb_id(kb)
        candidates = await self._store.read(cy.MATCH_TOP_RATED_CANDIDATES, kb=kb, limit=_TOP_RATED_CANDIDATES)
        rows = [row for row in candidates if row["full_content"] is not None][:1]
        if not rows and len(candidates) == _TOP_RATED_CANDIDATES:
            rows = await self._store.read(cy.MATCH_TOP_RATED_COMMUNITY, kb=kb)
        return community_source(CommunityRow.model_validate(rows[0]), origin="top-rated") if rows else None

    async def _valid_vector_hits(
        self,
        kind: VectorKind,
        kb: str,
        vector: Sequence[float],
        k: int,
        details: LiteralString,
        *,
        seen: SeenRows | None,
        **params: Any,
    ) -> list[tuple[dict[str, Any], float]]:
        checked = seen.of(kb, details, params) if seen is not None else None
        return await self._store.vector_hits(kind, kb, vector, k, details, checked=checked, **params)

    # --- local context ------------------------------------------------------------------------------------

    async def entity_chunks(
        self,
        kb: str,
        entity_ids: Sequence[str],
        limit: int,
        *,
        order: Literal["mentions", "rank"] = "mentions",
        reads_per_entity: int = READS_PER_ENTITY,
    ) -> list[ChunkRow]:
        """Enabled chunks mentioning the entities (a ranked list), at most `limit`.

        `mentions`: most of the given entities first, then the best entity rank; `rank`: the best entity
        rank first, then the number of entities. Ties by chunk id. An entity mentioned by more than
        `reads_per_entity` enabled chunks contributes the first `reads_per_entity` the store yields;
        the chosen chunks' `entity_ids` are exact.
        """
        if not entity_ids or limit < 1:
            return []
        statement = cy.MATCH_CHUNKS_BY_MENTIONS if order == "mentions" else cy.MATCH_CHUNKS_BY_ENTITY_RANK
        rows = await self._store.read_value(
            statement,
            kb=validate_kb_id(kb),
            ids=list(entity_ids),
            limit=limit,
            pool=_CHUNK_POOL_FACTOR * limit,
            scan=max(reads_per_entity, 1),
        )
        return [ChunkRow.model_validate(row) for row in rows]

    async def entity_surroundings(
        self,
        kb: str,
        entity_ids: Sequence[str],
        *,
        chunk_limit: int,
        community_limit: int,
        relationship_limit: int,
        reads_per_entity: int = READS_PER_ENTITY,
    ) -> EntitySurroundings:
        """What local search reads around the entities, in one round trip: `entity_chunks` (by mentions),
        `entity_communities`, `relationships_among` and `neighbour_relationships`, with the same rows."""
        if not entity_ids:
            return EntitySurroundings()
        reads = max(reads_per_entity, 1)
        record = await self._store.read_record(
            cy.MATCH_ENTITY_SURROUNDINGS,
            kb=validate_kb_id(kb),
            ids=list(entity_ids),
            chunk_limit=max(chunk_limit, 0),
            pool=_CHUNK_POOL_FACTOR * max(chunk_limit, 0),
            community_limit=max(community_limit, 0),
            relationship_limit=max(relationship_limit, 0),
            scan=reads,
            pair_scan=_PAIR_FACTOR * reads,
        )
        return EntitySurroundings.model_validate(record)

    async def entity_communities(self, kb: str, entity_ids: Sequence[str], limit: int) -> list[CommunityRow]:
        """Reported communities the entities belong to (finest and ancestors), by rating then members."""
        if not entity_ids or limit < 1:
            return []
        rows = await self._store.read_value(
            cy.MATCH_COMMUNITIES_OF_ENTITIES, kb=validate_kb_id(kb), ids=list(entity_ids), limit=limit
        )
        return [CommunityRow.model_validate(row) for row in rows]

    async def relationships_among(
        self, kb: str, entity_ids: Sequence[str], limit: int, *, reads_per_entity: int = READS_PER_ENTITY
    ) -> list[RelationshipRow]:
        """Valid relationships with both ends among the entities, strongest first (ties by id).

        A pair with an end of at most `_PAIR_FACTOR * reads_per_entity` relationships is read whole;
        between two bigger entities, what lies within the first `reads_per_entity` of either."""
        if not entity_ids or limit < 1:
            return []
        reads = max(reads_per_entity, 1)
        rows = await self._store.read_value(
            cy.MATCH_RELATIONSHIPS_AMONG_ENTITIES,
            kb=validate_kb_id(kb),
            ids=list(entity_ids),
            limit=limit,
            scan=reads,
            pair_scan=_PAIR_FACTOR * reads,
        )
        return [RelationshipRow.model_validate(row) for row in rows]

    async def neighbour_relationships(
        self, kb: str, entity_ids: Sequence[str], limit: int, *, reads_per_entity: int = READS_PER_ENTITY
    ) -> list[RelationshipRow]:
        """Valid relationships from the entities to entities outside the list, strongest first (ties by id).

        Per entity, the strongest of its first `reads_per_entity` relationships the store yields (all of
        them below that), at most `limit` each, then the `limit` strongest of those."""
        if not entity_ids or limit < 1:
            return []
        rows = await self._store.read_value(
            cy.MATCH_NEIGHBOUR_RELATIONSHIPS,
            kb=validate_kb_id(kb),
            ids=list(entity_ids),
            limit=limit,
            scan=max(reads_per_entity, 1),
        )
        return [RelationshipRow.model_validate(row) for row in rows]

    # --- entity search ---------------------------------------------------------------------------------

    async def match_entity_names(self, kb: str, names: Sequence[str], limit: int) -> list[EntityRow]:
        """Valid entities whose name contains one of `names` (case-sensitive): exact matches first,
        then shorter names, then alphabetical. Blank and overlong names are ignored."""
        validate_kb_id(kb)
        needles = list(dict.fromkeys(n.strip() for n in names if n.strip() and len(n.strip()) <= _MAX_NAME_CHARS))
        if not needles or limit < 1:
            return []
        rows = await self._store.read_value(cy.MATCH_ENTITIES_BY_NAME, kb=kb, names=needles[:_MAX_NAMES], limit=limit)
        return [EntityRow.model_validate(row) for row in rows]

    async def community_entities(self, kb: str, community_ids: Sequence[str], limit: int) -> list[EntityRow]:
        """The communities' member entities: the best-ranked community's first, then the most connected;
        `via_rank` is the rank of the community, `weight` the entity's number of relationships (its
        degree, read from the node)."""
        if not community_ids or limit < 1:
            return []
        rows = await self._store.read_value(
            cy.MATCH_ENTITIES_OF_COMMUNITIES, kb=validate_kb_id(kb), ids=list(community_ids), limit=limit
        )
        return [EntityRow.model_validate(row) for row in rows]

    async def entity_neighbours(
        self, kb: str, entity_ids: Sequence[str], limit: int, *, reads_per_entity: int = READS_PER_ENTITY
    ) -> list[EntityRow]:
        """One-hop neighbours through valid relationships: nearest to the best-ranked entity first.

        Per entity, the other ends of its `limit` strongest valid relationships among the first
        `reads_per_entity` the store yields (all of them below that)."""
        if not entity_ids or limit < 1:
            return []
        rows = await self._store.read_value(
            cy.MATCH_ENTITY_NEIGHBOURS,
            kb=validate_kb_id(kb),
            ids=list(entity_ids),
            limit=limit,
            scan=max(reads_per_entity, 1),
        )
        return [EntityRow.model_validate(row) for row in rows]

    # --- global search ---------------------------------------------------------------------------------

    async def community_reports(self, kb: str, vector: Sequence[float]) -> list[ReportRow]:
        """Every community report of the kb, by level then id, with its similarity to `vector`."""
        kb = validate_kb_id(kb)
        space = await self._store.vector_space(kb)
        rows = await self._store.read_value(
            cy.MATCH_COMMUNITY_REPORTS, kb=kb, vector=list(vector), vector_property=space.property
        )
        return [ReportRow.model_validate(row) for row in rows]

    async def community_chunks(
        self, kb: str, community_ids: Sequence[str], vector: Sequence[float], per_community: int
    ) -> dict[str, list[Source]]:
        """The enabled source chunks of each community, nearest to `vector` first, at most `per_community`."""
        if not community_ids or per_community < 1:
            return {}
        kb = validate_kb_id(kb)
        rows = await self._store.read_value(
            cy.MATCH_COMMUNITY_CHUNKS,
            vector_property=(await self._store.vector_space(kb)).property,
            kb=kb,
            ids=list(community_ids),
            vector=list(vector),
            per_community=per_community,
        )
        found: dict[str, list[Source]] = {community_id: [] for community_id in community_ids}
        for row in rows:
            found[row["community_id"]].append(
                _chunk_source(row, score=row["similarity"], origin=f"report:{row['community_id']}")
            )
        return found


def _chunk_source(row: Mapping[str, Any], *, score: float, origin: str) -> Source:
    """A chunk row of a search statement (id, title, text, its place in the file) as a source."""
    return Source(
        id=row["id"],
        kind="chunk",
        title=row["title"],
        text=row["text"],
        score=score,
        origin=origin,
        **{name: row.get(name) for name in POSITION_FIELDS},
    )
