"""Streaming a query: the typed events a caller reads, and the `AnswerStream` the final answer writes to.

    async for event in rag.stream("alice", "Who is the Hatter?", mode="local"):
        match event:
            case ProgressEvent(): print(event.phase, event.message)      # retrieval, DRIFT phases
            case AnswerDelta(): print(event.text, end="")                 # the final answer as it is written
            case AnswerReset(): ...                                      # drop the text so far (a re-ask)
            case QueryFinished(): event.result                            # answer, citations, sources

The final answer's deltas since the last `AnswerReset`, joined, are exactly `QueryFinished.result.answer`
(the query front sends what the deltas still lack, or a reset and the whole answer, when they differ).

With a model, the final answer is a JSON answer like every other task (`answer`, `citations`, and the
score and follow-ups of the single-pass modes), streamed with `astream_chat`: the same request as the
unstreamed query (one cache entry, one answer), its `answer` field decoded as it grows
(`JsonFieldStream`), the `[S1]` handles written back as source ids as soon as they close. Offline, the
extractive answer goes out statement by statement once its sentences are ranked (ranking needs them all).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from driftrag.providers.json_stream import JsonFieldStream
from driftrag.search.models import QueryResult


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ProgressEvent(_Event):
    """A step of the query: retrieval of a single-pass mode, or a DRIFT phase."""

    type: Literal["progress"] = "progress"
    mode: str
    phase: str
    message: str
    depth: int = 0
    done: int = 0
    total: int = 0


class AnswerDelta(_Event):
    """The next piece of the final answer."""

    type: Literal["delta"] = "delta"
    text: str


class AnswerReset(_Event):
    """The text streamed so far is void (the model was asked again); the answer starts over."""

    type: Literal["reset"] = "reset"
    reason: str


class QueryFinished(_Event):
    """The query's result, the same as the unstreamed query's."""

    type: Literal["result"] = "result"
    result: QueryResult


AnswerEvent = AnswerDelta | AnswerReset
StreamEvent = Annotated[ProgressEvent | AnswerDelta | AnswerReset | QueryFinished, Field(discriminator="type")]
Emit = Callable[[AnswerEvent], None]


class AnswerStream:
    """Where the final answer step writes its text; `emit` hands each event to the query's stream."""

    def __init__(self, emit: Emit) -> None:
        self._emit = emit
        self.text = ""

    async def delta(self, text: str) -> None:
        if text:
            self.text += text
            self._emit(AnswerDelta(text=text))

    async def reset(self, reason: str) -> None:
        if self.text:
            self.text = ""
            self._emit(AnswerReset(reason=reason))

    async def lines(self, answer: str) -> None:
        """An answer already complete, one line at a time (the offline statements)."""
        for line in answer.splitlines(keepends=True):
            await self.delta(line)

    def json_answer(self, rewrite: Callable[[str], str]) -> JsonAnswerPreview:
        """A preview of a JSON answer's `answer` field for `ask_json`; `rewrite` maps `[S1]` to `[id]`."""
        return JsonAnswerPreview(self, rewrite)


# A `[` opens what may be a handle; past this many characters without `]` it is plain text.
_MAX_BRACKET_CHARS = 80


class JsonAnswerPreview:
    """`driftrag.providers.json_answer.AnswerPreview` over the `answer` field: decoded, stripped as the
    parser strips it, handles rewritten once their bracket closes."""

    def __init__(self, stream: AnswerStream, rewrite: Callable[[str], str]) -> None:
        self._stream = stream
        self._rewrite = rewrite
        self._field = JsonFieldStream("answer")
        self._held = ""  # an open bracket, or whitespace that only counts if text follows

    async def begin(self) -> None:
        await self._stream.reset("the model was asked again")
        self._field = JsonFieldStream("answer")
        self._held = ""

    async def feed(self, raw: str) -> None:
        text = self._field.feed(raw)
        if not text:
            return
        out: list[str] = []
        for char in text:
            self._held += char
            if self._held.startswith("["):
                if char == "]" or len(self._held) > _MAX_BRACKET_CHARS:
                    out.append(self._rewrite(self._held))
                    self._held = ""
            elif char == "[":
                out.append(self._held[:-1])
                self._held = "["
            elif not char.isspace():
                out.append(self._held)
                self._held = ""
        piece = "".join(out)
        if not self._stream.text:
            piece = piece.lstrip()
        await self._stream.delta(piece)


def reconcile(streamed: str, answer: str) -> list[AnswerEvent]:
    """What a reader of `streamed` still needs so that its text becomes `answer`."""
    if answer.startswith(streamed):
        rest = answer[len(streamed) :]
        return [AnswerDelta(text=rest)] if rest else []
    events: list[AnswerEvent] = [AnswerReset(reason="the final answer differs from the streamed text")]
    return [*events, AnswerDelta(text=answer)] if answer else events
