"""What query workflows share: their progress as `QueryProgressEvent`s, the final answer's text as
`AnswerStreamEvent`s (a workflow started with `stream=True` gives its run an `AnswerStream` onto them),
and `live`, the query's live run object kept in the context's state."""

from __future__ import annotations

from typing import Any

from workflows import Context
from workflows.events import Event

from driftrag.search.streaming import AnswerDelta, AnswerReset, AnswerStream, ProgressEvent


class QueryProgressEvent(Event):
    """A query workflow's progress event. Each mode's own says what `run_query`'s `on_progress` receives
    (`payload`) and how it reads as a stream's `ProgressEvent`."""

    def payload(self) -> Any:
        return self

    def progress_event(self, mode: str) -> ProgressEvent:
        """The payload's phase and message, and its depth, done and total where it has them."""
        p = self.payload()
        counts = {name: getattr(p, name) for name in ("depth", "done", "total") if hasattr(p, name)}
        return ProgressEvent(mode=mode, phase=p.phase, message=p.message, **counts)


class AnswerStreamEvent(Event):
    event: AnswerDelta | AnswerReset


def answer_stream(ctx: Context, enabled: bool) -> AnswerStream | None:
    """An `AnswerStream` onto `ctx`'s event stream, or None when the caller does not stream."""
    if not enabled:
        return None
    return AnswerStream(lambda event: ctx.write_event_to_stream(AnswerStreamEvent(event=event)))


async def live(ctx: Context, name: str) -> Any:
    """The query's live run object (its search or `QueryRun`: budget, model tasks, what it has read), kept
    in the context's state under `name` as a field the context does not serialise."""
    handle = getattr(await ctx.store.get_state(), name)
    if handle is None:  # a context restored elsewhere has no live query to go on with
        raise RuntimeError("this query's live state is not in this process: run the query again")
    return handle
