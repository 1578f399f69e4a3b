"""Server-Sent Events of a streamed query (`POST` or `GET /api/v1/knowledge-bases/{kb}/query/stream`).

    id: 1   event: progress   data: {"type": "progress", "mode": "drift", "phase": "primer", "message": "…", …}
    id: 2   event: delta      data: {"type": "delta", "text": "The Hatter "}
    id: 3   event: reset      data: {"type": "reset", "reason": "…"}          (drop the answer text received so far)
    id: 4   event: result     data: the same JSON as `POST …/query` answers (QueryResponse)
    id: 5   event: error      data: {"status": 502, "code": "model_error", "detail": "…"}   (then the stream ends)
    : ping - 2026-12-04 03:41:07.120000+00:00                                 (keep-alive comment)

sse-starlette (`EventSourceResponse`) writes the frames, sends the keep-alive comment every
`api_sse_ping_s` seconds (proxies close a connection idle for long, and DRIFT can work a minute before
its first delta), and cancels the query when the client goes away. What it leaves to this module: the
query starts before the response does (`opened`), so a failure before its first step is done (unknown
kb, a disabled graph, Neo4j down, a bad question) is an ordinary HTTP error status, not an event; after
that the status is 200 and a failure arrives as the `error` event, with the status the unstreamed route
would have answered. Ids count the events of one stream from 1.

A stream cannot be resumed: a browser's EventSource that reconnects (it sends `Last-Event-ID`) is
answered 204, which tells it to stop instead of asking the question again.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator

from pydantic import BaseModel
from sse_starlette import EventSourceResponse, ServerSentEvent

from driftrag.api.errors import RETRY_AFTER_UNAVAILABLE_S
from driftrag.api.models import QueryResponse, StreamError
from driftrag.errors import (
    BackendUnavailableError,
    GraphDisabledError,
    InvalidIdentifierError,
    InvalidQueryError,
    KnowledgeBaseNotFoundError,
    ModelError,
    QueryTimeoutError,
)
from driftrag.search.streaming import ProgressEvent, QueryFinished, StreamEvent

log = logging.getLogger("driftrag.api")

# The separator of the frames: "\n", as the stream sent before the library served it.
_SEP = "\n"
STREAM_HEADERS = {"Cache-Control": "no-cache"}


def stream_error(exc: BaseException) -> StreamError:
    """The status and code the unstreamed route would have answered (`driftrag.api.errors`)."""
    if isinstance(exc, KnowledgeBaseNotFoundError):
        return StreamError(status=404, code="kb_not_found", detail=str(exc))
    if isinstance(exc, GraphDisabledError):
        return StreamError(status=503, code="graph_disabled", detail=str(exc))
    if isinstance(exc, BackendUnavailableError):
        detail = f"the graph backend (Neo4j) is unavailable; retry in {RETRY_AFTER_UNAVAILABLE_S} s"
        return StreamError(status=503, code="backend_unavailable", detail=detail)
    if isinstance(exc, QueryTimeoutError):
        return StreamError(status=504, code="query_timeout", detail=str(exc))
    if isinstance(exc, ModelError):
        log.warning("model error in a streamed query: %s", exc)
        return StreamError(status=502, code="model_error", detail="the language model failed after its retries")
    if isinstance(exc, InvalidQueryError | InvalidIdentifierError):
        return StreamError(status=422, code="invalid_request", detail=str(exc))
    log.error("unhandled error in a streamed query", exc_info=exc)
    detail = "internal server error; the server log has the details"
    return StreamError(status=500, code="internal_error", detail=detail)


async def opened(events: AsyncGenerator[StreamEvent, None]) -> AsyncGenerator[StreamEvent, None]:
    """`events`, started here up to the query's first completed step.

    Awaiting this raises what the query raises before that step (the route answers it with its usual
    status); the returned generator replays the events so far and streams the rest. Closing it closes
    `events`, which cancels the query."""
    held: list[StreamEvent] = []
    try:
        async for event in events:
            held.append(event)
            # A single-pass mode's "started" comes before its guard (unknown kb, disabled graph) has run.
            if not (isinstance(event, ProgressEvent) and event.phase == "started"):
                break
    except BaseException:
        await events.aclose()
        raise
    return _replayed(held, events)


async def _replayed(
    held: list[StreamEvent], events: AsyncGenerator[StreamEvent, None]
) -> AsyncGenerator[StreamEvent, None]:
    try:
        for event in held:
            yield event
        async for event in events:
            yield event
    finally:
        await events.aclose()  # a client that went away cancels the query


async def query_frames(events: AsyncGenerator[StreamEvent, None]) -> AsyncIterator[ServerSentEvent]:
    """The frames of a query stream: each event numbered, a failure as the last (`error`) frame."""
    number = 0

    def frame(name: str, payload: BaseModel) -> ServerSentEvent:
        nonlocal number
        number += 1
        # JSON has no raw newlines, so `data` is one line.
        return ServerSentEvent(payload.model_dump_json(), event=name, id=str(number), sep=_SEP)

    try:
        async for event in events:
            if isinstance(event, QueryFinished):
                yield frame("result", QueryResponse.from_result(event.result))
            else:
                yield frame(event.type, event)
    except Exception as exc:  # the response is under way: the failure becomes its last event
        yield frame("error", stream_error(exc))
    finally:
        await events.aclose()


def event_stream(frames: AsyncIterator[ServerSentEvent | str], *, ping_s: float) -> EventSourceResponse:
    """The `text/event-stream` response of `frames`, with a keep-alive comment every `ping_s` (0: none)."""
    return EventSourceResponse(frames, ping=ping_s, sep=_SEP, headers=STREAM_HEADERS)
