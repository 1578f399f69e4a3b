"""The one query front: any registered mode, run by its workflow, with the same timeout and progress.

    result = await run_query(deps, "local", "alice", "Who is the Hatter?", on_progress=print)

Single-pass modes run as `SearchWorkflow`, DRIFT as `DriftWorkflow`, global search as `GlobalWorkflow`;
all get their budget, retries, guard and accounting from `QueryRun`, and `query_timeout_s` from here
(`QueryTimeoutError` past it). `options` (`QueryOptions`, e.g. global search's `community_level`) are
checked against the mode first. `on_progress` (sync or async) receives each `SearchProgress`,
`DriftProgress` or `GlobalProgress`; all carry `phase` and `message`. The facade, the CLI (through the
facade), the HTTP API (through the facade) and the evaluation all call this. `stream_query` is the
same query as typed events, the final answer's text streamed as it is written
(`driftrag.search.streaming`).
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

from workflows import Workflow
from workflows.errors import WorkflowTimeoutError
from workflows.events import Event, StartEvent
from workflows.handler import WorkflowHandler

from driftrag.errors import QueryTimeoutError
from driftrag.search.deps import QueryDeps
from driftrag.search.models import QueryResult
from driftrag.search.modes import QueryOptions, get_mode
from driftrag.search.streaming import AnswerDelta, ProgressEvent, QueryFinished, StreamEvent, reconcile
from driftrag.workflows.drift import DriftProgressEvent, DriftStart, DriftWorkflow
from driftrag.workflows.global_search import GlobalProgressEvent, GlobalStart, GlobalWorkflow
from driftrag.workflows.search import SearchProgress, SearchStart, SearchWorkflow
from driftrag.workflows.streaming import AnswerStreamEvent

ProgressHandler = Callable[[Any], Awaitable[None] | None]


# The multi-step modes of `MODES` (no retriever): each one's workflow and its start event from the query
# (kb, question, options, whether the final answer streams).
_MULTI_STEP: dict[str, tuple[type[Workflow], Callable[[str, str, QueryOptions, bool], StartEvent]]] = {
    "drift": (DriftWorkflow, lambda kb, question, _, stream: DriftStart(kb=kb, question=question, stream=stream)),
    "global": (
        GlobalWorkflow,
        lambda kb, question, options, stream: GlobalStart(
            kb=kb, question=question, community_level=options.community_level, stream=stream
        ),
    ),
}


def _start(
    deps: QueryDeps, mode: str, kb: str, question: str, options: QueryOptions, *, stream: bool
) -> WorkflowHandler:
    """The mode's running workflow: `SearchWorkflow` for a single-pass mode, else the mode's own."""
    limit = deps.settings.query_timeout_s
    if get_mode(mode).single_pass:
        start = SearchStart(mode=mode, kb=kb, question=question, stream=stream)
        return SearchWorkflow(deps, timeout=limit).run(start_event=start)
    workflow, make_start = _MULTI_STEP[mode]
    return workflow(deps, timeout=limit).run(start_event=make_start(kb, question, options, stream))  # type: ignore[call-arg]


def _timeout(deps: QueryDeps, mode: str, kb: str) -> QueryTimeoutError:
    limit = deps.settings.query_timeout_s
    return QueryTimeoutError(f"the {mode} query on {kb!r} took longer than query_timeout_s={limit:g} s and was stopped")


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
    handler = _start(deps, mode, kb, question, options, stream=False)
    try:
        async for event in handler.stream_events():
            if isinstance(event, DriftProgressEvent | GlobalProgressEvent):
                event = event.progress
            elif not isinstance(event, SearchProgress):
                continue
            if on_progress is not None:
                outcome = on_progress(event)
                if inspect.isawaitable(outcome):
                    await outcome
        return await handler
    except WorkflowTimeoutError as exc:
        raise _timeout(deps, mode, kb) from exc


def _progress(mode: str, event: Event) -> ProgressEvent | None:
    if isinstance(event, DriftProgressEvent):
        p = event.progress
        return ProgressEvent(mode=mode, phase=p.phase, message=p.message, depth=p.depth, done=p.done, total=p.total)
    if isinstance(event, GlobalProgressEvent):
        g = event.progress
        return ProgressEvent(mode=mode, phase=g.phase, message=g.message, done=g.done, total=g.total)
    if isinstance(event, SearchProgress):
        return ProgressEvent(mode=mode, phase=event.phase, message=event.message, done=event.n_sources)
    return None


async def stream_query(
    deps: QueryDeps, mode: str, kb: str, question: str, *, options: QueryOptions | None = None
) -> AsyncGenerator[StreamEvent, None]:
    """`run_query`, as events: `ProgressEvent`s, then the final answer's `AnswerDelta`s (an `AnswerReset`
    when a re-ask voids the text so far), then `QueryFinished` with the result. Every mode streams:
    its final answer step writes to the run's stream, and what the deltas lack of the result's answer is
    sent before `QueryFinished`, so the deltas always add up to it. Closing the generator early cancels the query."""
    options = get_mode(mode).check_options(options or QueryOptions())
    handler = _start(deps, mode, kb, question, options, stream=True)
    streamed = ""
    try:
        async for event in handler.stream_events():
            progress = _progress(mode, event)
            if progress is not None:
                yield progress
            elif isinstance(event, AnswerStreamEvent):
                streamed = streamed + event.event.text if isinstance(event.event, AnswerDelta) else ""
                yield event.event
        result = await handler
    except WorkflowTimeoutError as exc:
        raise _timeout(deps, mode, kb) from exc
    finally:
        if not handler.is_done():
            await handler.cancel_run()
    for event in reconcile(streamed, result.answer):
        yield event
    yield QueryFinished(result=result)
