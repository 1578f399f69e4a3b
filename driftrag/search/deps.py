"""What the query modes need, wired once: settings, store, embedder, usage, and the model tasks."""

from __future__ import annotations

from dataclasses import dataclass, field

from llama_index.core.base.embeddings.base import BaseEmbedding

from driftrag.ingestion.tasks import ChatModel
from driftrag.offline.nlp import LanguageResources
from driftrag.prompts.registry import PromptRegistry
from driftrag.providers.factory import Providers
from driftrag.providers.usage import UsageTracker
from driftrag.search.budget import BudgetedChat, QueryBudget
from driftrag.search.tasks import QueryTasks
from driftrag.settings import Settings
from driftrag.store.neo4j_store import Neo4jStore


@dataclass(frozen=True)
class QueryDeps:
    settings: Settings
    store: Neo4jStore
    embedder: BaseEmbedding
    usage: UsageTracker
    chat: ChatModel | None = None
    prompts: PromptRegistry | None = None
    # The offline tasks' language data (parsed on first use), shared by every query of these deps.
    language: LanguageResources = field(default_factory=LanguageResources)

    @classmethod
    def from_providers(
        cls, settings: Settings, store: Neo4jStore, providers: Providers, chat: ChatModel | None = None
    ) -> QueryDeps:
        """Model-backed when the providers (or `chat`, for tests and benchmarks) have a model, else offline."""
        return cls(
            settings=settings,
            store=store,
            embedder=providers.embedder,
            usage=providers.usage,
            chat=chat or providers.model_client,
            prompts=PromptRegistry.load(),
        )

    @property
    def extractive(self) -> bool:
        return self.chat is None

    def budget(self) -> QueryBudget:
        return QueryBudget(
            max_calls=self.settings.drift_max_llm_calls, max_prompt_tokens=self.settings.drift_max_prompt_tokens
        )

    def tasks(self, budget: QueryBudget) -> QueryTasks:
        """The query tasks of one query, spending from its budget (the offline tasks make no calls)."""
        if self.chat is None:
            from driftrag.offline.query_tasks import offline_query_tasks

            return offline_query_tasks(self.settings, self.language)
        from driftrag.search.llm_tasks import llm_query_tasks

        return llm_query_tasks(BudgetedChat(self.chat, budget), self.prompts or PromptRegistry.load(), self.settings)
