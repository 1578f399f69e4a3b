"""The Neo4j store: connection, server checks, schema, and the query helpers the other store modules use.

`Neo4jStore` wraps one `neo4j.AsyncDriver`. Construction does no I/O; `connect()` retries until the
server answers and checks its version, and `ensure_schema()` creates constraints and vector indexes
idempotently. Every statement it runs is a constant from `driftrag.store.cypher`.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import math
import re
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any, LiteralString, TypeVar

import neo4j
from neo4j.exceptions import (
    AuthError,
    ClientError,
    DriverError,
    Neo4jError,
    ServiceUnavailable,
    SessionExpired,
    TransientError,
)

from driftrag.errors import (
    BackendUnavailableError,
    ConfigurationError,
    EmbeddingDimensionMismatchError,
    UnsupportedServerError,
)
from driftrag.models.identifiers import validate_kb_id
from driftrag.models.seen_rows import CheckedRows
from driftrag.models.server import ServerInfo, VectorIndexInfo, check_server_version
from driftrag.models.vector_spaces import KINDS, SHARED, SHARED_KEY, VectorKind, VectorSpace
from driftrag.settings import Settings
from driftrag.store.cypher import schema as cy
from driftrag.store.health import BackendHealth
from driftrag.store.markers import migrate_search_markers
from driftrag.wording import plural

log = logging.getLogger(__name__)
_DRIVER_LOG = logging.getLogger("neo4j")

_INDEX_WAIT_S = 300
# Vector search: candidates fetched per k at first, and the widening factor; the most ever fetched.
_OVER_FETCH = 4
_TRANSACTION_RETRY_S = 1.0
# A server that does not take a fresh connection in this time counts as down.
_PROBE_TIMEOUT_S = 2.0
# Connections `connect` opens at once: as many reads or writes as a run makes at the same time.
_WARM_CONNECTIONS = 4
_MAX_VECTOR_FETCH = 100_000

T = TypeVar("T")


async def in_clean_context(call: Coroutine[Any, Any, T]) -> T:
    """`call` run in a task of its own with an empty context (cancelled with its caller).

    A connection the driver opens during a call stays in its pool, and asyncio's socket callbacks keep the
    context they were registered in (`contextvars.copy_context()`) for as long as the socket lives. A
    workflow step's context holds the step's events and results, so without this every pooled connection
    kept alive the whole state of the query that happened to open it (a DRIFT query's sources and answers),
    up to the pool's size and for the connection's lifetime. Nothing the driver does needs our context.
    """
    return await asyncio.create_task(call, context=contextvars.Context())


class _Rows(list[Any]):
    """A list parameter whose repr is its length. The driver formats every RUN's parameters for a debug
    log line even when nothing logs at that level (neo4j 6.4's Bolt 5 `run`): a query vector cost 0.4 ms
    of event-loop time, the writes of an LLM-mode Alice ingestion 48 ms, a batch of embedded rows far
    more. Sent as any list."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<list of {len(self)}>"


def _unformatted(params: Mapping[str, Any]) -> dict[str, Any]:
    """`params` with each list as `_Rows`, unless the driver's debug log is on (then it shows them whole)."""
    if _DRIVER_LOG.isEnabledFor(logging.DEBUG):
        return dict(params)
    return {name: _Rows(value) if isinstance(value, list) else value for name, value in params.items()}


def _space_of(row: Mapping[str, Any]) -> VectorSpace:
    """A kb's space from its record (no key: written before spaces existed, so the shared indexes)."""
    if row["key"] in (None, SHARED_KEY):
        return SHARED.model_copy(update={"embedder": row["embedder"], "dimension": row["dimension"]})
    return VectorSpace(key=row["key"], property=row["property"], embedder=row["embedder"], dimension=row["dimension"])


def _same_embedder(current: VectorSpace, wanted: VectorSpace) -> bool:
    return current.embedder == wanted.embedder and current.dimension == wanted.dimension


def _mismatch(kb: str, current: VectorSpace, wanted: VectorSpace) -> EmbeddingDimensionMismatchError:
    return EmbeddingDimensionMismatchError(
        f"knowledge base {kb!r} holds vectors of {current.embedder or 'another embedder'} ({current.dimension} "
        f"dimensions, index {current.index('chunk')}); this engine embeds with {wanted.embedder} "
        f"({wanted.dimension}). Use the kb's embedder, or drop its vectors with "
        f"`driftrag schema reset-vectors --kb {kb}` and ingest again to embed them anew."
    )


class Neo4jStore:
    """Owns the async driver and runs the project's Cypher statements."""

    def __init__(
        self,
        settings: Settings,
        driver: neo4j.AsyncDriver,
        health: BackendHealth | None = None,
        *,
        uri: str | None = None,
    ) -> None:
        self._settings = settings
        self._driver = driver
        # The address errors name: the one the driver was built for (`from_settings`), else the settings'.
        self.uri = uri or settings.bolt_uri
        self._database = settings.neo4j_database
        # Known down after a failure: later calls fail at once instead of each waiting on the driver.
        self.health = health or BackendHealth(settings.neo4j_health_probe_s)
        # Per (vector index, kb): the share of an index's nearest nodes that the kb's searches last kept.
        # A server holding several kbs (or copies of one corpus) would otherwise start every search too
        # narrow and widen it: two or three index lookups where one suffices. A stale share only changes
        # how wide the first lookup is, never what the search returns.
        self._vector_shares: dict[tuple[str, str], float] = {}
        # (vector index, kb) pairs known to hold more than `vector_exact_limit` nodes: searched on the index.
        self._approximate: set[tuple[str, str]] = set()
        # The vector space of each kb that has recorded one (`vector_space`).
        self._spaces: dict[str, VectorSpace] = {}

    @classmethod
    def from_settings(cls, settings: Settings, uri: str | None = None) -> Neo4jStore:
        """Build a store for `uri`; no connection is made yet.

        Default: `NEO4J_URI`, else the project's local server on 127.0.0.1:`DRIFTRAG_NEO4J_PORT`.
        """
        target = uri or settings.bolt_uri
        budget = settings.neo4j_connect_timeout_s
        driver = neo4j.AsyncGraphDatabase.driver(
            target,
            auth=(settings.neo4j_username, settings.neo4j_password.get_secret_value()),
            # The TCP connect of one attempt; an address that drops packets gives up after this.
            connection_timeout=min(max(settings.connect_retry_delay_s, 5.0), budget),
            # Opening or borrowing a connection, the Bolt handshake included (60 s by default): a host that
            # accepts the connection but never answers the handshake counts as down after this.
            connection_acquisition_timeout=budget,
            # The driver retries a failed transaction for 30 s by default; a query path that lost its server
            # should say so in seconds, not after a half-minute stall. One second still allows the one retry
            # a transient error (a deadlock) needs; after that the store's health state answers at once.
            max_transaction_retry_time=_TRANSACTION_RETRY_S,
            # Schema-less reads of properties not yet written are normal here, not worth a warning.
            notifications_min_severity="OFF",
        )
        return cls(settings, driver, uri=target)

    @property
    def driver(self) -> neo4j.AsyncDriver:
        return self._driver

    async def close(self) -> None:
        await self._driver.close()

    async def __aenter__(self) -> Neo4jStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # --- connection and server ----------------------------------------------------------------

    async def connect(self) -> ServerInfo:
        """Wait for the server (up to settings.connect_retries tries, connect_retry_delay_s apart, all
        within neo4j_connect_timeout_s), check it. A server that does not answer in that time is a
        BackendUnavailableError naming its address."""
        settings = self._settings
        budget = settings.neo4j_connect_timeout_s
        deadline = time.monotonic() + budget
        attempts = 0
        while True:
            attempts += 1
            try:
                # The driver's own timeouts bound each attempt too; this bounds them all together.
                remaining = max(deadline - time.monotonic(), 0.1)
                await asyncio.wait_for(self._open_connections(), timeout=remaining)
                self.health.succeeded()  # a fresh connection beats a known-down state
                break
            except AuthError as exc:
                raise self._refused(exc) from exc
            except (ServiceUnavailable, DriverError, OSError, TimeoutError) as exc:
                log.info("Neo4j at %s not reachable (attempt %d): %s", self.uri, attempts, exc)
                pause = settings.connect_retry_delay_s
                if attempts >= settings.connect_retries or time.monotonic() + pause >= deadline:
                    # The driver's message spans lines and repeats the address; its end says why.
                    reason = " ".join(str(exc).split())[-300:] or f"no answer within {budget:g} s"
                    waited = budget - max(deadline - time.monotonic(), 0.0)
                    raise BackendUnavailableError(
                        f"Neo4j at {self.uri} is unreachable ({plural(attempts, 'attempt')} in {waited:.1f} s): "
                        f"{reason}. Start it with `driftrag neo4j start`, or check NEO4J_URI "
                        "(DRIFTRAG_NEO4J_CONNECT_TIMEOUT_S waits longer)"
                    ) from exc
            await asyncio.sleep(pause)
        info = await self.server_info()
        check_server_version(info.version)
        return info

    async def _open_connections(self) -> None:
        """Open the pool's first connections together, or raise why the server cannot be reached.

        A new connection of the async driver waits about 40 ms at its HELLO for the server's delayed ACK
        (its socket has Nagle's algorithm on: asyncio sets TCP_NODELAY only on sockets made with
        IPPROTO_TCP, the driver's are made without it). Opened one by one where a run first needs them,
        each stall landed on that run's path (two per ingestion, measured); opened together, they overlap
        once, and the server check after them takes no stall of its own."""
        opened = await asyncio.gather(
            *(self._driver.verify_connectivity() for _ in range(_WARM_CONNECTIONS)), return_exceptions=True
        )
        failure = next((result for result in opened if isinstance(result, BaseException)), None)
        if failure is not None:
            raise failure

    async def server_info(self) -> ServerInfo:
        rows = await self.read(cy.SERVER_COMPONENTS)
        kernel = next((row for row in rows if row["name"] == "Neo4j Kernel"), None)
        if kernel is None:
            raise UnsupportedServerError("the server did not report a Neo4j Kernel component")
        return ServerInfo(version=kernel["versions"][0], edition=kernel["edition"])

    # --- schema ---------------------------------------------------------------------------------

    async def ensure_schema(self) -> None:
        """Create constraints and lookup indexes if missing, and wait until they are online; then give
        every kb written before the search markers existed its markers (once, in batches). The vector
        indexes belong to vector spaces, created when a kb first claims one (`claim_vector_space`)."""
        # One read of what exists, then only the missing objects created (each CREATE is a schema
        # transaction of its own; `create_schema_object` makes a concurrent creation harmless).
        indexes, constraints = await asyncio.gather(
            self.read(cy.SHOW_DRIFTRAG_INDEX_STATES), self.read(cy.SHOW_DRIFTRAG_CONSTRAINT_NAMES)
        )
        present = {row["name"] for row in [*indexes, *constraints]}
        missing = [
            statement
            for statement in (*cy.CREATE_CONSTRAINTS, *cy.CREATE_LOOKUP_INDEXES)
            if _schema_object_name(statement) not in present
        ]
        for statement in missing:
            if _schema_object_name(statement) == cy.RELATED_KEY:
                await self._create_related_key(statement, present)
            else:
                await self.create_schema_object(statement)
        if missing or any(row["state"] != "ONLINE" for row in indexes):
            await self.write(cy.AWAIT_INDEXES, timeout_s=_INDEX_WAIT_S)
        migrated = await migrate_search_markers(self)
        if migrated:
            log.info("search markers written for knowledge bases %s", ", ".join(migrated))

    async def _create_related_key(self, statement: str, present: set[str]) -> None:
        """The (kb, id) uniqueness of relationships. Servers of earlier versions have a plain index on the
        same properties, which Neo4j will not keep beside the constraint: it is replaced. A graph whose
        relationship ids repeat keeps the plain index and stays unchecked, with a warning."""
        if cy.RELATED_KB_ID_INDEX in present:
            if await self.read_value(cy.RELATED_IDS_REPEAT):
                log.warning("relationship ids repeat within a kb on this server: their uniqueness is left unchecked")
                return
            await self.write(cy.DROP_INDEX, name=cy.RELATED_KB_ID_INDEX)
        try:
            await self.create_schema_object(statement)
        except ClientError as exc:
            log.warning("relationship ids repeat within a kb on this server, left unchecked: %s", exc.message)
            await self.create_schema_object(cy.CREATE_RELATED_KB_ID_INDEX)

    async def create_schema_object(self, statement: LiteralString, **params: Any) -> None:
        """Run a `CREATE … IF NOT EXISTS` of a constraint or index. Two processes creating the same object at
        the same moment both pass `IF NOT EXISTS`, and Neo4j refuses the second commit with
        EquivalentSchemaRuleAlreadyExists: the object exists as asked, so that is no error here."""
        try:
            await self.write(statement, **params)
        except ClientError as exc:
            if exc.code != _EQUIVALENT_SCHEMA_RULE:
                raise
            log.debug("%s: created by another client at the same time", " ".join(statement.split()[:4]))

    async def vector_indexes(self) -> list[VectorIndexInfo]:
        rows = await self.read(cy.SHOW_VECTOR_INDEXES)
        return sorted((VectorIndexInfo.model_validate(row) for row in rows), key=lambda index: index.name)

    async def schema_objects(self) -> list[dict[str, Any]]:
        """The driftrag constraints and indexes, sorted by name (for inspection and tests)."""
        rows = await self.read(cy.SHOW_DRIFTRAG_CONSTRAINTS) + await self.read(cy.SHOW_DRIFTRAG_INDEXES)
        return sorted(rows, key=lambda row: row["name"])

    # --- vector spaces (`driftrag.models.vector_spaces`) ------------------------------------------

    async def vector_space(self, kb: str) -> VectorSpace:
        """The space `kb`'s embeddings live in: the one recorded on it; for a kb written before spaces
        existed (or not written yet), the shared indexes of that time. Kept per store once recorded."""
        known = self._spaces.get(kb)
        if known is not None:
            return known
        rows = await self.read(cy.MATCH_KB_VECTOR_SPACE, kb=validate_kb_id(kb))
        if not rows or rows[0]["key"] is None:
            return SHARED
        space = self._spaces[kb] = _space_of(rows[0])
        return space

    async def claim_vector_space(self, kb: str, wanted: VectorSpace) -> VectorSpace:
        """Record `wanted` (an embedder's space) as `kb`'s and create its indexes if missing; a kb already in
        another space is refused, naming it and its embedder. A kb written before spaces existed, with vectors
        in the shared indexes, adopts them when they hold the embedder's dimension."""
        validate_kb_id(kb)
        rows = await self.read(cy.MATCH_KB_VECTOR_SPACE, kb=kb)
        row = rows[0] if rows else None
        if row is not None and row["key"] is not None:
            current = _space_of(row)
            if current.key != wanted.key and not _same_embedder(current, wanted):
                raise _mismatch(kb, current, wanted)
            self._spaces[kb] = current
            return current
        shared = {index.name: index for index in await self.vector_indexes() if index.name in SHARED.indexes().values()}
        space = wanted
        if (
            row is not None
            and shared
            and await self.read_value(cy.KB_HAS_VECTORS, kb=kb, vector_property=SHARED.property)
        ):
            # Written before spaces existed: its vectors are in the shared indexes.
            dimensions = {index.dimensions for index in shared.values()}
            adopted = SHARED.model_copy(update={"embedder": row["embedder"], "dimension": next(iter(dimensions))})
            if dimensions != {wanted.dimension} or (row["embedder"] and row["embedder"] != wanted.embedder):
                raise _mismatch(kb, adopted, wanted)
            space = adopted
        else:
            await self._create_space_indexes(wanted)
        await self.write(
            cy.SET_KB_VECTOR_SPACE,
            kb=kb,
            key=space.key,
            property=space.property,
            embedder=space.embedder,
            dimension=space.dimension,
        )
        self._spaces[kb] = space
        return space

    async def _create_space_indexes(self, space: VectorSpace) -> None:
        existing = {index.name: index for index in await self.vector_indexes()}
        created = False
        for kind, name in space.indexes().items():
            index = existing.get(name)
            if index is not None and index.dimensions != space.dimension:
                raise EmbeddingDimensionMismatchError(
                    f"vector index {name} has {index.dimensions} dimensions, not the {space.dimension} of "
                    f"{space.embedder}: drop it (`driftrag schema reset-vectors`) or rename the embedder"
                )
            if index is None:
                await self.create_schema_object(
                    cy.create_vector_index(kind, name, space.property), dimensions=space.dimension
                )
                created = True
        if created:
            await self.write(cy.AWAIT_INDEXES, timeout_s=_INDEX_WAIT_S)

    async def reset_kb_vectors(self, kb: str) -> VectorSpace:
        """Drop `kb`'s embeddings and its claim on its space (the graph stays; the next ingestion embeds
        again, in the space of its embedder); the space's indexes go when no other kb uses them."""
        space = await self.vector_space(kb)
        await self.run_in_transactions(
            cy.REMOVE_KB_EMBEDDINGS, kb=kb, vector_property=space.property, cleared={space.property: None}
        )
        await self.write(cy.CLEAR_KB_VECTOR_SPACE, kb=kb)
        self._spaces.pop(kb, None)
        await self.drop_unused_vector_space(space)
        return space

    async def drop_unused_vector_space(self, space: VectorSpace) -> bool:
        """Drop the space's indexes when no kb records it (the shared ones: when no kb of earlier versions
        is left either); whether they were dropped."""
        users = [row for row in await self.read(cy.MATCH_VECTOR_SPACES) if (row["key"] or SHARED_KEY) == space.key]
        if users:
            return False
        for name in space.indexes().values():
            await self.write(cy.DROP_VECTOR_INDEX, name=name)
        return True

    async def kb_vector_spaces(self) -> dict[str, VectorSpace]:
        """Every kb and the space its embeddings live in."""
        return {row["kb"]: _space_of(row) for row in await self.read(cy.MATCH_VECTOR_SPACES)}

    async def query_vector_index(
        self, kind: VectorKind, kb: str, vector: list[float], k: int
    ) -> list[tuple[str, float]]:
        """Top-k node ids of one kb by cosine similarity, best first."""
        return [(row["id"], score) for row, score in await self.vector_hits(kind, kb, vector, k)]

    async def vector_hits(
        self,
        kind: VectorKind,
        kb: str,
        vector: Sequence[float],
        k: int,
        details: LiteralString | None = None,
        *,
        checked: CheckedRows | None = None,
        **params: Any,
    ) -> list[tuple[dict[str, Any], float]]:
        """Top-k nodes of one kb by cosine similarity, best first, as (row, score), in the kb's vector space.

        A kb with at most `vector_exact_limit` nodes of the index's kind is searched exactly: each of its
        nodes scored, best first, `fetch` at a time. Otherwise the index serves the search, and the vector
        indexes are shared by all knowledge bases, so the search over-fetches, keeps the kb's
        nodes and, with `details` (a statement taking `$kb` and `$ids` and returning one record, a list of
        rows), only those it returns a row for (enabled chunks, valid entities…), read best first in
        slices until k are found. It starts as wide as the kb's last share of this index says k needs
        (`_first_fetch`) and widens (x4, or to twice what the share kept so far says k needs, x16 when
        none was kept) while fewer than k remain and a wider lookup can bring more, up to
        `_MAX_VECTOR_FETCH` candidates: the one over-fetch loop of every vector search. `checked` holds
        the `details` rows of ids already read, or being read, by the searches of the same query with the
        same statement and parameters (`driftrag.models.seen_rows`); it is filled in.
        """
        if kind not in KINDS:
            raise ConfigurationError(f"unknown vector kind {kind!r}")
        validate_kb_id(kb)
        if k < 1:
            return []
        query = [float(x) for x in vector]
        space = await self.vector_space(kb)
        if space.dimension is not None and len(query) != space.dimension:
            raise EmbeddingDimensionMismatchError(
                f"knowledge base {kb!r} holds vectors of {space.embedder} ({space.dimension} dimensions); the query "
                f"was embedded with {len(query)}: query it with its own embedder"
            )
        index, vectors = space.index(kind), {"vector_property": space.property}
        limit = self._settings.vector_exact_limit
        exact = limit > 0 and (index, kb) not in self._approximate
        fetch = k * _OVER_FETCH if exact else self._first_fetch(index, kb, k)
        checked = CheckedRows() if checked is None else checked
        short, fetched = -1, 0  # candidates of the last index lookup that gave fewer than it asked for; of this one
        while True:
            if exact:
                # Lists and maps only: the record as decoded, without `data()`'s walk of every hit.
                found = await self.read_record(
                    cy.EXACT_VECTOR_SEARCH[kind], kb=kb, vector=query, fetch=fetch, exact_limit=limit, **vectors
                )
                if found["total"] > limit:  # too many to score each: the index, from now on
                    self._approximate.add((index, kb))
                    exact, fetch = False, self._first_fetch(index, kb, k)
                    continue
                hits = found["rows"]
                exhausted = len(hits) < fetch  # every node of the kb was scored
            else:
                found = await self.read_record(
                    cy.QUERY_VECTOR_INDEX, index=index, kb=kb, vector=query, k=fetch, fetch=fetch
                )
                hits, fetched = found["rows"], found["fetched"]
                # Fewer candidates than asked means either that the index has no more nodes or that
                # deleted nodes it still holds took places (measured: 122 of 128 in an index of
                # thousands): only a wider lookup that brings no more candidates shows it is exhausted.
                exhausted = fetched <= short
            if details is None:
                kept = [({"id": hit["id"]}, hit["score"]) for hit in hits]
            else:
                kept = await self._detailed_hits(hits, k, details, checked, kb=kb, **params)
            if len(kept) >= k or fetch >= _MAX_VECTOR_FETCH or exhausted:
                if not exact and fetched and len(hits) >= k:  # the kb's share among what was fetched
                    self._vector_shares[(index, kb)] = len(hits) / fetched
                return kept[:k]
            if not exact:
                short = fetched if fetched < fetch else -1
            fetch = min(_next_fetch(fetch, len(kept), k), _MAX_VECTOR_FETCH)

    async def text_hits(
        self,
        kb: str,
        query: str,
        k: int,
        details: LiteralString,
        *,
        checked: CheckedRows | None = None,
        **params: Any,
    ) -> list[tuple[dict[str, Any], float]]:
        """Top-k chunks of one kb for the Lucene `query` of the chunk full-text index, best first, as
        (row, score): only those `details` returns a row for (enabled chunks). The index is shared by the
        kbs, so the lookup widens (x4) while fewer than k of the kb's remain and a wider one can bring more."""
        validate_kb_id(kb)
        if k < 1:
            return []
        checked = CheckedRows() if checked is None else checked
        fetch = k * _OVER_FETCH
        while True:
            found = await self.read_record(
                cy.QUERY_CHUNK_TEXT_INDEX, index=cy.CHUNK_TEXT_INDEX, words=query, kb=kb, fetch=fetch
            )
            kept = await self._detailed_hits(found["rows"], k, details, checked, kb=kb, **params)
            if len(kept) >= k or found["fetched"] < fetch or fetch >= _MAX_VECTOR_FETCH:
                return kept[:k]
            fetch = min(fetch * _OVER_FETCH, _MAX_VECTOR_FETCH)

    def _first_fetch(self, index: str, kb: str, k: int) -> int:
        """k x `_OVER_FETCH`, divided by the kb's last share in this index: the same margin over what
        that share predicts k needs as a kb alone in the index gets."""
        share = self._vector_shares.get((index, kb), 1.0)
        return min(math.ceil(k * _OVER_FETCH / share), _MAX_VECTOR_FETCH)

    async def _detailed_hits(
        self,
        hits: list[dict[str, Any]],
        k: int,
        details: LiteralString,
        checked: CheckedRows,
        **params: Any,
    ) -> list[tuple[dict[str, Any], float]]:
        """The hits `details` returns a row for, best first, read in slices until k are found: first k and
        a quarter more (most hits are valid, and a chunk's details are its text: reading 4k of them cost
        a local search over half its store time), then x4 each. `checked` holds the rows of ids already
        read (or being read), across the widenings of one search and the searches that share it."""

        async def read(ids: list[str]) -> list[dict[str, Any]]:
            return await self.read_value(details, ids=ids, **params)

        kept: list[tuple[dict[str, Any], float]] = []
        position, step = 0, k + (k + 3) // 4
        while position < len(hits) and len(kept) < k:
            batch = hits[position : position + step]
            rows = await checked.rows([hit["id"] for hit in batch], read)
            kept += [(row, hit["score"]) for hit, row in zip(batch, rows, strict=True) if row is not None]
            position, step = position + len(batch), step * _OVER_FETCH
        return kept

    async def _reachable(self) -> bool:
        """Whether a fresh connection to the server succeeds within `_PROBE_TIMEOUT_S`."""
        try:
            await asyncio.wait_for(self._driver.verify_connectivity(), timeout=_PROBE_TIMEOUT_S)
        except (TimeoutError, Neo4jError, DriverError, OSError):
            return False
        return True

    # --- query helpers (statements must come from driftrag.store.cypher) -----------------------

    async def read(self, query: LiteralString, **params: Any) -> list[dict[str, Any]]:
        return await self._execute(query, params, neo4j.RoutingControl.READ)

    async def read_value(self, query: LiteralString, **params: Any) -> Any:
        """The first column of the one record a read returns, as the driver decoded it (bulk pages: no
        per-record or `data()` conversion cost)."""
        records = await self._execute(query, params, neo4j.RoutingControl.READ, convert=False)
        return records[0][0]

    async def read_record(self, query: LiteralString, **params: Any) -> dict[str, Any]:
        """The one record a read returns, its columns as the driver decoded them: no `data()` walk,
        which costs as much as the decoding for a large nested result made of maps and lists only."""
        record = await self.read_optional_record(query, **params)
        if record is None:
            raise BackendUnavailableError("Neo4j returned no record for a statement that always returns one")
        return record

    async def read_optional_record(self, query: LiteralString, **params: Any) -> dict[str, Any] | None:
        """The first record a read returns, as `read_record` gives it, or None when it returns none."""
        records = await self._execute(query, params, neo4j.RoutingControl.READ, convert=False)
        return dict(records[0].items()) if records else None

    async def read_streamed(
        self, query: LiteralString, on_record: Callable[[dict[str, Any]], None], **params: Any
    ) -> None:
        """Each record of a read handed to `on_record` as it arrives, its columns as the driver decoded
        them: a large answer sent as several records is shaped while Neo4j computes the rest. An error
        `on_record` raises stops the read and reaches the caller as raised. A failure the driver would
        retry is retried as a managed transaction only while no record has been handed over; after
        that it is a BackendUnavailableError (the caller's retry runs the read whole again)."""
        self.health.check()
        try:
            await in_clean_context(self._stream_records(query, _unformatted(params), on_record))
        except (ServiceUnavailable, SessionExpired, OSError) as exc:
            raise await self._lost(exc) from exc
        except AuthError as exc:
            raise self._refused(exc) from exc
        except ClientError:
            raise
        except Neo4jError as exc:
            raise BackendUnavailableError(f"Neo4j failed: {exc}") from exc
        self.health.succeeded()

    async def _stream_records(
        self, query: LiteralString, params: Mapping[str, Any], on_record: Callable[[dict[str, Any]], None]
    ) -> None:
        # As `_read_records`: one round trip, the managed writes' bookmarks, the driver's retries after.
        handed_over = False
        try:
            async with self._driver.session(
                database=self._database,
                default_access_mode=neo4j.READ_ACCESS,
                bookmark_manager=self._driver.execute_query_bookmark_manager,
            ) as session:
                result = await session.run(query, params)
                async for record in result:
                    handed_over = True
                    on_record(dict(record.items()))
                return
        except (TransientError, SessionExpired, ServiceUnavailable):
            if handed_over:
                raise
        records, _, _ = await self._driver.execute_query(
            query, parameters_=dict(params), database_=self._database, routing_=neo4j.RoutingControl.READ
        )
        for record in records:
            on_record(dict(record.items()))

    async def write(self, query: LiteralString, **params: Any) -> list[dict[str, Any]]:
        return await self._execute(query, params, neo4j.RoutingControl.WRITE)

    async def run_in_transactions(self, query: LiteralString, **params: Any) -> None:
        """Run a `CALL { … } IN TRANSACTIONS` statement, which needs an auto-commit transaction."""
        self.health.check()
        try:
            await in_clean_context(self._run_auto_commit(query, _unformatted(params)))
        except (ServiceUnavailable, SessionExpired, OSError) as exc:
            raise await self._lost(exc) from exc
        except AuthError as exc:
            raise self._refused(exc) from exc
        self.health.succeeded()

    async def _run_auto_commit(self, query: LiteralString, params: Mapping[str, Any]) -> None:
        # The managed calls' bookmarks: on a cluster, later reads see what this wrote.
        async with self._driver.session(
            database=self._database, bookmark_manager=self._driver.execute_query_bookmark_manager
        ) as session:
            result = await session.run(query, params)
            await result.consume()

    async def _execute(
        self, query: LiteralString, params: Mapping[str, Any], routing: neo4j.RoutingControl, convert: bool = True
    ) -> list[Any]:
        self.health.check()
        params = _unformatted(params)
        try:
            if routing == neo4j.RoutingControl.READ:
                records = await in_clean_context(self._read_records(query, params))
            else:
                records, _, _ = await in_clean_context(
                    self._driver.execute_query(
                        query, parameters_=dict(params), database_=self._database, routing_=routing
                    )
                )
        except (ServiceUnavailable, SessionExpired, OSError) as exc:
            raise await self._lost(exc) from exc
        except AuthError as exc:
            raise self._refused(exc) from exc
        except ClientError:
            raise
        except Neo4jError as exc:
            raise BackendUnavailableError(f"Neo4j failed: {exc}") from exc
        self.health.succeeded()
        return [record.data() for record in records] if convert else list(records)

    async def _read_records(self, query: LiteralString, params: Mapping[str, Any]) -> list[neo4j.Record]:
        """A read in one round trip: an auto-commit statement (RUN and PULL sent together), not a managed
        transaction, whose BEGIN ... COMMIT costs a second round trip and the server's transaction
        bookkeeping (measured: a trivial read 0.8 ms instead of 1.6, with half the CPU on both sides; a
        local search makes five reads). It shares the managed writes' bookmarks, so on a cluster it still
        sees what this process wrote. The driver does not retry auto-commit work, so a failure it would
        retry (a pooled connection the server closed, a cluster member leaving, a transient error) is run
        again as a managed transaction, with the driver's retries: no read is less robust than before."""
        try:
            async with self._driver.session(
                database=self._database,
                default_access_mode=neo4j.READ_ACCESS,
                bookmark_manager=self._driver.execute_query_bookmark_manager,
            ) as session:
                result = await session.run(query, params)
                return (await result.to_eager_result()).records
        except (TransientError, SessionExpired, ServiceUnavailable):
            records, _, _ = await self._driver.execute_query(
                query, parameters_=dict(params), database_=self._database, routing_=neo4j.RoutingControl.READ
            )
            return records

    def _refused(self, exc: AuthError) -> BackendUnavailableError:
        # Also after connecting: a password changed on the server meanwhile refuses the next connection.
        username = self._settings.neo4j_username
        return BackendUnavailableError(
            f"Neo4j at {self.uri} refused the credentials of NEO4J_USERNAME={username!r}: {exc}"
        )

    async def _lost(self, exc: Exception) -> BackendUnavailableError:
        # The driver's message spans lines; one line of it is enough for a log or an error message.
        reason = " ".join(str(exc).split())[:300] or type(exc).__name__
        # One dropped connection is not a lost server: only when a fresh connection fails too is the
        # server known down (the caller's retry then fails at once); otherwise the retry goes through.
        if not await self._reachable():
            self.health.failed(reason)
        return BackendUnavailableError(f"Neo4j became unreachable at {self.uri}: {reason}")


def _next_fetch(fetch: int, kept: int, k: int) -> int:
    """The next over-fetch: x`_OVER_FETCH`, or more when the share kept so far says k needs more (an
    index shared with bigger or nearer kbs keeps few per round: one wider round, not several)."""
    expected = fetch * k * 2 // kept if kept else fetch * _OVER_FETCH * _OVER_FETCH
    return max(fetch * _OVER_FETCH, expected)


def _schema_object_name(statement: str) -> str:
    """The name a `CREATE ... <name> IF NOT EXISTS` statement gives its constraint or index."""
    match = _SCHEMA_NAME.search(statement)
    if match is None:
        raise ValueError(f"schema statement without a driftrag_ name: {statement[:80]}")
    return match.group(0)


_SCHEMA_NAME = re.compile(r"\bdriftrag_\w+")
_EQUIVALENT_SCHEMA_RULE = "Neo.ClientError.Schema.EquivalentSchemaRuleAlreadyExists"
