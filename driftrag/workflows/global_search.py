"""`GlobalWorkflow`: a global search as thin steps over `driftrag.search.global_search.search.GlobalSearch`.

Steps: plan (level and batches) → map (every batch, `global_num_workers` at once) → reduce. Progress
is streamed as `GlobalProgressEvent`s: reports, each map call, reduce. No report or no batch goes
straight to the reduce, which answers that nothing was found without a model call.
"""

from __future__ import annotations

from workflows import Context, Workflow, step
from workflows.events import Event, StartEvent, StopEvent

from driftrag.search.deps import QueryDeps
from driftrag.search.global_search.models import GlobalProgress
from driftrag.search.global_search.search import GlobalSearch
from driftrag.workflows.streaming import answer_stream


class GlobalStart(StartEvent):
    kb: str
    question: str
    community_level: int | None = None
    # Stream the reduced answer's text as `AnswerStreamEvent`s while it is written.
    stream: bool = False


class GlobalProgressEvent(Event):
    progress: GlobalProgress


class _Planned(Event):
    search: GlobalSearch


class _Mapped(Event):
    search: GlobalSearch


class GlobalWorkflow(Workflow):
    """Run with `GlobalWorkflow(deps).run(start_event=GlobalStart(kb=…, question=…, community_level=None))`."""

    def __init__(self, deps: QueryDeps, *, timeout: float | None = None) -> None:
        super().__init__(timeout=timeout if timeout is not None else deps.settings.query_timeout_s)
        self._deps = deps

    @step
    async def plan(self, ctx: Context, ev: GlobalStart) -> _Planned:
        async def emit(progress: GlobalProgress) -> None:
            ctx.write_event_to_stream(GlobalProgressEvent(progress=progress))

        search = GlobalSearch(
            self._deps,
            ev.kb,
            ev.question,
            community_level=ev.community_level,
            emit=emit,
            stream=answer_stream(ctx, ev.stream),
        )
        await search.plan()
        return _Planned(search=search)

    @step
    async def map(self, ev: _Planned) -> _Mapped:
        await ev.search.map()
        return _Mapped(search=ev.search)

    @step
    async def reduce(self, ev: _Mapped) -> StopEvent:
        return StopEvent(result=await ev.search.reduce())
