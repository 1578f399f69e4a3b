"""`GlobalWorkflow`: a global search as thin steps over `driftrag.search.global_search.search.GlobalSearch`.

Steps: plan (level and batches) → map (every batch, `global_num_workers` at once) → reduce. Progress
is streamed as `GlobalProgressEvent`s: reports, each map call, reduce. No report or no batch goes
straight to the reduce, which answers that nothing was found without a model call.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from workflows import Context, Workflow, step
from workflows.events import Event, StartEvent, StopEvent

from driftrag.search.deps import QueryDeps
from driftrag.search.global_search.models import GlobalProgress
from driftrag.search.global_search.search import GlobalSearch
from driftrag.search.options import QueryOptions
from driftrag.workflows.streaming import QueryProgressEvent, answer_stream, live


class GlobalStart(StartEvent):
    kb: str
    question: str
    community_level: int | None = None
    # Stream the reduced answer's text as `AnswerStreamEvent`s while it is written.
    stream: bool = False


class GlobalProgressEvent(QueryProgressEvent):
    progress: GlobalProgress

    def payload(self) -> GlobalProgress:
        return self.progress


class ReportsPlanned(Event):
    level: int | None
    batches: int


class ReportsMapped(Event):
    points: int


class GlobalState(BaseModel):
    """The query's live `GlobalSearch` (budget, model tasks, what it has read), outside what the context
    serialises."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    search: GlobalSearch | None = Field(default=None, exclude=True)


class GlobalWorkflow(Workflow):
    """Run with `GlobalWorkflow(deps).run(start_event=GlobalStart(kb=…, question=…, community_level=None))`."""

    def __init__(self, deps: QueryDeps, *, timeout: float | None = None) -> None:
        super().__init__(timeout=timeout if timeout is not None else deps.settings.query_timeout_s)
        self._deps = deps

    @classmethod
    def start_event(cls, mode: str, kb: str, question: str, options: QueryOptions, *, stream: bool) -> GlobalStart:
        return GlobalStart(kb=kb, question=question, community_level=options.community_level, stream=stream)

    @step
    async def plan(self, ctx: Context[GlobalState], ev: GlobalStart) -> ReportsPlanned:
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
        async with ctx.store.edit_state() as state:
            state.search = search
        await search.plan()
        level = search.level.level if search.level is not None else None
        return ReportsPlanned(level=level, batches=len(search.batches))

    @step
    async def map(self, ctx: Context[GlobalState], ev: ReportsPlanned) -> ReportsMapped:
        search = await live(ctx, "search")
        await search.map()
        return ReportsMapped(points=len(search.points))

    @step
    async def reduce(self, ctx: Context[GlobalState], ev: ReportsMapped) -> StopEvent:
        return StopEvent(result=await (await live(ctx, "search")).reduce())
