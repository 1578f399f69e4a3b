"""`SearchWorkflow`: a basic, local or entity search as thin steps over `driftrag.search`.

    handler = SearchWorkflow(deps).run(start_event=SearchStart(mode="local", kb="alice", question="…"))
    async for event in handler.stream_events():
        if isinstance(event, SearchProgress): print(event.phase, event.message)
    result: SearchResult = await handler

Steps: start (validate, create the query's budget and tasks; no I/O) → retrieve (the mode's context)
→ answer. Each step streams a `SearchProgress` ("started", "retrieved", "answered"). A step that
fails on Neo4j or the model is retried `query_step_retries` times (never on an exhausted budget or
a bad request); the budget is created once per run, so retries spend from it too.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Literal

from workflows import Context, Workflow, step
from workflows.events import Event, StartEvent, StopEvent

from driftrag.search.basic import QueryRun, retrieve_basic
from driftrag.search.deps import QueryDeps
from driftrag.search.entity import retrieve_entity
from driftrag.search.local import retrieve_local
from driftrag.search.models import SearchContext, SearchResult
from driftrag.search.retry import is_transient, retry_delay

WorkflowMode = Literal["basic", "local", "entity"]
SearchPhase = Literal["started", "retrieved", "answered"]
_RETRIES_ATTRIBUTE = "_driftrag_step_retries"


class QueryStepRetry:
    """Retry policy of the query steps: transient failures (Neo4j, the model) only, as many times as
    the failing run allows, with exponential backoff.

    `@step(retry_policy=…)` is fixed per class while `query_step_retries` belongs to each workflow's
    settings, so a failing step stamps its allowance on the exception it lets through (`_allowing`).
    """

    def next(self, elapsed_time: float, attempts: int, error: Exception, *, seed: int | None = None) -> float | None:
        allowed = getattr(error, _RETRIES_ATTRIBUTE, 0)
        if not is_transient(error) or attempts > allowed:
            return None
        return retry_delay(attempts)


_RETRY = QueryStepRetry()


class SearchStart(StartEvent):
    mode: WorkflowMode
    kb: str
    question: str


class SearchProgress(Event):
    mode: WorkflowMode
    phase: SearchPhase
    message: str
    n_sources: int = 0
    n_tokens: int = 0


class _Started(Event):
    mode: WorkflowMode
    run: QueryRun


class _Retrieved(Event):
    mode: WorkflowMode
    run: QueryRun
    context: SearchContext


class SearchWorkflow(Workflow):
    """Run with `SearchWorkflow(deps).run(start_event=SearchStart(mode=…, kb=…, question=…))`."""

    def __init__(self, deps: QueryDeps, *, timeout: float | None = None) -> None:
        super().__init__(timeout=timeout if timeout is not None else deps.settings.query_timeout_s)
        self._deps = deps

    @contextlib.contextmanager
    def _allowing(self) -> Iterator[None]:
        try:
            yield
        except Exception as exc:
            with contextlib.suppress(AttributeError):
                setattr(exc, _RETRIES_ATTRIBUTE, self._deps.settings.query_step_retries)
            raise

    @step
    async def start(self, ctx: Context, ev: SearchStart) -> _Started:
        run = QueryRun(self._deps, ev.kb, ev.question, None, None)
        ctx.write_event_to_stream(
            SearchProgress(mode=ev.mode, phase="started", message=f"{ev.mode} search on {run.kb}")
        )
        return _Started(mode=ev.mode, run=run)

    @step(retry_policy=_RETRY)
    async def retrieve(self, ctx: Context, ev: _Started) -> _Retrieved:
        run = ev.run
        with self._allowing():
            await run.ensure_available(ev.mode)
            if ev.mode == "basic":
                context = await retrieve_basic(self._deps, run.kb, run.question)
            elif ev.mode == "local":
                context = await retrieve_local(self._deps, run.kb, run.question)
            else:
                context = await retrieve_entity(self._deps, run.kb, run.question, run.tasks.namer)
        ctx.write_event_to_stream(
            SearchProgress(
                mode=ev.mode,
                phase="retrieved",
                message=f"{len(context.sources)} sources, {context.n_tokens}/{context.budget_tokens} tokens",
                n_sources=len(context.sources),
                n_tokens=context.n_tokens,
            )
        )
        return _Retrieved(mode=ev.mode, run=run, context=context)

    @step(retry_policy=_RETRY)
    async def answer(self, ctx: Context, ev: _Retrieved) -> StopEvent:
        with self._allowing():
            result: SearchResult = await ev.run.answer(ev.mode, ev.context)
        ctx.write_event_to_stream(
            SearchProgress(
                mode=ev.mode,
                phase="answered",
                message=f"answer citing {len(result.source_ids)} sources",
                n_sources=len(result.source_ids),
                n_tokens=result.context.n_tokens,
            )
        )
        return StopEvent(result=result)
