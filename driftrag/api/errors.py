"""Exception handlers: every error answer is an `ErrorBody`, and none carries a traceback.

- 401 `unauthorized`: no key, an unknown key, two different keys.
- 403 `forbidden`: a kb outside the key's allow-list, a manage call with a read key.
- 404 `kb_not_found` (KnowledgeBaseNotFoundError; also a kb being deleted, KnowledgeBaseDeletingError, from the
  moment its delete starts), `document_not_found`, `job_not_found`, `not_found` (no such
  route).
- 413 `payload_too_large`: a body over the route's limit (`driftrag.api.limits`, before it is read).
- 422 `invalid_request`: body or path validation, InvalidQueryError, InvalidIdentifierError, InputError.
- 429 `too_many_jobs`: `api_max_pending_jobs` ingestion jobs are queued or running already (Retry-After).
- 502 `model_error`: the language model failed after its retries (ModelError).
- 504 `query_timeout`: the query ran longer than `query_timeout_s` (QueryTimeoutError), in any mode.
- 503 `backend_unavailable` (Neo4j unreachable or unusable) and `graph_disabled` (GraphDisabledError),
  both with Retry-After.
- 500 `internal_error`: anything else, logged with its traceback, never returned.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from neo4j import exceptions as neo4j_errors
from starlette.exceptions import HTTPException as StarletteHTTPException

from driftrag.api.models import ErrorBody, FieldProblem
from driftrag.errors import (
    BackendUnavailableError,
    GraphDisabledError,
    InvalidIdentifierError,
    InvalidQueryError,
    KnowledgeBaseNotFoundError,
    ModelError,
    QueryTimeoutError,
    UnsupportedServerError,
)
from driftrag.ingestion.loading import InputError

log = logging.getLogger("driftrag.api")

# Neo4j down: clients may try again soon (the driver reconnects by itself once it is back).
RETRY_AFTER_UNAVAILABLE_S = 5
# A disabled graph is an operator's decision; polling it often would not help.
RETRY_AFTER_GRAPH_DISABLED_S = 60
_MAX_DETAIL_CHARS = 500

_STATUS_CODES = {
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
}


class ApiError(Exception):
    """An error the API answers as is (auth, not found)."""

    def __init__(self, status: int, code: str, detail: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.headers = headers or {}


def error_response(
    status: int, code: str, detail: str, *, problems: list[FieldProblem] | None = None, headers=None
) -> JSONResponse:
    if len(detail) > _MAX_DETAIL_CHARS:
        detail = detail[: _MAX_DETAIL_CHARS - 1] + "…"
    body = ErrorBody(code=code, detail=detail, problems=problems or [])
    return JSONResponse(status_code=status, content=body.model_dump(), headers=headers)


def _location(loc: tuple) -> str:
    return ".".join(str(part) for part in loc)


async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
    # The offending input is not echoed back: it can be large (a 20 kB query) or hostile.
    problems = [FieldProblem(location=_location(e["loc"]), message=e["msg"]) for e in exc.errors()]
    summary = "; ".join(f"{p.location}: {p.message}" for p in problems[:5])
    return error_response(422, "invalid_request", f"invalid request: {summary}", problems=problems)


async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
    return error_response(exc.status, exc.code, exc.detail, headers=exc.headers)


async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
    code = _STATUS_CODES.get(exc.status_code, "http_error")
    return error_response(exc.status_code, code, str(exc.detail), headers=getattr(exc, "headers", None))


async def _invalid(_: Request, exc: Exception) -> JSONResponse:
    return error_response(422, "invalid_request", str(exc))


async def _kb_not_found(_: Request, exc: KnowledgeBaseNotFoundError) -> JSONResponse:
    return error_response(404, "kb_not_found", str(exc))


async def _graph_disabled(request: Request, exc: GraphDisabledError) -> JSONResponse:
    kb = request.path_params.get("kb", "{kb}")
    detail = (
        f"the graph of knowledge base {kb!r} is disabled, so it cannot be searched; a manage key can "
        f'enable it again with PUT /api/v1/knowledge-bases/{kb}/graph {{"enabled": true}}'
    )
    return error_response(503, "graph_disabled", detail, headers={"Retry-After": str(RETRY_AFTER_GRAPH_DISABLED_S)})


async def _backend_unavailable(_: Request, exc: Exception) -> JSONResponse:
    # The driver's message names hosts and ports; it goes to the log, not to the caller. The store's health
    # state warns once per outage, so each 503 is only an info line.
    log.info("graph backend unavailable: %s", exc)
    return error_response(
        503,
        "backend_unavailable",
        "the graph backend (Neo4j) is unavailable; retry later",
        headers={"Retry-After": str(RETRY_AFTER_UNAVAILABLE_S)},
    )


async def _model_error(_: Request, exc: ModelError) -> JSONResponse:
    log.warning("model error: %s", exc)
    return error_response(502, "model_error", "the language model failed after its retries; retry later")


async def _query_timeout(_: Request, exc: QueryTimeoutError) -> JSONResponse:
    log.warning("query timeout: %s", exc)
    return error_response(504, "query_timeout", str(exc))


async def _internal(request: Request, exc: Exception) -> JSONResponse:
    log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return error_response(500, "internal_error", "internal server error; the server log has the details")


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _validation)
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(StarletteHTTPException, _http)
    for invalid in (InvalidQueryError, InvalidIdentifierError, InputError):
        app.add_exception_handler(invalid, _invalid)
    app.add_exception_handler(KnowledgeBaseNotFoundError, _kb_not_found)
    # Starlette picks the handler of the nearest class in the MRO, so the subclass wins over its parent.
    app.add_exception_handler(GraphDisabledError, _graph_disabled)
    app.add_exception_handler(BackendUnavailableError, _backend_unavailable)
    app.add_exception_handler(UnsupportedServerError, _backend_unavailable)
    # The store wraps connection failures; refused credentials reach here as the driver's own errors.
    for driver_error in (neo4j_errors.AuthError, neo4j_errors.ServiceUnavailable, neo4j_errors.SessionExpired):
        app.add_exception_handler(driver_error, _backend_unavailable)
    app.add_exception_handler(ModelError, _model_error)
    app.add_exception_handler(QueryTimeoutError, _query_timeout)
    app.add_exception_handler(Exception, _internal)
