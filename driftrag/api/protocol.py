"""uvicorn's h11 protocol with read time-outs: a slow client cannot hold a connection open for ever.

uvicorn closes an idle keep-alive connection, but it waits without limit for the rest of a request
header (or body) once the first byte has come: a client trickling one byte every few seconds holds a
socket and a slot of `limit_concurrency` for as long as it likes. `GuardedH11Protocol` times each
request's reading, from the connection's opening (or the request's first byte) to its last body byte:

- the header must be complete within `header_timeout_s`;
- the body within `body_timeout_s`, extended by its size at `body_min_rate` (bytes a second), so a
  large upload on a slow but honest link finishes while a trickle does not.

A header larger than `max_header_bytes` is a 431: h11 refuses one only while it is still incomplete
(a 400), so one that arrives whole in a single read is measured here once parsed.

A request with both `Content-Length` and `Transfer-Encoding` is answered 400 `invalid_request` here, from
its header, before the app is started: h11 reads such a body as chunked, so a body that is not valid
chunked framing used to make h11 answer its own plain-text 400 while the app was answering too (two
tracebacks in the log per request). Any other request h11 cannot parse gets the same JSON 400 (not
uvicorn's plain text), and an app still running for it is told its client is gone.

When a time-out passes, the client gets a 408 (unless nothing was sent yet, or a response has begun)
and the connection is closed; the app sees `http.disconnect` if it was waiting for the body. The
server is handed `functools.partial(GuardedH11Protocol, limits=...)`, which pickles for worker processes.
"""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass
from typing import Any, Literal

import h11
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

from driftrag.api.errors import error_response
from driftrag.api.models import ErrorBody
from driftrag.settings import Settings

log = logging.getLogger("driftrag.api")

AMBIGUOUS_FRAMING = "a request may not have both Content-Length and Transfer-Encoding; send one"
INVALID_HTTP = "invalid HTTP request (its framing or a header could not be parsed)"
_HEADER_END = re.compile(rb"\r?\n\r?\n")


@dataclass(frozen=True)
class ReadLimits:
    header_timeout_s: float
    body_timeout_s: float
    body_min_rate: float  # bytes a second that earn a second more; 0: none
    max_header_bytes: int

    @classmethod
    def from_settings(cls, settings: Settings) -> ReadLimits:
        return cls(
            header_timeout_s=settings.api_header_timeout_s,
            body_timeout_s=settings.api_body_timeout_s,
            body_min_rate=settings.api_body_min_rate_kib_s * 1024,
            max_header_bytes=settings.api_max_header_kb * 1024,
        )


class HeaderCap:
    """ASGI: a 431 for a request whose line and headers are over the limit, before the app sees it."""

    def __init__(self, app: ASGIApp, max_header_bytes: int) -> None:
        self.app = app
        self.max_header_bytes = max_header_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            size = len(scope["method"]) + len(scope.get("raw_path") or b"") + len(scope["query_string"])
            size += sum(len(name) + len(value) + 4 for name, value in scope["headers"])
            if size > self.max_header_bytes:
                detail = f"the request line and headers are larger than {self.max_header_bytes} bytes"
                response = error_response(431, "headers_too_large", detail, headers={"Connection": "close"})
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def closing_response(status: int, reason: str, code: str, detail: str) -> bytes:
    """A complete JSON error answer that closes the connection, written straight to the socket."""
    body = ErrorBody(code=code, detail=detail).model_dump_json().encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


def timeout_response(detail: str) -> bytes:
    """A complete 408 that closes the connection, written straight to the socket (it is closed after)."""
    return closing_response(408, "Request Timeout", "request_timeout", detail)


def ambiguous_framing(buffer: bytes) -> bool | None:
    """Whether the request header at the start of `buffer` has both Content-Length and Transfer-Encoding;
    None while the header is not complete."""
    end = _HEADER_END.search(buffer)
    if end is None:
        return None
    names = {line.split(b":", 1)[0].strip().lower() for line in buffer[: end.start()].splitlines()[1:]}
    return b"content-length" in names and b"transfer-encoding" in names


