"""Basic vector search over chunks (the evaluation baseline), and the answering step every mode shares.

    result = await basic_search(deps, "alice", "Who is the Cheshire Cat?")

The question's embedding retrieves the top `basic_top_k` enabled chunks; they are rendered within
`local_context_tokens` (the one context budget of the answering modes) and answered from.
"""

from __future__ import annotations

import time

from driftrag.errors import GraphDisabledError
from driftrag.providers.usage import Usage
from driftrag.search.budget import QueryBudget
from driftrag.search.context import ContextItem, ContextPart, ContextSection, assemble_context
from driftrag.search.deps import QueryDeps
from driftrag.search.models import SearchContext, SearchMode, SearchResult, Source
from driftrag.search.question import check_question
from driftrag.search.tasks import QueryTasks
from driftrag.store.graph_search import GraphSearchStore
from driftrag.store.identifiers import validate_kb_id
from driftrag.store.search import SearchStore


class QueryRun:
    """What every search records from its start: the clock, the usage snapshot, the tasks it spends with."""

    def __init__(
        self, deps: QueryDeps, kb: str, question: str, tasks: QueryTasks | None, budget: QueryBudget | None
    ) -> None:
        self.kb = validate_kb_id(kb)
        check_question(question, deps.settings)
        self.deps = deps
        self.question = question
        self.started = time.monotonic()
        self.usage_start: Usage = deps.usage.snapshot()
        # Given tasks already spend from their own budget; `budget` only matters when tasks are built here.
        self.tasks = tasks if tasks is not None else deps.tasks(budget if budget is not None else deps.budget())

    async def ensure_available(self, mode: SearchMode) -> None:
        """An unknown kb is an error, not an empty answer; graph modes refuse a kb whose graph is disabled."""
        if not await GraphSearchStore(self.deps.store).graph_enabled(self.kb) and mode != "basic":
            raise GraphDisabledError(
                f"the graph of knowledge base {self.kb!r} is disabled, so {mode} search cannot run; enable it "
                f"with `driftrag graph-enable --kb {self.kb}` (basic search still works)"
            )

    async def answer(self, mode: SearchMode, context: SearchContext, *, max_follow_ups: int = 0) -> SearchResult:
        """Answer from `context`; keep only cited ids that the context holds (none are invented)."""
        payload = await self.tasks.answerer.answer(self.question, context, max_follow_ups=max_follow_ups)
        known = context.ids()
        follow_ups = [q for q in dict.fromkeys(q.strip() for q in payload.follow_up_queries) if q]
        return SearchResult(
            mode=mode,
            kb=self.kb,
            question=self.question,
            answer=payload.answer,
            score=payload.score,
            follow_up_queries=follow_ups[: max(max_follow_ups, 0)],
            source_ids=[i for i in dict.fromkeys(payload.citations) if i in known],
            context=context,
            extractive=self.tasks.extractive,
            usage=self.deps.usage.since(self.usage_start),
            seconds=round(time.monotonic() - self.started, 3),
        )


def chunks_context(chunks: list[Source], budget_tokens: int, heading: str = "Sources") -> SearchContext:
    """Chunks in the given (similarity) order under one heading, within the budget."""
    section = ContextSection("text", 1.0, [ContextPart(heading, [ContextItem(chunk) for chunk in chunks])])
    return assemble_context([section], budget_tokens)


async def retrieve_basic(deps: QueryDeps, kb: str, question: str) -> SearchContext:
    """The top `basic_top_k` enabled chunks by similarity to the question, as a context."""
    vector = await deps.embedder.aget_query_embedding(question)
    chunks = await SearchStore(deps.store).search_chunks(kb, vector, deps.settings.basic_top_k)
    return chunks_context(chunks, deps.settings.local_context_tokens)


async def basic_search(
    deps: QueryDeps,
    kb: str,
    question: str,
    *,
    tasks: QueryTasks | None = None,
    budget: QueryBudget | None = None,
) -> SearchResult:
    run = QueryRun(deps, kb, question, tasks, budget)
    await run.ensure_available("basic")
    return await run.answer("basic", await retrieve_basic(deps, run.kb, question))
