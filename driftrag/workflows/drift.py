"""`DriftWorkflow`: a DRIFT query as thin steps over `driftrag.search.drift.search.DriftSearch`.

Steps: HyDE → community search → primer → one step per round of follow-up local searches (looping
on itself until no follow-up is left or the depth is reached) → reduce. Progress is streamed as
`DriftProgressEvent`s in phase order; the result is a `DriftResult`. Zero follow-ups go straight to
the reduce, so the workflow never waits on events that will not come.
"""

from __future__ import annotations

from workflows import Context, Workflow, step
from workflows.events import Event, StartEvent, StopEvent

from driftrag.search.deps import QueryDeps
from driftrag.search.drift.models import DriftProgress, FollowUp
from driftrag.search.drift.search import DriftSearch
from driftrag.workflows.streaming import answer_stream


class DriftStart(StartEvent):
    kb: str
    question: str
    # Stream the reduced answer's text as `AnswerStreamEvent`s while it is written.
    stream: bool = False


class DriftProgressEvent(Event):
    progress: DriftProgress


class _Primed(Event):
    search: DriftSearch


class _Communities(Event):
    search: DriftSearch


class _Round(Event):
    search: DriftSearch
    depth: int
    follow_ups: list[FollowUp]


class _Reduce(Event):
    search: DriftSearch


class DriftWorkflow(Workflow):
    """Run with `DriftWorkflow(deps).run(start_event=DriftStart(kb=…, question=…))`."""

    def __init__(self, deps: QueryDeps, *, timeout: float | None = None) -> None:
        super().__init__(timeout=timeout if timeout is not None else deps.settings.query_timeout_s)
        self._deps = deps

    @step
    async def hyde(self, ctx: Context, ev: DriftStart) -> _Primed:
        async def emit(progress: DriftProgress) -> None:
            ctx.write_event_to_stream(DriftProgressEvent(progress=progress))

        search = DriftSearch(self._deps, ev.kb, ev.question, emit, answer_stream(ctx, ev.stream))
        await search.hyde()
        return _Primed(search=search)

    @step
    async def communities(self, ev: _Primed) -> _Communities:
        await ev.search.find_communities()
        return _Communities(search=ev.search)

    @step
    async def primer(self, ev: _Communities) -> _Round | _Reduce:
        selected = await ev.search.prime()
        if not selected:
            return _Reduce(search=ev.search)
        return _Round(search=ev.search, depth=1, follow_ups=selected)

    @step
    async def follow_up_round(self, ev: _Round) -> _Round | _Reduce:
        next_round = await ev.search.search_round(ev.depth, ev.follow_ups)
        if not next_round:
            return _Reduce(search=ev.search)
        return _Round(search=ev.search, depth=ev.depth + 1, follow_ups=next_round)

    @step
    async def reduce(self, ev: _Reduce) -> StopEvent:
        return StopEvent(result=await ev.search.reduce())
