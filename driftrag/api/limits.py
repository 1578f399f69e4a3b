"""What every request goes through before its body is read: its framing, the API key, then the body size.

FastAPI reads and parses a JSON body before it resolves the dependencies that check the key, so a
large body sent without any key used to be read in full before its 401. `RequestLimits` is plain ASGI
middleware in front of the routes: it answers 401 from the headers alone, 413 when `Content-Length`
is over the route's limit, and 413 as soon as a streamed (chunked) body passes it, having read at most
the limit. Ingestion (texts as JSON, or files as multipart) has its own, larger limit
(`api_max_ingest_body_mb`); every other route has `api_max_body_kb`. The route dependencies still
authorise (scopes, kbs) and give the principal.

First of all, a request with both `Content-Length` and `Transfer-Encoding` is a 400 and its connection
closed: the two framings disagree on where the body ends, which is how a request is smuggled past a
proxy that reads the other one (RFC 9112, section 6.3).

The one place a key may come in the URL is `GET …/query/stream?api_key=…` (a browser's EventSource sends
no headers), and only on a server started with `api_allow_query_key`; elsewhere, or when it is off, a key
in the URL is refused with a 401 that says so, never silently ignored.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import parse_qsl

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from driftrag.api.auth import ApiKeys
from driftrag.api.errors import error_response

# Served without a key: the API's own description.
_PUBLIC_PATHS = frozenset({"/api/v1/openapi.json", "/api/v1/docs", "/api/v1/docs/oauth2-redirect"})
# The docs page's script, style sheet and icon, served from the installed package (no CDN).
DOCS_STATIC_PREFIX = "/api/v1/docs-static"
_INGEST_PATH = re.compile(r"^/api/v1/knowledge-bases/[^/]+/documents(/files)?/?$")
# The EventSource form of the query stream: the only route that may take the key from the URL.
_QUERY_KEY_PATH = re.compile(r"^/api/v1/knowledge-bases/[^/]+/query/stream$")
QUERY_KEY_PARAM = "api_key"
_UNAUTHORIZED_HEADERS = {"WWW-Authenticate": "Bearer"}


class BodyTooLarge(HTTPException):
    """Raised from `receive` when a streamed body passes the limit; FastAPI lets HTTPExceptions through."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"the request body is larger than this route's limit of {limit} bytes")


def presented_keys(headers: Iterable[tuple[bytes, bytes]]) -> set[str]:
    """The distinct keys in `Authorization: Bearer …` and `X-API-Key`."""
    found: set[str] = set()
    for name, value in headers:
        name = name.lower()
        text = value.decode("latin-1").strip()
        if name == b"authorization":
            scheme, _, credentials = text.partition(" ")
            if scheme.lower() == "bearer" and credentials.strip():
                found.add(credentials.strip())
        elif name == b"x-api-key" and text:
            found.add(text)
    return found


def query_keys(query_string: bytes) -> set[str]:
    """The distinct non-empty `api_key` values of a query string."""
    pairs = parse_qsl(query_string.decode("latin-1"), keep_blank_values=True)
    return {value.strip() for name, value in pairs if name == QUERY_KEY_PARAM and value.strip()}


def accepts_query_key(method: str, path: str) -> bool:
    return method in ("GET", "HEAD") and _QUERY_KEY_PATH.match(path) is not None


class RequestLimits:
    """ASGI middleware: authenticate from the headers, then bound the body, before any route reads it."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        keys: ApiKeys,
        max_body_bytes: int,
        max_ingest_body_bytes: int,
        allow_query_key: bool = False,
    ) -> None:
        self.app = app
        self.keys = keys
        self.allow_query_key = allow_query_key
        self.max_body_bytes = max_body_bytes
        self.max_ingest_body_bytes = max_ingest_body_bytes

    def limit_for(self, method: str, path: str) -> int:
        if method == "POST" and _INGEST_PATH.match(path):
            return self.max_ingest_body_bytes
        return self.max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        headers = scope["headers"]
        names = {name.lower() for name, _ in headers}
        if b"content-length" in names and b"transfer-encoding" in names:
            detail = "a request may not have both Content-Length and Transfer-Encoding; send one"
            await _answer(scope, receive, send, 400, "invalid_request", detail)
            return
        public = path in _PUBLIC_PATHS or path.startswith(f"{DOCS_STATIC_PREFIX}/")
        if not public and not self.keys.insecure:
            presented = presented_keys(headers)
            in_url = query_keys(scope.get("query_string", b""))
            if in_url and not (self.allow_query_key and accepts_query_key(scope["method"], path)):
                detail = (
                    "API keys in the URL are not accepted here: send `Authorization: Bearer <key>` or `X-API-Key` "
                    "(only GET …/query/stream takes `api_key`, on a server started with DRIFTRAG_API_ALLOW_QUERY_KEY)"
                )
                await _answer(scope, receive, send, 401, "unauthorized", detail, _UNAUTHORIZED_HEADERS)
                return
            presented |= in_url
            if len(presented) > 1:
                await _answer(scope, receive, send, 401, "unauthorized", "two different API keys were sent; send one")
                return
            if self.keys.authenticate(next(iter(presented), None)) is None:
                detail = (
                    "invalid API key"
                    if presented
                    else "missing API key: send `Authorization: Bearer <key>` or `X-API-Key`"
                )
                await _answer(scope, receive, send, 401, "unauthorized", detail, _UNAUTHORIZED_HEADERS)
                return
        limit = self.limit_for(scope["method"], path)
        declared = next((value for name, value in headers if name.lower() == b"content-length"), None)
        if declared is not None:
            try:
                too_large = int(declared) > limit
            except ValueError:
                await _answer(scope, receive, send, 400, "invalid_request", "Content-Length is not a number")
                return
            if too_large:
                await _answer(scope, receive, send, 413, "payload_too_large", BodyTooLarge(limit).detail)
                return

        received = 0
        started = False

        async def counted_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(limit)
            return message

        async def tracked_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counted_receive, tracked_send)
        except BodyTooLarge as exc:
            # Normally FastAPI's handler answers; this covers a body read outside it.
            if started:
                raise
            await _answer(scope, receive, send, 413, "payload_too_large", exc.detail)


async def _answer(
    scope: Scope,
    receive: Receive,
    send: Send,
    status: int,
    code: str,
    detail: str,
    headers: dict[str, str] | None = None,
) -> None:
    # Connection: close, so the server does not read the unread body to reuse the connection.
    response = error_response(
        status, code, detail, headers={**(headers or {}), "Connection": "close"}, path=scope["path"]
    )
    await response(scope, receive, send)
