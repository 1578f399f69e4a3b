"""The one query front: any registered mode, run by its workflow, with the same timeout and progress.

    result = await run_query(deps, "local", "alice", "Who is the Hatter?", on_progress=print)

Single-pass modes run as `SearchWorkflow`, DRIFT as `DriftWorkflow`; both get their budget, retries,
guard and accounting from `QueryRun`, and `query_timeout_s` from here (`QueryTimeoutError` past it).
`on_progress` (sync or async) receives each `SearchProgress` or `DriftProgress`; both carry `phase` and
`message`. The facade, the CLI (through the facade), the HTTP API (through the facade) and the
evaluation all call this.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from workflows.errors import WorkflowTimeoutError

from driftrag.errors import QueryTimeoutError
from driftrag.search.deps import QueryDeps
from driftrag.search.models import QueryResult
from driftrag.search.modes import get_mode
from driftrag.workflows.drift import DriftProgressEvent, DriftStart, DriftWorkflow
from driftrag.workflows.search import SearchProgress, SearchStart, SearchWorkflow

ProgressHandler = Callable[[Any], Awaitable[None] | None]
# The multi-step modes of `MODES` (retrieve=None), each with its own workflow taking a `DriftStart`.
_MULTI_STEP = {"drift": DriftWorkflow}


async def run_query(
    deps: QueryDeps,
    mode: str,
    kb: str,
    question: str,
    *,
    on_progress: ProgressHandler | None = None,
) -> QueryResult:
    """Answer `question` from `kb` in `mode` (a name of `driftrag.search.modes.MODES`)."""
    spec = get_mode(mode)
    limit = deps.settings.query_timeout_s
    if spec.single_pass:
        handler = SearchWorkflow(deps, timeout=limit).run(start_event=SearchStart(mode=mode, kb=kb, question=question))
    else:
        handler = _MULTI_STEP[mode](deps, timeout=limit).run(start_event=DriftStart(kb=kb, question=question))
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
        raise QueryTimeoutError(
            f"the {mode} query on {kb!r} took longer than query_timeout_s={limit:g} s and was stopped"
        ) from exc
