"""The one query front: any registered mode, run by its workflow, with the same timeout and progress.

    result = await run_query(deps, "local", "alice", "Who is the Hatter?", on_progress=print)

Single-pass modes run as `SearchWorkflow`, DRIFT as `DriftWorkflow`, global search as `GlobalWorkflow`;
all get their budget, retries, guard and accounting from `QueryRun`, and `query_timeout_s` from here
(`QueryTimeoutError` past it). `options` (`QueryOptions`, e.g. global search's `community_level`) are
checked against the mode first. `on_progress` (sync or async) receives each `SearchProgress`,
`DriftProgress` or `GlobalProgress`; all carry `phase` and `message`. The facade, the CLI (through the
facade), the HTTP API (through the facade) and the evaluation all call this.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from workflows import Workflow
from workflows.errors import WorkflowTimeoutError
from workflows.events import StartEvent

from driftrag.errors import QueryTimeoutError
from driftrag.search.deps import QueryDeps
from driftrag.search.models import QueryResult
from driftrag.search.modes import QueryOptions, get_mode
from driftrag.workflows.drift import DriftProgressEvent, DriftStart, DriftWorkflow
from driftrag.workflows.global_search import GlobalProgressEvent, GlobalStart, GlobalWorkflow
from driftrag.workflows.search import SearchProgress, SearchStart, SearchWorkflow

ProgressHandler = Callable[[Any], Awaitable[None] | None]


# The multi-step modes of `MODES` (no retriever): each one's workflow and its start event from the query.
_MULTI_STEP: dict[str, tuple[type[Workflow], Callable[[str, str, QueryOptions], StartEvent]]] = {
    "drift": (DriftWorkflow, lambda kb, question, _: DriftStart(kb=kb, question=question)),
    "global": (
        GlobalWorkflow,
        lambda kb, question, options: GlobalStart(kb=kb, question=question, community_level=options.community_level),
    ),
}


def _start(deps: QueryDeps, mode: str, kb: str, question: str, options: QueryOptions, limit: float) -> Any:
    """The mode's running workflow: `SearchWorkflow` for a single-pass mode, else the mode's own."""
    if get_mode(mode).single_pass:
        return SearchWorkflow(deps, timeout=limit).run(start_event=SearchStart(mode=mode, kb=kb, question=question))
    workflow, start = _MULTI_STEP[mode]
    return workflow(deps, timeout=limit).run(start_event=start(kb, question, options))  # type: ignore[call-arg]


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
    limit = deps.settings.query_timeout_s
    handler = _start(deps, mode, kb, question, options, limit)
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
        raise QueryTimeoutError(
            f"the {mode} query on {kb!r} took longer than query_timeout_s={limit:g} s and was stopped"
        ) from exc
