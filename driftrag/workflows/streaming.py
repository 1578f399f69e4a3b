"""What query workflows stream: their progress as `QueryProgressEvent`s, and the final answer's text as
`AnswerStreamEvent`s (a workflow started with `stream=True` gives its run an `AnswerStream` onto them)."""

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
        raise NotImplementedError(f"{type(self).__name__} must say how it reads as a ProgressEvent")


class AnswerStreamEvent(Event):
    event: AnswerDelta | AnswerReset


def answer_stream(ctx: Context, enabled: bool) -> AnswerStream | None:
    """An `AnswerStream` onto `ctx`'s event stream, or None when the caller does not stream."""
    if not enabled:
        return None
    return AnswerStream(lambda event: ctx.write_event_to_stream(AnswerStreamEvent(event=event)))
