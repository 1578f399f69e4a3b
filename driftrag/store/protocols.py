"""The storage seam: one small protocol per store role, and `Stores`, the bundle the deps carry.

Ingestion, the query modes and the facade use these roles only; the Neo4j classes (`Neo4jStore`,
`DocumentWriter`, `GraphStore`, `SearchStore`, `GraphSearchStore`, `GraphViewStore`, `KbLocks`) are
the one implementation, bundled by `Stores.neo4j`. A second backend would implement the same
protocols and a constructor beside `Stores.neo4j`; nothing outside `driftrag.store` and the composition root names
a store class.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from driftrag.models.graph import (
    Chunk,
    Community,
    CommunityReport,
    EntityChunkPage,
    ExtractConfig,
    ExtractionOutcome,
    FailedChunk,
    KbCounts,
    KbProfile,
    KbSummary,
    MergedEntity,
    MergedRelationship,
    MergeResult,
    RelationshipEdgePage,
    SourceDocument,
    StoredEntityKey,
    StoredState,
)
from driftrag.models.search import (
    ChunkRow,
    CommunityRow,
    EntityRow,
    OneHopCounts,
    OneHopPart,
    RelationshipRow,
    ReportRow,
    Source,
)

if TYPE_CHECKING:
    from driftrag.store.neo4j_store import Neo4jStore, ServerInfo, VectorIndexInfo
    from driftrag.store.search import SeenRows
    from driftrag.store.views import GraphView

NodeKind = Literal["chunk", "entity", "community"]


@runtime_checkable
class Database(Protocol):
    """The server: connection, checks and schema."""

    async def connect(self) -> ServerInfo: ...
    async def server_info(self) -> ServerInfo: ...
    async def ensure_schema(self, embedding_dimension: int) -> list[VectorIndexInfo]: ...
    async def vector_indexes(self) -> list[VectorIndexInfo]: ...
    async def reset_vector_indexes(self) -> None: ...
    async def close(self) -> None: ...


@runtime_checkable
class DocumentStorage(Protocol):
    """Writes of documents, chunks and embeddings."""

    async def upsert_document(self, document: SourceDocument, chunks: Sequence[Chunk]) -> None: ...
    async def set_embeddings(self, kind: NodeKind, kb: str, rows: Sequence[tuple[str, list[float]]]) -> None: ...


@runtime_checkable
class GraphStorage(Protocol):
    """The knowledge graph of a kb: documents, extractions, entity layer, communities, counts."""

    async def set_extract_config(self, kb: str, config: ExtractConfig) -> None: ...
    async def extract_config(self, kb: str) -> ExtractConfig | None: ...
    async def is_stale(self, kb: str) -> bool: ...
    async def mark_stale(self, kb: str, stale: bool) -> None: ...
    async def is_entity_layer_stale(self, kb: str) -> bool: ...
    async def mark_entity_layer_current(self, kb: str) -> None: ...
    async def documents_by_source(self, kb: str, source: str) -> list[dict[str, Any]]: ...
    async def documents(self, kb: str) -> list[dict[str, Any]]: ...
    async def delete_document(
        self, kb: str, document_id: str, listing: tuple[Sequence[str], Sequence[str]] | None = None
    ) -> None: ...
    async def delete_kb(self, kb: str) -> None: ...
    async def chunks_to_extract(self, kb: str, document_id: str) -> list[Chunk]: ...
    async def save_extractions(self, kb: str, outcomes: Sequence[ExtractionOutcome]) -> None: ...
    async def extractions(self, kb: str) -> list[ExtractionOutcome]: ...
    async def failed_chunks(self, kb: str) -> list[FailedChunk]: ...
    async def chunk_texts(self, kb: str, ids: Sequence[str]) -> dict[str, str]: ...
    async def entity_state(self, kb: str) -> dict[str, StoredState]: ...
    async def relationship_state(self, kb: str) -> dict[str, StoredState]: ...
    async def replace_entity_layer(
        self,
        kb: str,
        entities: Sequence[MergedEntity],
        relationships: Sequence[MergedRelationship],
        *,
        total_chunks: int,
    ) -> None: ...
    async def upsert_entities(self, kb: str, entities: Sequence[MergedEntity]) -> None: ...
    async def upsert_relationships(self, kb: str, relationships: Sequence[MergedRelationship]) -> None: ...
    def relationship_edge_pages(self, kb: str, page_size: int = ...) -> AsyncIterator[RelationshipEdgePage]: ...
    def entity_chunk_pages(self, kb: str, page_size: int = ...) -> AsyncIterator[EntityChunkPage]: ...
    async def document_extractions(self, kb: str, document_id: str) -> list[ExtractionOutcome]: ...
    async def chunk_extractions(self, kb: str, chunk_ids: Sequence[str]) -> list[ExtractionOutcome]: ...
    async def extracted_chunk_count(self, kb: str) -> int: ...
    async def entity_keys(self, kb: str, page_size: int = ...) -> list[StoredEntityKey]: ...
    async def relationships_of(self, kb: str, entity_ids: Sequence[str]) -> set[str]: ...
    async def relationship_state_of(self, kb: str, relationship_ids: Sequence[str]) -> dict[str, StoredState]: ...
    async def update_entity_layer(
        self,
        kb: str,
        entities: Sequence[MergedEntity],
        relationships: Sequence[MergedRelationship],
        removed_entity_ids: Sequence[str],
        removed_relationship_ids: Sequence[str],
        previous_sources: Mapping[str, Sequence[str]] | None = None,
    ) -> None: ...
    async def set_pmi_chunks(self, kb: str, total_chunks: int) -> None: ...
    async def entity_layer(self, kb: str, page_size: int = ...) -> MergeResult: ...
    async def community_state(self, kb: str) -> dict[str, StoredState]: ...
    async def community_structures(self, kb: str) -> dict[str, str | None]: ...
    async def community_state_of(self, kb: str, ids: Sequence[str]) -> dict[str, StoredState]: ...
    async def community_reports(self, kb: str, ids: Sequence[str]) -> dict[str, CommunityReport]: ...
    async def upsert_communities(
        self,
        kb: str,
        communities: Sequence[Community],
        reports: dict[str, CommunityReport],
        context_hashes: dict[str, str],
    ) -> None: ...
    async def replace_community_links(
        self, kb: str, communities: Sequence[Community], finest_by_entity: dict[str, str]
    ) -> None: ...
    async def entities_by_id(self, kb: str, ids: Sequence[str], *, sources: bool = ...) -> list[MergedEntity]: ...
    async def entity_state_of(self, kb: str, ids: Sequence[str]) -> dict[str, StoredState]: ...
    async def relationships_by_id(
        self, kb: str, ids: Sequence[str], *, sources: bool = ...
    ) -> list[MergedRelationship]: ...
    async def replace_communities(
        self,
        kb: str,
        communities: Sequence[Community],
        reports: dict[str, CommunityReport],
        context_hashes: dict[str, str],
        finest_by_entity: dict[str, str],
    ) -> None: ...
    async def chunks_without_embedding(
        self, kb: str, document_ids: Sequence[str] | None = None
    ) -> list[tuple[str, str]]: ...
    async def set_embedding_hashes(self, kind: str, kb: str, hashes: dict[str, str]) -> None: ...
    async def chunks(self, kb: str) -> list[dict[str, Any]]: ...
    async def entities(self, kb: str) -> list[dict[str, Any]]: ...
    async def relationships(self, kb: str) -> list[dict[str, Any]]: ...
    async def communities(self, kb: str) -> list[dict[str, Any]]: ...
    async def counts(self, kb: str) -> KbCounts: ...
    async def set_profile(self, kb: str, profile: KbProfile) -> None: ...
    async def list_kbs(self) -> list[KbSummary]: ...


@runtime_checkable
class SearchStorage(Protocol):
    """The reads of the query modes: vector searches and the graph around entities (enabled chunks only)."""

    async def search_chunks(
        self, kb: str, vector: Sequence[float], k: int, *, seen: SeenRows | None = None
    ) -> list[Source]: ...
    async def search_chunks_text(self, kb: str, text: str, k: int, *, seen: SeenRows | None = None) -> list[Source]: ...
    async def search_entities(
        self, kb: str, vector: Sequence[float], k: int, *, seen: SeenRows | None = None
    ) -> list[Source]: ...
    async def search_communities(
        self, kb: str, vector: Sequence[float], k: int, min_rating: float, *, seen: SeenRows | None = None
    ) -> list[Source]: ...
    async def top_rated_report(self, kb: str) -> Source | None: ...
    async def entity_chunks(
        self, kb: str, entity_ids: Sequence[str], limit: int, *, order: Literal["mentions", "rank"] = "mentions"
    ) -> list[ChunkRow]: ...
    async def entity_communities(self, kb: str, entity_ids: Sequence[str], limit: int) -> list[CommunityRow]: ...
    async def relationships_among(self, kb: str, entity_ids: Sequence[str], limit: int) -> list[RelationshipRow]: ...
    async def neighbour_relationships(
        self, kb: str, entity_ids: Sequence[str], limit: int
    ) -> list[RelationshipRow]: ...
    async def match_entity_names(self, kb: str, names: Sequence[str], limit: int) -> list[EntityRow]: ...
    async def entity_neighbours(self, kb: str, entity_ids: Sequence[str], limit: int) -> list[EntityRow]: ...
    async def community_reports(self, kb: str, vector: Sequence[float]) -> list[ReportRow]: ...
    async def community_chunks(
        self, kb: str, community_ids: Sequence[str], vector: Sequence[float], per_community: int
    ) -> dict[str, list[Source]]: ...
    async def community_entities(self, kb: str, community_ids: Sequence[str], limit: int) -> list[EntityRow]: ...


@runtime_checkable
class GraphSearchStorage(Protocol):
    """The bounded one-hop read, and the switches that decide what every search may read."""

    async def graph_enabled(self, kb: str) -> bool: ...
    async def one_hop(
        self,
        kb: str,
        query: str,
        *,
        max_seeds: int,
        max_rows: int,
        on_part: Callable[[OneHopPart], None],
        max_source_ids: int = ...,
        count_cap: int = ...,
    ) -> OneHopCounts: ...
    async def set_chunks_enabled(self, kb: str, chunk_ids: Iterable[str], enabled: bool) -> int: ...
    async def set_graph_enabled(self, kb: str, enabled: bool) -> None: ...


@runtime_checkable
class ViewStorage(Protocol):
    """The graph as a view (Mermaid, HTML, GraphML)."""

    async def read_view(
        self, kb: str, *, community_id: str | None = None, max_nodes: int | None = None
    ) -> GraphView: ...


@runtime_checkable
class WriteLocks(Protocol):
    """Writers of one kb across processes: exclusive (deletes, the kb-wide rebuild) or `shared` (the
    per-document part of ingestion, many at once); `on_wait` hears once that it waits."""

    def hold(
        self, kb: str, *, ttl_s: float, on_wait: Callable[[str], None] | None = None, shared: bool = False
    ) -> AbstractAsyncContextManager[Any]: ...


@dataclass(frozen=True)
class Stores:
    """Every store role of one backend; the deps and the facade carry this."""

    database: Database
    documents: DocumentStorage
    graph: GraphStorage
    search: SearchStorage
    graph_search: GraphSearchStorage
    views: ViewStorage
    locks: WriteLocks

    @classmethod
    def neo4j(cls, store: Neo4jStore) -> Stores:
        """The Neo4j implementation of every role, over one driver."""
        from driftrag.store.documents import DocumentWriter
        from driftrag.store.graph import GraphStore
        from driftrag.store.graph_search import GraphSearchStore
        from driftrag.store.locks import KbLocks
        from driftrag.store.search import SearchStore
        from driftrag.store.views import GraphViewStore

        return cls(
            database=store,
            documents=DocumentWriter(store),
            graph=GraphStore(store),
            search=SearchStore(store),
            graph_search=GraphSearchStore(store),
            views=GraphViewStore(store),
            locks=KbLocks(store),
        )
