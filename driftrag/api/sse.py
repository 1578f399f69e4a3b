"""Server-Sent Events of a streamed query (`POST /api/v1/knowledge-bases/{kb}/query/stream`).

    event: progress   data: {"type": "progress", "mode": "drift", "phase": "primer", "message": "…", …}
    event: delta      data: {"type": "delta", "text": "The Hatter "}
    event: reset      data: {"type": "reset", "reason": "…"}          (drop the answer text received so far)
    event: result     data: the same JSON as `POST …/query` answers (QueryResponse)
    event: error      data: {"status": 502, "code": "model_error", "detail": "…"}   (then the stream ends)

The query starts before the response does: a failure before its first step is done (unknown kb, a
disabled graph, Neo4j down, a bad question) is an ordinary HTTP error status, not an event. After that
the status is 200 and a failure arrives as the `error` event, with the status the unstreamed route
would have answered.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator

from pydantic import BaseModel

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


def sse(event: str, payload: BaseModel) -> bytes:
    """One event; JSON has no raw newlines, so `data` is one line."""
    return f"event: {event}\ndata: {payload.model_dump_json()}\n\n".encode()


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


async def opened(events: AsyncGenerator[StreamEvent, None]) -> AsyncIterator[bytes]:
    """The SSE body of `events`, started here up to the query's first completed step.

    Awaiting this raises what the query raises before that step (the route answers it with its
    usual status); the returned iterator holds the events so far and streams the rest."""
    held: list[StreamEvent] = []
    async for event in events:
        held.append(event)
        # A single-pass mode's "started" comes before its guard (unknown kb, disabled graph) has run.
        if not (isinstance(event, ProgressEvent) and event.phase == "started"):
            break
    return _body(held, events)


async def _body(held: list[StreamEvent], events: AsyncGenerator[StreamEvent, None]) -> AsyncIterator[bytes]:
    try:
        for event in held:
            yield _encode(event)
        async for event in events:
            yield _encode(event)
    except Exception as exc:  # the response is under way: the failure becomes its last event
        yield sse("error", stream_error(exc))
    finally:
        await events.aclose()  # a client that went away cancels the query


def _encode(event: StreamEvent) -> bytes:
    if isinstance(event, QueryFinished):
        return sse("result", QueryResponse.from_result(event.result))
    return sse(event.type, event)
