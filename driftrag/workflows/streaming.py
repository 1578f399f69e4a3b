"""The final answer's text as workflow events: a query workflow started with `stream=True` gives its run
an `AnswerStream` that writes `AnswerStreamEvent`s to the workflow's event stream."""

from __future__ import annotations

from workflows import Context
from workflows.events import Event

from driftrag.search.streaming import AnswerDelta, AnswerReset, AnswerStream


class AnswerStreamEvent(Event):
    event: AnswerDelta | AnswerReset


def answer_stream(ctx: Context, enabled: bool) -> AnswerStream | None:
    """An `AnswerStream` onto `ctx`'s event stream, or None when the caller does not stream."""
    if not enabled:
        return None
    return AnswerStream(lambda event: ctx.write_event_to_stream(AnswerStreamEvent(event=event)))
