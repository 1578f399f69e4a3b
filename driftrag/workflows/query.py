"""The one query front: any registered mode, run by its workflow, with the same timeout and progress.

    result = await run_query(deps, "local", "alice", "Who is the Hatter?", on_progress=print)

Single-pass modes run as `SearchWorkflow`, DRIFT as `DriftWorkflow`; both get their budget, retries,
guard and accounting from `QueryRun`, and `query_timeout_s` from here (`QueryTimeoutError` past it).
`on_progress` (sync or async) receives each `SearchProgress` or `DriftProgress`; both carry `phase` and
`message`. The facade, the CLI (through the facade), the HTTP API (through the facade) and the
evaluation all call this. `stream_query` is the same query as typed events, the final answer's text
streamed as it is written (`driftrag.search.streaming`).
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

from workflows.errors import WorkflowTimeoutError
from workflows.events import Event
from workflows.handler import WorkflowHandler

from driftrag.errors import QueryTimeoutError
from driftrag.search.deps import QueryDeps
from driftrag.search.models import QueryResult
from driftrag.search.modes import get_mode
from driftrag.search.streaming import AnswerDelta, ProgressEvent, QueryFinished, StreamEvent, reconcile
from driftrag.workflows.drift import DriftProgressEvent, DriftStart, DriftWorkflow
from driftrag.workflows.search import SearchProgress, SearchStart, SearchWorkflow
from driftrag.workflows.streaming import AnswerStreamEvent

ProgressHandler = Callable[[Any], Awaitable[None] | None]
# The multi-step modes of `MODES` (retrieve=None), each with its own workflow taking a `DriftStart`.
_MULTI_STEP = {"drift": DriftWorkflow}


def _start(deps: QueryDeps, mode: str, kb: str, question: str, *, stream: bool) -> WorkflowHandler:
    spec = get_mode(mode)
    limit = deps.settings.query_timeout_s
    if spec.single_pass:
        start = SearchStart(mode=mode, kb=kb, question=question, stream=stream)
        return SearchWorkflow(deps, timeout=limit).run(start_event=start)
    return _MULTI_STEP[mode](deps, timeout=limit).run(start_event=DriftStart(kb=kb, question=question, stream=stream))


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
) -> QueryResult:
    """Answer `question` from `kb` in `mode` (a name of `driftrag.search.modes.MODES`)."""
    handler = _start(deps, mode, kb, question, stream=False)
    try:
        async for event in handler.stream_events():
            if isinstance(event, DriftProgressEvent):
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
    if isinstance(event, SearchProgress):
        return ProgressEvent(mode=mode, phase=event.phase, message=event.message, done=event.n_sources)
    return None


async def stream_query(deps: QueryDeps, mode: str, kb: str, question: str) -> AsyncGenerator[StreamEvent, None]:
    """`run_query`, as events: `ProgressEvent`s, then the final answer's `AnswerDelta`s (an `AnswerReset`
    when a re-ask voids the text so far), then `QueryFinished` with the result. Every mode streams:
    its final answer step writes to the run's stream, and what the deltas lack of the result's answer is
    sent before `QueryFinished`, so the deltas always add up to it. Closing the generator early cancels the query."""
    handler = _start(deps, mode, kb, question, stream=True)
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
