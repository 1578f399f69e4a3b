"""`DriftRAG`: the small Python API for notebooks and scripts.

    rag = DriftRAG.from_env()            # settings from the environment; local Neo4j when NEO4J_URI is unset
    await rag.connect()                  # starts the local Neo4j if needed, checks the server, creates the schema
    await rag.ingest("alice", paths=["data/sample"])
    result = await rag.drift("alice", "Who made the light fail?", on_progress=print)
    await rag.close()

Every method is a coroutine, so it works inside a running event loop (Jupyter's top-level `await`);
scripts wrap one `main()` in `asyncio.run`. Results are pydantic models that render as Markdown in
Jupyter. Constructing the object does no I/O; everything is passed in or built from `settings`.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from driftrag.ingestion.loading import collect_paths
from driftrag.ingestion.run import IngestionDeps, IngestionResult, IngestRequest, Progress, TextInput
from driftrag.ingestion.tasks import ChatModel
from driftrag.providers.factory import Providers, build_providers
from driftrag.search.deps import QueryDeps
from driftrag.search.drift.models import DriftProgress, DriftResult
from driftrag.search.graph_search import GraphSearchResponse, graph_search
from driftrag.search.models import SearchResult
from driftrag.settings import Settings
from driftrag.store.graph import FailedChunk, GraphStore, KbCounts
from driftrag.store.graph_search import GraphSearchStore
from driftrag.store.locks import KbLock
from driftrag.store.neo4j_store import Neo4jStore, ServerInfo

T = TypeVar("T")
ProgressHandler = Callable[[Any], Awaitable[None] | None]


class DriftRAG:
    """One knowledge-graph engine: a Neo4j store, the model providers, and the workflows over them."""

    def __init__(
        self,
        settings: Settings,
        *,
        store: Neo4jStore | None = None,
        providers: Providers | None = None,
        chat: ChatModel | None = None,
    ) -> None:
        """`chat` replaces the providers' chat model (a local server, a test double); `store` and
        `providers` default to the ones `settings` describe."""
        self.settings = settings
        self.store = store or Neo4jStore.from_settings(settings)
        self.providers = providers or build_providers(settings)
        self._chat = chat
        self._connected: ServerInfo | None = None

    @classmethod
    def from_env(cls, **overrides: Any) -> DriftRAG:
        """Settings from the environment (and `.env`), with keyword overrides of any settings field."""
        return cls(Settings(**overrides))

    @property
    def mode(self) -> str:
        """`openai` or `offline` (extractive, no model API)."""
        return "openai" if self._chat is not None else self.providers.mode

    async def connect(self, *, start_local: bool = True) -> ServerInfo:
        """Reach Neo4j (starting the project's local server when NEO4J_URI is unset) and create the schema."""
        if self.settings.neo4j_uri is None and start_local:
            from driftrag.local_neo4j import LocalNeo4j

            await asyncio.to_thread(LocalNeo4j(self.settings).start)
        self._connected = await self.store.connect()
        await self.store.ensure_schema(self.providers.embedding_dimension)
        return self._connected

    async def close(self) -> None:
        await self.store.close()

    async def __aenter__(self) -> DriftRAG:
        await self.connect()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # --- ingestion -----------------------------------------------------------------------------------

    async def ingest(
        self,
        kb: str,
        *,
        paths: Sequence[str | Path] = (),
        texts: dict[str, str] | None = None,
        on_progress: ProgressHandler | None = None,
    ) -> IngestionResult:
        """Ingest files or folders (`.txt`/`.md`) and/or `{title: text}`; `on_progress` gets `Progress` events."""
        from driftrag.workflows.ingestion import IngestionWorkflow, IngestProgress, IngestStart

        request = IngestRequest(
            kb=kb,
            paths=collect_paths([Path(p) for p in paths]),
            texts=[TextInput(title=title, text=text) for title, text in (texts or {}).items()],
        )
        deps = IngestionDeps.from_providers(self.settings, self.store, self.providers, self._chat)
        async with self.kb_lock(kb):
            handler = IngestionWorkflow(deps).run(start_event=IngestStart(request=request))
            return await _streamed(handler, IngestProgress, "progress", on_progress)

    def kb_lock(self, kb: str) -> KbLock:
        """The kb's write lock in Neo4j: writers of one kb in any process take turns (ingest, deletes)."""
        return KbLock(self.store, kb, ttl_s=self.settings.kb_lock_ttl_s)

    async def delete_document(self, kb: str, document_id: str) -> KbCounts:
        """Remove one document; entities and relationships left without sources go, the rest is rebuilt."""
        from driftrag.ingestion.indexing import delete_document
        from driftrag.ingestion.run import no_progress

        deps = IngestionDeps.from_providers(self.settings, self.store, self.providers, self._chat)
        async with self.kb_lock(kb):
            await delete_document(deps, kb, document_id, no_progress)
        return await self.stats(kb)

    async def delete_kb(self, kb: str) -> None:
        async with self.kb_lock(kb):
            await GraphStore(self.store).delete_kb(kb)

    async def stats(self, kb: str) -> KbCounts:
        return await GraphStore(self.store).counts(kb)

    async def documents(self, kb: str) -> list[dict[str, Any]]:
        return await GraphStore(self.store).documents(kb)

    async def set_chunks_enabled(self, kb: str, chunk_ids: Sequence[str], enabled: bool) -> int:
        """Disable (or re-enable) chunks as sources of every search; returns how many exist."""
        return await GraphSearchStore(self.store).set_chunks_enabled(kb, list(chunk_ids), enabled)

    async def graph_enabled(self, kb: str) -> bool:
        """Whether graph search may run on the kb; raises KnowledgeBaseNotFoundError for an unknown kb."""
        return await GraphSearchStore(self.store).graph_enabled(kb)

    async def set_graph_enabled(self, kb: str, enabled: bool) -> None:
        """Allow or refuse graph search on the kb (refused searches raise GraphDisabledError)."""
        await GraphSearchStore(self.store).set_graph_enabled(kb, enabled)

    async def entities(self, kb: str) -> list[dict[str, Any]]:
        """Every entity: id, name, type, descriptions, summary, source chunk ids."""
        return await GraphStore(self.store).entities(kb)

    async def relationships(self, kb: str) -> list[dict[str, Any]]:
        """Every relationship: id, source and target ids, type, descriptions, summary, source chunk ids."""
        return await GraphStore(self.store).relationships(kb)

    async def communities(self, kb: str) -> list[dict[str, Any]]:
        """Every community with its level, members and report (title, summary, rating, findings)."""
        return await GraphStore(self.store).communities(kb)

    async def graph_view(self, kb: str, *, community_id: str | None = None, max_nodes: int | None = None):
        """The kb (or one community) as a `GraphView`: render with `driftrag.views` (Mermaid, HTML, GraphML)."""
        from driftrag.store.views import GraphViewStore

        return await GraphViewStore(self.store).read_view(kb, community_id=community_id, max_nodes=max_nodes)

    async def failed_chunks(self, kb: str) -> list[FailedChunk]:
        """Chunks whose extraction failed, with the reason."""
        return await GraphStore(self.store).failed_chunks(kb)

    # --- queries --------------------------------------------------------------------------------------

    def query_deps(self) -> QueryDeps:
        return QueryDeps.from_providers(self.settings, self.store, self.providers, self._chat)

    async def drift(self, kb: str, question: str, *, on_progress: ProgressHandler | None = None) -> DriftResult:
        """DRIFT search; `on_progress` gets each `DriftProgress` (HyDE, communities, primer, searches, rounds)."""
        from driftrag.workflows.drift import DriftProgressEvent, DriftStart, DriftWorkflow

        handler = DriftWorkflow(self.query_deps()).run(start_event=DriftStart(kb=kb, question=question))
        return await _streamed(handler, DriftProgressEvent, "progress", on_progress)

    async def local(self, kb: str, question: str) -> SearchResult:
        from driftrag.search.local import local_search

        return await local_search(self.query_deps(), kb, question)

    async def basic(self, kb: str, question: str) -> SearchResult:
        from driftrag.search.basic import basic_search

        return await basic_search(self.query_deps(), kb, question)

    async def entity_search(self, kb: str, question: str) -> SearchResult:
        from driftrag.search.entity import entity_search

        return await entity_search(self.query_deps(), kb, question)

    async def query(self, kb: str, question: str, *, mode: str = "drift") -> DriftResult | SearchResult:
        """One of `drift`, `local`, `entity`, `basic`."""
        modes: dict[str, Callable[[str, str], Awaitable[DriftResult | SearchResult]]] = {
            "drift": self.drift,
            "local": self.local,
            "entity": self.entity_search,
            "basic": self.basic,
        }
        if mode not in modes:
            raise ValueError(f"unknown mode {mode!r}; choose one of {sorted(modes)}")
        return await modes[mode](kb, question)

    async def graph_search(
        self, kb: str, query: str, *, max_seeds: int | None = None, max_rows: int | None = None
    ) -> GraphSearchResponse:
        """The bounded one-hop read contract: no model call, no caller Cypher."""
        return await graph_search(self.store, self.settings, kb, query, max_seeds=max_seeds, max_rows=max_rows)


async def _streamed(handler, event_type: type, field: str, on_progress: ProgressHandler | None):
    """Forward a workflow's progress events to a sync or async callback, then return its result."""
    async for event in handler.stream_events():
        if on_progress is not None and isinstance(event, event_type):
            outcome = on_progress(getattr(event, field))
            if inspect.isawaitable(outcome):
                await outcome
    return await handler


__all__ = ["DriftProgress", "DriftRAG", "Progress"]
