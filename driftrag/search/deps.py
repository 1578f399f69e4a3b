"""What the query modes need, wired once by the composition root (`driftrag.composition`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from driftrag.models.storage import Stores
from driftrag.providers.usage import UsageTracker
from driftrag.settings import Settings

# Named in annotations only (the budget loads the tokenizer module): an engine that never queries skips them.
if TYPE_CHECKING:
    from driftrag.providers.embeddings import Embedder
    from driftrag.providers.limits import CallLimits
    from driftrag.search.budget import QueryBudget
    from driftrag.search.deadline import QueryDeadline
    from driftrag.search.tasks import QueryTasks


@dataclass(frozen=True)
class QueryDeps:
    settings: Settings
    stores: Stores
    embedder: Embedder
    usage: UsageTracker
    # The query tasks of one query, spending from its budget (the offline tasks make no calls).
    task_factory: Callable[[QueryBudget], QueryTasks]
    # The model calls' concurrency and time-out (asking the server for its slots once); None without a
    # model client of driftrag's (offline, or a chat model given as it is).
    call_limits: Callable[[], Awaitable[CallLimits]] | None = None
    # One query's deadline, set by the query front (`driftrag.workflows.query`) on its copy of the deps.
    deadline: QueryDeadline | None = None

    def budget(self) -> QueryBudget:
        """A fresh per-query budget (`query_max_llm_calls`, `query_max_prompt_tokens`)."""
        from driftrag.search.budget import QueryBudget

        return QueryBudget(
            max_calls=self.settings.query_max_llm_calls, max_prompt_tokens=self.settings.query_max_prompt_tokens
        )

    def tasks(self, budget: QueryBudget) -> QueryTasks:
        return self.task_factory(budget)
