"""The one query front: any registered mode, run by its workflow, with the same timeout and progress.

    result = await run_query(deps, "local", "alice", "Who is the Hatter?", on_progress=print)

The mode's workflow (`driftrag.search.modes.MODES`: `SearchWorkflow` for the single-pass modes, DRIFT's
and global search's own) builds its start event and streams its progress as `QueryProgressEvent`s; all
get their budget, retries, guard and accounting from `QueryRun`, and their time-out from here:
`query_timeout_s` when set, else one that follows the model (`driftrag.search.deadline`;
`QueryTimeoutError` past it). `options` (`QueryOptions`, e.g. global search's `community_level`) are
checked against the mode first. `on_progress` (sync or async) receives each progress event's payload
(`SearchProgress`, `DriftProgress`, `GlobalProgress`…); all carry `phase` and `message`. The facade, the
CLI (through the facade), the HTTP API (through the facade) and the evaluation all call this.
`stream_query` is the same query as typed events, the final answer's text streamed as it is written
(`driftrag.search.streaming`). Both check the kb again once the answer is read: a kb whose delete started
meanwhile raises `KnowledgeBaseDeletingError` (a `KnowledgeBaseNotFoundError`) instead of answering.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import replace
from typing import Any, Protocol

from workflows import Workflow
from workflows.errors import WorkflowTimeoutError
from workflows.events import StartEvent
from workflows.handler import WorkflowHandler

from driftrag.errors import QueryTimeoutError
from driftrag.search.deadline import QueryDeadline, query_deadline
from driftrag.search.deps import QueryDeps
from driftrag.search.models import QueryResult
from driftrag.search.modes import get_mode
from driftrag.search.options import QueryOptions
from driftrag.search.streaming import AnswerDelta, QueryFinished, StreamEvent, reconcile
from driftrag.workflows.streaming import AnswerStreamEvent, QueryProgressEvent

ProgressHandler = Callable[[Any], Awaitable[None] | None]


class QueryWorkflow(Protocol):
    """What a mode's workflow class offers the query front (`Mode.workflow`)."""

    def __call__(self, deps: QueryDeps, *, timeout: float | None = None) -> Workflow: ...

    def start_event(self, mode: str, kb: str, question: str, options: QueryOptions, *, stream: bool) -> StartEvent: ...


async def _start(
    deps: QueryDeps, mode: str, kb: str, question: str, options: QueryOptions, *, stream: bool
) -> tuple[WorkflowHandler, QueryDeadline]:
    """The mode's running workflow, and the query's deadline (`driftrag.search.deadline`)."""
    entry = get_mode(mode)
    deadline = await deadline_of(deps, mode)
    workflow: QueryWorkflow = entry.workflow_class()
    start = workflow.start_event(mode, kb, question, options, stream=stream)
    run_deps = replace(deps, deadline=deadline)
    return workflow(run_deps, timeout=deadline.timeout_s).run(start_event=start), deadline


async def deadline_of(deps: QueryDeps, mode: str) -> QueryDeadline:
    """A query's deadline in `mode`, from now: the model's call limits asked first (a compatible server's
    slots, once per client), as the time-out follows them unless it is set."""
    calls = await deps.call_limits() if deps.call_limits is not None else None
    return query_deadline(deps.settings, get_mode(mode), calls)


def _timeout(deadline: QueryDeadline, mode: str, kb: str) -> QueryTimeoutError:
    return QueryTimeoutError(
        f"the {mode} query on {kb!r} took longer than query_timeout_s={deadline.timeout_s:g} s "
        f"({deadline.source}) and was stopped"
    )


async def _still_there(deps: QueryDeps, kb: str) -> None:
    """After the answer is read: a kb whose delete started meanwhile (its reads may have seen it half gone)
    raises KnowledgeBaseDeletingError rather than give an answer from a half-deleted graph."""
    await deps.stores.graph_search.status(kb)


async def run_query(
    deps: QueryDeps,
    mode: str,
    kb: str,
    question: str,
    *,
    on_progress: ProgressHandler | None = None,
    options: QueryOptions | None = None,
) -> QueryResult:
    """Answer `question` from `kb` in `mode` (a name of `driftrag.search.modes.MODES`)."""
    options = get_mode(mode).check_options(options or QueryOptions())
    handler, deadline = await _start(deps, mode, kb, question, options, stream=False)
    try:
        async for event in handler.stream_events():
            if on_progress is not None and isinstance(event, QueryProgressEvent):
                outcome = on_progress(event.payload())
                if inspect.isawaitable(outcome):
                    await outcome
        result = await handler
    except WorkflowTimeoutError as exc:
        raise _timeout(deadline, mode, kb) from exc
    await _still_there(deps, kb)
    return result


async def stream_query(
    deps: QueryDeps, mode: str, kb: str, question: str, *, options: QueryOptions | None = None
) -> AsyncGenerator[StreamEvent, None]:
    """`run_query`, as events: `ProgressEvent`s, then the final answer's `AnswerDelta`s (an `AnswerReset`
    when a re-ask voids the text so far), then `QueryFinished` with the result. Every mode streams:
    its final answer step writes to the run's stream, and what the deltas lack of the result's answer is
    sent before `QueryFinished`, so the deltas always add up to it. Closing the generator early cancels the query."""
    options = get_mode(mode).check_options(options or QueryOptions())
    handler, deadline = await _start(deps, mode, kb, question, options, stream=True)
    streamed = ""
    try:
        async for event in handler.stream_events():
            if isinstance(event, QueryProgressEvent):
                yield event.progress_event(mode)
            elif isinstance(event, AnswerStreamEvent):
                streamed = streamed + event.event.text if isinstance(event.event, AnswerDelta) else ""
                yield event.event
        result = await handler
    except WorkflowTimeoutError as exc:
        raise _timeout(deadline, mode, kb) from exc
    finally:
        if not handler.is_done():
            await handler.cancel_run()
    await _still_there(deps, kb)
    for event in reconcile(streamed, result.answer):
        yield event
    yield QueryFinished(result=result)
