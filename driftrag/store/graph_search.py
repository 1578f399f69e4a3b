"""Reads of the bounded one-hop graph search, and the switches that decide what it may return.

`GraphSearchStore.one_hop` runs one read-only statement; shaping, field truncation and the response
model live in `driftrag.search.graph_search`. The admin writes are here because they change what the
search treats as a valid source: a disabled chunk stops vouching for the entities and relationships
extracted from it, and a disabled graph makes the search refuse (callers answer 503, not "no match").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from driftrag.errors import (
    BackendUnavailableError,
    GraphDisabledError,
    InvalidIdentifierError,
    KnowledgeBaseDeletingError,
    KnowledgeBaseNotFoundError,
)
from driftrag.models.graph import KbStatus
from driftrag.models.identifiers import validate_kb_id, validate_node_id
from driftrag.models.search import OneHopCounts, OneHopEntity, OneHopPart, OneHopRelationship
from driftrag.store.cypher import graph_search as cy
from driftrag.store.cypher.markers import SEARCH_MARKERS_VERSION
from driftrag.store.markers import refresh_search_markers
from driftrag.store.neo4j_store import Neo4jStore

_WRITE_BATCH = 1000
_entity = OneHopEntity._make
# The text index matches by trigrams: a shorter needle is answered by the ranked seed-order scan.
_TRIGRAM = 3
# Pairs per streamed part: small enough that shaping the parts overlaps most of Neo4j's projection, large
# enough that a part's fixed costs (a record, a subquery call per kind, a validation call) stay small.
_PART_ROWS = 200


def _validate_chunk_ids(chunk_ids: Iterable[str]) -> list[str]:
    """Distinct `chunk-…` ids in first-seen order; anything else is refused before any query."""
    ids = list(dict.fromkeys(validate_node_id(chunk_id) for chunk_id in chunk_ids))
    wrong_kind = [chunk_id for chunk_id in ids if not chunk_id.startswith("chunk-")]
    if wrong_kind:
        raise InvalidIdentifierError(f"not chunk ids: {', '.join(map(repr, wrong_kind[:5]))}")
    return ids


def _check_searchable(kb: str, status: dict[str, Any] | None) -> dict[str, Any]:
    """`status` (a record holding the kb's switches; None: no such kb) when they let the graph be
    searched; else the search's refusal."""
    if status is None:
        raise KnowledgeBaseNotFoundError(f"knowledge base {kb!r} does not exist")
    if status.get("deleting"):
        raise deleting_error(kb)
    if not status["graph_enabled"]:
        raise GraphDisabledError(
            f"the graph of knowledge base {kb!r} is disabled, so graph search cannot answer; "
            f"re-enable it with `driftrag graph-enable --kb {kb}` (or GraphSearchStore.set_graph_enabled)"
        )
    if status["search_markers"] < SEARCH_MARKERS_VERSION:
        raise BackendUnavailableError(
            f"knowledge base {kb!r} was written before graph search's markers existed; "
            "run `driftrag schema init` once to add them"
        )
    return status


def deleting_error(kb: str) -> KnowledgeBaseDeletingError:
    return KnowledgeBaseDeletingError(
        f"knowledge base {kb!r} is being deleted (or its delete was interrupted: "
        f"`driftrag delete --kb {kb} --yes` finishes it)"
    )


class _PartsInOrder:
    """Takes the one-hop statement's records as they arrive: checks the kb's switches on the first, then
    hands each part over as tuples, in part order (a part that arrives early waits for those before it)."""

    def __init__(self, kb: str, on_part: Callable[[OneHopPart], None]) -> None:
        self._kb = kb
        self._on_part = on_part
        self._first: dict[str, Any] | None = None
        self._waiting: dict[int, dict[str, Any]] = {}
        self._next = 0
        self._seed_ids: list[str] = []  # the kept seeds', from the first part: the pairs' other endpoint

    def add(self, record: dict[str, Any]) -> None:
        if self._first is None:
            self._first = _check_searchable(self._kb, record)
        self._waiting[record["part"]] = record
        while self._next in self._waiting:
            self._on_part(self._part(self._waiting.pop(self._next)))
            self._next += 1

    def counts(self) -> OneHopCounts:
        """The answer's counts, once every part has been handed over."""
        first = _check_searchable(self._kb, self._first)
        if self._waiting or self._next != first["parts"]:
            raise BackendUnavailableError(
                f"graph search in knowledge base {self._kb!r} got {self._next} of {first['parts']} parts in order"
            )
        return OneHopCounts(
            first["candidates_matched"],
            first["candidates_matched_is_lower_bound"],
            first["rows_total"],
            first["rows_total_is_lower_bound"],
        )

    def _part(self, record: dict[str, Any]) -> OneHopPart:
        seeds = list(map(_entity, record["seeds"]))
        self._seed_ids += (seed.id for seed in seeds)
        seed_ids = self._seed_ids
        pairs = []
        for seed_index, outgoing, neighbour_id, row in record["pairs"]:
            rel_id, rel_type, description, weight, sources, stored = row
            seed_id = seed_ids[seed_index]
            source_id, target_id = (seed_id, neighbour_id) if outgoing else (neighbour_id, seed_id)
            relationship = OneHopRelationship(
                rel_id, source_id, target_id, rel_type, description, weight, sources, stored
            )
            pairs.append((seed_index, relationship, neighbour_id))
        return OneHopPart(seeds, pairs, list(map(_entity, record["neighbours"])))


class GraphSearchStore:
    """Bounded one-hop reads of one knowledge base, plus the chunk and graph switches."""

    def __init__(self, store: Neo4jStore) -> None:
        self._store = store

    async def graph_enabled(self, kb: str) -> bool:
        """Whether the kb's graph may be searched; raises KnowledgeBaseNotFoundError for an unknown kb."""
        return bool((await self._status(kb))["graph_enabled"])

    async def status(self, kb: str) -> KbStatus:
        """The kb's switches and staleness. Raises KnowledgeBaseNotFoundError for an unknown kb, and its
        subclass KnowledgeBaseDeletingError for a kb being deleted: a reader checks this after its reads
        too, so an answer read from a kb whose delete started meanwhile is refused, not returned."""
        row = await self._status(kb)
        return KbStatus(graph_enabled=row["graph_enabled"], stale=row["stale"])

    async def _status(self, kb: str) -> dict[str, Any]:
        rows = await self._store.read(cy.MATCH_KB_GRAPH_STATUS, kb=validate_kb_id(kb))
        if not rows:
            raise KnowledgeBaseNotFoundError(f"knowledge base {kb!r} does not exist")
        if rows[0]["deleting"]:
            raise deleting_error(kb)
        return rows[0]

    async def one_hop(
        self,
        kb: str,
        query: str,
        *,
        max_seeds: int,
        max_rows: int,
        on_part: Callable[[OneHopPart], None],
        max_source_ids: int = 10,
        count_cap: int = 1000,
    ) -> OneHopCounts:
        """Seeds matching `query` and their valid one-hop neighbourhoods, capped, handed to `on_part` as
        they arrive; returns the counts once the last part has been handed over.

        `candidates_matched` counts the valid entities whose name contains `query`; `rows_total` the rows
        of the first `max_seeds` seeds: one per valid relationship of a seed, or one for a seed without
        any. The parts (OneHopPart), in order: the first holds the kept seeds in rank order; together
        they hold each kept seed's pairs of relationship and neighbour id, in seed-rank order then
        heaviest first, at most `max_rows` pairs in all, and each neighbour once, in the part of its
        first pair. `on_part` runs on the event loop between reads: it must not block. Source ids are already
        filtered to valid chunks: at most `max_source_ids + 1` of them per list (the first valid ones in
        stored order, so a caller showing `max_source_ids` knows whether it cuts), with
        `stored_chunk_ids`, the list's stored length.

        The two counts are exact up to `max(count_cap, max_seeds)` and `max(count_cap, max_rows)`;
        beyond that they are that limit and `candidates_matched_is_lower_bound` /
        `rows_total_is_lower_bound` are true.

        Raises KnowledgeBaseNotFoundError, GraphDisabledError or BackendUnavailableError (also for a kb
        whose search markers the schema setup has not written yet) before any part is handed over;
        BackendUnavailableError too when the connection is lost after some parts were (the parts seen
        are then not the whole answer: discard them), or KnowledgeBaseNotFoundError when the read failed
        because the kb was deleted meanwhile. An error `on_part` raises stops the read and is
        raised as is.
        """
        if max_seeds < 1 or max_rows < 1 or max_source_ids < 1 or count_cap < 1:
            raise ValueError("max_seeds, max_rows, max_source_ids and count_cap must be at least 1")
        statement = cy.MATCH_ONE_HOP_BY_SCAN if len(query) < _TRIGRAM else cy.MATCH_ONE_HOP_BY_TEXT
        parts = _PartsInOrder(kb, on_part)
        try:
            # `query` is the name of read()'s statement argument, so the text travels as $needle.
            await self._store.read_streamed(
                statement,
                parts.add,
                kb=validate_kb_id(kb),
                markers_version=SEARCH_MARKERS_VERSION,
                needle=query,
                max_seeds=max_seeds,
                max_rows=max_rows,
                list_cap=max_source_ids + 1,
                candidate_limit=max(count_cap, max_seeds),
                row_limit=max(count_cap, max_rows),
                part_rows=_PART_ROWS,
            )
            return parts.counts()
        except BackendUnavailableError:
            # A delete that started meanwhile takes the nodes away under the read (parts missing, the
            # statement failing): the kb's record says so, and the search is refused as for a deleted kb.
            await self._status(kb)
            raise

    # --- admin writes ------------------------------------------------------------------------------

    async def set_chunks_enabled(self, kb: str, chunk_ids: Iterable[str], enabled: bool) -> int:
        """Enable or disable chunks of a kb; returns how many of the (distinct) ids exist in the kb.

        Ids must look like `chunk-<token>` (validate_node_id). Unknown ids are ignored, so compare the
        result with the number of ids to detect them. Raises KnowledgeBaseNotFoundError for an unknown kb.
        """
        validate_kb_id(kb)
        ids = _validate_chunk_ids(chunk_ids)
        await self.graph_enabled(kb)  # only for the KnowledgeBaseNotFoundError
        matched = 0
        for start in range(0, len(ids), _WRITE_BATCH):
            rows = await self._store.write(
                cy.SET_CHUNKS_ENABLED, kb=kb, ids=ids[start : start + _WRITE_BATCH], enabled=enabled
            )
            matched += rows[0]["matched"]
        await refresh_search_markers(self._store, kb, ids)
        return matched

    async def set_graph_enabled(self, kb: str, enabled: bool) -> None:
        """Allow or refuse graph search on a kb; raises KnowledgeBaseNotFoundError for an unknown kb."""
        rows = await self._store.write(cy.SET_GRAPH_ENABLED, kb=validate_kb_id(kb), enabled=enabled)
        if not rows or rows[0]["matched"] == 0:
            raise KnowledgeBaseNotFoundError(f"knowledge base {kb!r} does not exist")
