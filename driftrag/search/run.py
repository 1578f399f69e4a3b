"""`QueryRun`: what every query of every mode shares, from its start to its result.

- validation: the kb id and the question (non-empty, at most `max_question_tokens`), before any I/O;
- the per-query budget (`query_max_llm_calls`, `query_max_prompt_tokens`) and the tasks spending from it;
- the guard: an unknown kb is an error, and graph modes refuse a kb whose graph is disabled;
- the one retry policy of query steps (`retrying`): transient failures only (Neo4j, the model), never an
  exhausted budget or a bad request, `query_step_retries` times with exponential backoff;
- the accounting of its result: model calls, prompt and completion tokens from the budget, usage, seconds,
  and `degraded`: what its tasks tolerated or replaced, and whether the final answer is grounded.

An answer the model keeps getting wrong is not a transient failure: the tasks re-ask it once themselves
and then fall back (`driftrag.search.llm_tasks`), so `retrying` does not ask the same prompt again.

The whole query's time-out is the workflow's (`driftrag.workflows.query`), its `deadline` here
(`driftrag.search.deadline`).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, TypeVar

from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential

from driftrag.errors import (
    BackendUnavailableError,
    EmbeddingDimensionMismatchError,
    GraphDisabledError,
    ModelError,
    PromptTooLongError,
)
from driftrag.models.identifiers import validate_kb_id
from driftrag.models.search import Source
from driftrag.providers.json_answer import InvalidModelOutput
from driftrag.providers.usage import Usage
from driftrag.search.budget import BudgetExhausted, QueryBudget
from driftrag.search.degenerate import degenerate
from driftrag.search.deps import QueryDeps
from driftrag.search.grounding import ungrounded
from driftrag.search.models import SearchContext, SearchResult
from driftrag.search.question import check_question
from driftrag.search.streaming import AnswerStream
from driftrag.settings import Settings

T = TypeVar("T")
RETRY_DELAY_S = 0.5
MAX_RETRY_DELAY_S = 5.0


def is_transient(error: BaseException) -> bool:
    return isinstance(error, ModelError | BackendUnavailableError) and not isinstance(
        error, BudgetExhausted | GraphDisabledError | InvalidModelOutput | PromptTooLongError
    )


class QueryRun:
    """One query: `mode` names it in results and messages; `uses_graph` decides the disabled-graph guard.

    `budget` lets a caller share one budget between runs (tests); by default each run has its own.
    `stream` is where the query's final answer is written as it is produced (`driftrag.search.streaming`),
    when the caller streams: a mode passes it to the task that writes its final answer.
    """

    def __init__(
        self,
        deps: QueryDeps,
        mode: str,
        kb: str,
        question: str,
        *,
        uses_graph: bool = True,
        budget: QueryBudget | None = None,
        stream: AnswerStream | None = None,
    ) -> None:
        self.kb = validate_kb_id(kb)
        check_question(question, deps.settings)
        self.deps = deps
        self.mode = mode
        self.question = question
        self.uses_graph = uses_graph
        self.stream = stream
        self.started = time.monotonic()
        # Set by the query front; None when a mode's search is driven directly (tests).
        self.deadline = deps.deadline
        self.usage_start: Usage = deps.usage.snapshot()
        self.budget = budget if budget is not None else deps.budget()
        self._calls_start, self._tokens_start = self.budget.calls, self.budget.prompt_tokens
        self._completion_start = self.budget.completion_tokens
        self.tasks = deps.tasks(self.budget)

    @property
    def settings(self) -> Settings:
        return self.deps.settings

    async def ensure_available(self) -> None:
        """KnowledgeBaseNotFoundError for an unknown kb; EmbeddingDimensionMismatchError for a kb embedded by
        another embedder; GraphDisabledError for a graph mode on a disabled graph."""
        enabled = await self.deps.stores.graph_search.graph_enabled(self.kb)
        space = await self.deps.stores.database.vector_space(self.kb)
        embedder = self.deps.embedder.model_name
        if space.embedder is not None and space.embedder != embedder:
            raise EmbeddingDimensionMismatchError(
                f"knowledge base {self.kb!r} holds vectors of {space.embedder}; this engine embeds questions with "
                f"{embedder}: query it with its own embedder (or reset its vectors and ingest it again)"
            )
        if self.uses_graph and not enabled:
            raise GraphDisabledError(
                f"the graph of knowledge base {self.kb!r} is disabled, so {self.mode} search cannot run; enable "
                f"it with `driftrag graph-enable --kb {self.kb}` (basic search still works)"
            )

    async def retrying(self, call: Callable[[], Awaitable[T]]) -> T:
        """`call`, tried again up to `query_step_retries` times while it fails transiently (waits 0.5, 1, 2,
        4, 5, 5… s)."""
        async for attempt in AsyncRetrying(
            stop=stop_after_attempt(self.settings.query_step_retries + 1),
            wait=wait_exponential(multiplier=RETRY_DELAY_S, max=MAX_RETRY_DELAY_S),
            retry=retry_if_exception(is_transient),
            reraise=True,
        ):
            with attempt:  # a lambda returning a coroutine: tenacity would not await it when called directly
                return await call()
        raise AssertionError("unreachable")  # reraise=True: the last failure propagates

    async def answer(
        self,
        context: SearchContext,
        *,
        question: str | None = None,
        mode: str | None = None,
        max_follow_ups: int = 0,
        final: bool = False,
    ) -> SearchResult:
        """Answer `question` (default: the run's) from `context`; only cited ids the context holds are kept.
        A `question` other than the run's is a step towards it: the answerer also sees the run's question.
        The `final` answer of the query goes to the run's stream as it is written."""
        question = question if question is not None else self.question
        user_question = self.question if question != self.question else None
        payload = await self.tasks.answerer.answer(
            question,
            context,
            max_follow_ups=max_follow_ups,
            user_question=user_question,
            stream=self.stream if final else None,
        )
        known = context.ids()
        follow_ups = [q for q in dict.fromkeys(q.strip() for q in payload.follow_up_queries) if q]
        return SearchResult(
            mode=mode or self.mode,
            kb=self.kb,
            question=question,
            answer=payload.answer,
            score=payload.score,
            follow_up_queries=follow_ups[: max(max_follow_ups, 0)],
            source_ids=[i for i in dict.fromkeys(payload.citations) if i in known],
            unknown_citations=payload.unknown_citations or 0,
            context=context,
            **self.accounting(
                answer=payload.answer,
                step="answer" if user_question is None else "follow-up",
                cited=[i for i in payload.citations if i in known],
                unknown_citations=payload.unknown_citations or 0,
                asked=[question],
                sources=context.sources,
            ),
        )

    def accounting(
        self,
        *,
        answer: str | None = None,
        step: str = "answer",
        cited: Sequence[str] = (),
        unknown_citations: int = 0,
        asked: Iterable[str] = (),
        sources: Iterable[Source] = (),
    ) -> dict[str, Any]:
        """The result fields every mode fills the same way; with the final `answer` (its known `cited`
        ids, its `unknown_citations`, the questions `asked` besides the query's own and the `sources` shown
        to the model), its grounding check too."""
        degraded = self.tasks.degraded.items()
        if answer is not None:
            sources = list(sources)
            degraded += ungrounded(
                answer,
                step=step,
                cited=cited,
                unknown_citations=unknown_citations,
                questions=[self.question, *asked],
                sources=sources,
            )
            if not self.tasks.extractive:  # extracted sentences are the corpus's own, not a model's loop
                shown = [source.text for source in sources]
                degraded += degenerate(answer, step=step, question=self.question, shown=shown)
        return {
            "extractive": self.tasks.extractive,
            "usage": self.deps.usage.since(self.usage_start),
            "llm_calls": self.budget.calls - self._calls_start,
            "prompt_tokens": self.budget.prompt_tokens - self._tokens_start,
            "completion_tokens": self.budget.completion_tokens - self._completion_start,
            "degraded": degraded,
            "seconds": round(time.monotonic() - self.started, 3),
        }
