"""`SearchWorkflow`: any single-pass mode (basic, local, entity…) as thin steps over its `QueryRun`.

    handler = SearchWorkflow(deps).run(start_event=SearchStart(mode="local", kb="alice", question="…"))
    async for event in handler.stream_events():
        if isinstance(event, SearchProgress): print(event.phase, event.message)
    result: SearchResult = await handler

Steps: start (validate, create the query's run: budget and tasks; no I/O) → retrieve (the guard and
the mode's retriever) → answer. Each step streams a `SearchProgress` ("started", "retrieved",
"answered"). Retrieve and answer are retried by the run's policy (`QueryRun.retrying`), as DRIFT's
phases are; the budget is created once per run, so retries spend from it too. With `stream=True` the
answer's text is streamed as `AnswerStreamEvent`s while it is written. The workflow's timeout
is `query_timeout_s`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from workflows import Context, Workflow, step
from workflows.events import Event, StartEvent, StopEvent

from driftrag.search.deps import QueryDeps
from driftrag.search.models import SearchContext, SearchResult
from driftrag.search.modes import get_mode, start_run
from driftrag.search.options import QueryOptions
from driftrag.search.run import QueryRun
from driftrag.search.streaming import ProgressEvent
from driftrag.workflows.streaming import QueryProgressEvent, answer_stream, live

SearchPhase = Literal["started", "retrieved", "answered"]


class SearchStart(StartEvent):
    mode: str
    kb: str
    question: str
    # Stream the answer's text as `AnswerStreamEvent`s while it is written.
    stream: bool = False


class SearchProgress(QueryProgressEvent):
    mode: str
    phase: SearchPhase
    message: str
    n_sources: int = 0
    n_tokens: int = 0

    def progress_event(self, mode: str) -> ProgressEvent:
        return ProgressEvent(mode=mode, phase=self.phase, message=self.message, done=self.n_sources)


class SearchStarted(Event):
    mode: str
    kb: str


class ContextRetrieved(Event):
    context: SearchContext


class SearchState(BaseModel):
    """The query's live run (budget, model tasks, accounting), outside what the context serialises."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    run: QueryRun | None = Field(default=None, exclude=True)


class SearchWorkflow(Workflow):
    """Run with `SearchWorkflow(deps).run(start_event=SearchStart(mode=…, kb=…, question=…))`."""

    def __init__(self, deps: QueryDeps, *, timeout: float | None = None) -> None:
        super().__init__(timeout=timeout if timeout is not None else deps.settings.query_timeout_s)
        self._deps = deps

    @classmethod
    def start_event(cls, mode: str, kb: str, question: str, options: QueryOptions, *, stream: bool) -> SearchStart:
        return SearchStart(mode=mode, kb=kb, question=question, stream=stream)

    @step
    async def start(self, ctx: Context[SearchState], ev: SearchStart) -> SearchStarted:
        if not get_mode(ev.mode).single_pass:
            raise ValueError(f"{ev.mode} is not a single-pass mode; run it with its own workflow")
        run = start_run(self._deps, ev.mode, ev.kb, ev.question, stream=answer_stream(ctx, ev.stream))
        async with ctx.store.edit_state() as state:
            state.run = run
        ctx.write_event_to_stream(
            SearchProgress(mode=run.mode, phase="started", message=f"{run.mode} search on {run.kb}")
        )
        return SearchStarted(mode=run.mode, kb=run.kb)

    @step
    async def retrieve(self, ctx: Context[SearchState], ev: SearchStarted) -> ContextRetrieved:
        run: QueryRun = await live(ctx, "run")
        retrieve = get_mode(run.mode).retrieve()

        async def guarded() -> SearchContext:
            await run.ensure_available()
            return await retrieve(run)

        context = await run.retrying(guarded)
        ctx.write_event_to_stream(
            SearchProgress(
                mode=run.mode,
                phase="retrieved",
                message=f"{len(context.sources)} sources, {context.n_tokens}/{context.budget_tokens} tokens",
                n_sources=len(context.sources),
                n_tokens=context.n_tokens,
            )
        )
        return ContextRetrieved(context=context)

    @step
    async def answer(self, ctx: Context[SearchState], ev: ContextRetrieved) -> StopEvent:
        run: QueryRun = await live(ctx, "run")
        result: SearchResult = await run.retrying(lambda: run.answer(ev.context, final=True))
        ctx.write_event_to_stream(
            SearchProgress(
                mode=run.mode,
                phase="answered",
                message=f"answer citing {len(result.source_ids)} sources",
                n_sources=len(result.source_ids),
                n_tokens=result.context.n_tokens,
            )
        )
        return StopEvent(result=result)