class GuardedH11Protocol(H11Protocol):
    """`H11Protocol` with a deadline on reading each request's header and body."""

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
        *,
        limits: ReadLimits,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.app = HeaderCap(self.app, limits.max_header_bytes)
        self._limits = limits
        self._phase: Literal["header", "body"] | None = None
        self._deadline = 0.0  # loop time by which the current phase must end
        self._timer: asyncio.TimerHandle | None = None

    # --- the phases ------------------------------------------------------------------------------

    def _start(self, phase: Literal["header", "body"], seconds: float) -> None:
        self._phase = phase
        self._deadline = self.loop.time() + seconds
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self.loop.call_at(self._deadline, self._expired)

    def _stop(self) -> None:
        self._phase = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expired(self) -> None:
        self._timer = None
        if self._phase is None or self.transport.is_closing():
            return
        if self._phase == "body" and self.flow.read_paused:
            # The server stopped reading (the app has not taken the body in yet): not the client's delay.
            self._deadline = self.loop.time() + self._limits.body_timeout_s
        if self.loop.time() < self._deadline:  # body bytes came meanwhile and earned more time
            self._timer = self.loop.call_at(self._deadline, self._expired)
            return
        if self._phase == "header":
            answer = bool(self.conn.trailing_data[0])  # part of a header came (else: an idle socket, closed quietly)
            detail = f"the request header was not complete within {self._limits.header_timeout_s:g} s"
        else:
            answer = self.cycle is not None and not self.cycle.response_started
            detail = f"the request body did not arrive within {self._limits.body_timeout_s:g} s"
            if self._limits.body_min_rate:
                detail += f" (plus 1 s per {self._limits.body_min_rate / 1024:g} KiB received)"
        log.info("closing a slow connection from %s: %s", _peer(self.client), detail)
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.disconnected = True  # the app's next receive() is an http.disconnect, its sends are dropped
            self.cycle.message_event.set()
        if answer:
            self.transport.write(timeout_response(detail))
        self._phase = None
        self.transport.close()

    # --- uvicorn's hooks ------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._start("header", self._limits.header_timeout_s)

    def data_received(self, data: bytes) -> None:
        if self._phase is None and self.conn.their_state is h11.IDLE:
            self._start("header", self._limits.header_timeout_s)  # the first byte of the next request
        elif self._phase == "body" and self._limits.body_min_rate:
            self._deadline += len(data) / self._limits.body_min_rate
        super().data_received(data)

    def handle_events(self) -> None:
        if self.conn.their_state is h11.IDLE and ambiguous_framing(bytes(self.conn.trailing_data[0])):
            # Refused from the header alone: neither framing is trusted, so nothing behind it is read.
            log.info("refusing a request from %s: %s", _peer(self.client), AMBIGUOUS_FRAMING)
            self._refuse(AMBIGUOUS_FRAMING)
            return
        super().handle_events()
        if self.transport.is_closing() or self.transport.get_protocol() is not self:
            self._stop()
            return
        state = self.conn.their_state
        if state is h11.SEND_BODY:
            if self._phase != "body":
                self._start("body", self._limits.body_timeout_s)
        elif state is h11.IDLE:
            # Between requests: a partial pipelined header left in the buffer is timed; an idle socket is
            # uvicorn's keep-alive time-out's business.
            if self._phase is None and self.conn.trailing_data[0]:
                self._start("header", self._limits.header_timeout_s)
        else:  # the request is in (DONE), or the connection is ending
            self._stop()

    def send_400_response(self, msg: str) -> None:
        # uvicorn's own answer to what h11 cannot parse (it has logged a warning): JSON, as every error.
        self._refuse(INVALID_HTTP)

    def _refuse(self, detail: str) -> None:
        """Answer 400 `invalid_request` unless an answer has begun, tell a running app its client is gone,
        and close the connection."""
        self._stop()
        begun = self.cycle is not None and self.cycle.response_started
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.disconnected = True  # the app's sends are dropped, its next receive() is a disconnect
            self.cycle.message_event.set()
        if not begun and not self.transport.is_closing():
            self.transport.write(closing_response(400, "Bad Request", "invalid_request", detail))
        self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop()
        super().connection_lost(exc)


def _peer(client: tuple[str, int] | None) -> str:
    return f"{client[0]}:{client[1]}" if client else "an unknown peer"
