"""`DriftWorkflow`: a DRIFT query as thin steps over `driftrag.search.drift.search.DriftSearch`.

Steps: HyDE → community search → primer → the follow-ups of each round fanned out as `FollowUpSearch`
events to the `local_search` step (many workers; `drift_num_workers` searches at once), their
`FollowUpAnswered` events collected per round by `collect_round`, which fans out the next round until no
follow-up is left or the depth is reached → reduce. Progress is streamed as `DriftProgressEvent`s in
phase order; the result is a `DriftResult`. Zero follow-ups go straight to the reduce, so the workflow
never waits on events that will not come.

Events carry data (texts, ids, `FollowUp`s and `IntermediateAnswer`s). The query's live state (its
`DriftSearch`: budget, model tasks, what it has read) is in the context's `DriftState`, outside what the
context serialises.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from workflows import Context, Workflow, step
from workflows.events import Event, StartEvent, StopEvent

from driftrag.search.deps import QueryDeps
from driftrag.search.drift.models import DriftProgress, FollowUp, IntermediateAnswer
from driftrag.search.drift.search import DriftSearch
from driftrag.search.options import QueryOptions
from driftrag.workflows.streaming import QueryProgressEvent, answer_stream, live

# Workers of the local-search step: a bound on the step; `drift_num_workers` (at most this many) sets
# how many follow-ups are searched at once.
FOLLOW_UP_WORKERS = 16


class DriftStart(StartEvent):
    kb: str
    question: str
    # Stream the reduced answer's text as `AnswerStreamEvent`s while it is written.
    stream: bool = False


class DriftProgressEvent(QueryProgressEvent):
    progress: DriftProgress

    def payload(self) -> DriftProgress:
        return self.progress


class HydeWritten(Event):
    hyde: str


class CommunitiesFound(Event):
    community_ids: list[str]


class FollowUpSearch(Event):
    depth: int
    follow_up: FollowUp
    # How many follow-ups this round searches.
    total: int


class FollowUpAnswered(Event):
    depth: int
    follow_up_id: str
    answer: IntermediateAnswer | None


class ReduceReady(Event):
    answers: int


class DriftState(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    depth: int = 0
    # The follow-ups of the round in flight, searched in parallel, and how many were selected for it.
    round: list[FollowUp] = Field(default_factory=list)
    selected: int = 0
    search: DriftSearch | None = Field(default=None, exclude=True)


class DriftWorkflow(Workflow):
    """Run with `DriftWorkflow(deps).run(start_event=DriftStart(kb=…, question=…))`."""

    def __init__(self, deps: QueryDeps, *, timeout: float | None = None) -> None:
        super().__init__(timeout=timeout if timeout is not None else deps.settings.query_timeout_s)
        self._deps = deps

    @classmethod
    def start_event(cls, mode: str, kb: str, question: str, options: QueryOptions, *, stream: bool) -> DriftStart:
        return DriftStart(kb=kb, question=question, stream=stream)

    @step
    async def hyde(self, ctx: Context[DriftState], ev: DriftStart) -> HydeWritten:
        async def emit(progress: DriftProgress) -> None:
            ctx.write_event_to_stream(DriftProgressEvent(progress=progress))

        search = DriftSearch(self._deps, ev.kb, ev.question, emit, answer_stream(ctx, ev.stream))
        async with ctx.store.edit_state() as state:
            state.search = search
        await search.hyde()
        return HydeWritten(hyde=search.hyde_text)

    @step
    async def communities(self, ctx: Context[DriftState], ev: HydeWritten) -> CommunitiesFound:
        search = await live(ctx, "search")
        await search.find_communities()
        return CommunitiesFound(community_ids=[c.id for c in search.communities])

    @step
    async def primer(self, ctx: Context[DriftState], ev: CommunitiesFound) -> FollowUpSearch | ReduceReady | None:
        search = await live(ctx, "search")
        return await _fan_out(ctx, search, 1, await search.prime())

    @step(num_workers=FOLLOW_UP_WORKERS)
    async def local_search(self, ctx: Context[DriftState], ev: FollowUpSearch) -> FollowUpAnswered:
        answer = await (await live(ctx, "search")).answer_follow_up(ev.depth, ev.follow_up, ev.total)
        return FollowUpAnswered(depth=ev.depth, follow_up_id=ev.follow_up.id, answer=answer)

    @step
    async def collect_round(
        self, ctx: Context[DriftState], ev: FollowUpAnswered
    ) -> FollowUpSearch | ReduceReady | None:
        state = await ctx.store.get_state()
        collected = ctx.collect_events(ev, [FollowUpAnswered] * len(state.round))
        if collected is None:
            return None
        # In the round's own order, whichever search finished first: the result does not depend on timing.
        by_id = {event.follow_up_id: event.answer for event in collected}  # type: ignore[attr-defined]
        search = await live(ctx, "search")
        answers = [by_id[follow_up.id] for follow_up in state.round]
        next_round = await search.finish_round(state.depth, state.selected, answers)
        return await _fan_out(ctx, search, state.depth + 1, next_round)

    @step
    async def reduce(self, ctx: Context[DriftState], ev: ReduceReady) -> StopEvent:
        return StopEvent(result=await (await live(ctx, "search")).reduce())


async def _fan_out(
    ctx: Context[DriftState], search: DriftSearch, depth: int, selected: list[FollowUp]
) -> FollowUpSearch | ReduceReady | None:
    """Send the round's follow-ups to `local_search`, one event each; or go to the reduce when none is
    selected, or none fits the budget (the round is still reported)."""
    if not selected:
        return ReduceReady(answers=len(search.intermediate))
    runnable = search.start_round(depth, selected)
    if not runnable:
        await search.finish_round(depth, len(selected), [])
        return ReduceReady(answers=len(search.intermediate))
    async with ctx.store.edit_state() as state:
        state.depth, state.round, state.selected = depth, runnable, len(selected)
    for follow_up in runnable:
        ctx.send_event(FollowUpSearch(depth=depth, follow_up=follow_up, total=len(runnable)))
    return None
