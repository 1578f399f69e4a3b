"""Exception handlers: every error answer is an `ErrorBody`, and none carries a traceback.

- 401 `unauthorized`: no key, an unknown key, two different keys.
- 403 `forbidden`: a kb outside the key's allow-list, a manage call with a read key.
- 404 `kb_not_found` (KnowledgeBaseNotFoundError; also a kb being deleted, KnowledgeBaseDeletingError, from the
  moment its delete starts), `document_not_found`, `job_not_found`, `not_found` (no such
  route).
- 413 `payload_too_large`: a body over the route's limit (`driftrag.api.limits`, before it is read).
- 400 `invalid_request`: a request with both `Content-Length` and `Transfer-Encoding`, or one the HTTP parser
  refuses (`driftrag.api.protocol`, and `driftrag.api.limits` behind other servers).
- 408 `request_timeout`: the header or body came too slowly; the connection is closed (`driftrag.api.protocol`).
- 431 `headers_too_large`: the request line and headers are over `api_max_header_kb` (`driftrag.api.protocol`).
- 422 `invalid_request`: body or path validation, a body that is not JSON (nested too deeply, not UTF-8),
  InvalidQueryError, InvalidIdentifierError, InputError, InvalidExtractConfigError; a multipart body the form
  parser refuses (too many files, a part header over 4 KiB), in the upload route's words. Validation problems name
  the schema's fields only and are capped (`driftrag.api.problems`): nothing the caller sent is echoed.
- 409 `model_required`: the route needs a language model and the server runs offline (ModelRequiredError).
- 429 `too_many_jobs`: `api_max_pending_jobs` ingestion jobs are queued or running already (Retry-After).
- 502 `model_error`: the language model failed after its retries (ModelError).
- 504 `query_timeout`: the query ran longer than `query_timeout_s` (QueryTimeoutError), in any mode.
- 503 `backend_unavailable` (Neo4j unreachable or unusable) and `graph_disabled` (GraphDisabledError),
  both with Retry-After.
- 500 `internal_error`: anything else, logged with its traceback, never returned.

The OpenAI-compatible routes (`/v1/…`, `driftrag.api.chat`) answer the same errors in OpenAI's shape
(`{"error": {"message", "type", "code"}}`, which the `openai` client reads) and a bad request as 400, as
OpenAI does; an unknown or forbidden `model` is 404 `model_not_found` there.
"""

from __future__ import annotations

import json
import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.formparsers import MultiPartException

from driftrag.api.models import ErrorBody, FieldProblem
from driftrag.api.openai_models import OpenAIError, OpenAIErrorBody
from driftrag.api.problems import field_problems, schema_names
from driftrag.api.uploads import MAX_FILES as MAX_UPLOAD_FILES
from driftrag.api.uploads import MAX_NAME_CHARS as MAX_UPLOAD_NAME_CHARS
from driftrag.errors import (
    BackendUnavailableError,
    GraphDisabledError,
    InvalidExtractConfigError,
    InvalidIdentifierError,
    InvalidQueryError,
    KnowledgeBaseNotFoundError,
    ModelError,
    ModelRequiredError,
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


OPENAI_PREFIX = "/v1"
_OPENAI_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "invalid_request_error",
    413: "invalid_request_error",
    429: "rate_limit_error",
}


def is_openai_path(path: str) -> bool:
    return path.startswith(f"{OPENAI_PREFIX}/")


def openai_error(status: int, code: str, detail: str, param: str | None = None) -> OpenAIErrorBody:
    """An error as OpenAI's API answers it, also the `data` of a failed chat stream's last event."""
    kind = _OPENAI_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return OpenAIErrorBody(error=OpenAIError(message=detail, type=kind, code=code, param=param))


def error_response(
    status: int,
    code: str,
    detail: str,
    *,
    problems: list[FieldProblem] | None = None,
    problems_omitted: int = 0,
    headers=None,
    path: str = "",
) -> JSONResponse:
    """The error answer of a route at `path`: an `ErrorBody`, or OpenAI's error shape under `/v1/`."""
    if len(detail) > _MAX_DETAIL_CHARS:
        detail = detail[: _MAX_DETAIL_CHARS - 1] + "…"
    if is_openai_path(path):
        body = openai_error(status, code, detail, problems[0].location if problems else None)
        return JSONResponse(status_code=status, content=body.model_dump(), headers=headers)
    body = ErrorBody(code=code, detail=detail, problems=problems or [], problems_omitted=problems_omitted)
    return JSONResponse(status_code=status, content=body.model_dump(), headers=headers)


def _invalid_status(request: Request) -> int:
    return 400 if is_openai_path(request.url.path) else 422


def _invalid_request(request: Request, problems: list[FieldProblem], omitted: int = 0) -> JSONResponse:
    summary = "; ".join(f"{p.location}: {p.message}" for p in problems[:5])
    more = len(problems) - 5 + omitted
    if more > 0:
        summary += f"; and {more} more"
    return error_response(
        _invalid_status(request),
        "invalid_request",
        f"invalid request: {summary}",
        problems=problems,
        problems_omitted=omitted,
        path=request.url.path,
    )


def unparsed_body_problem(body: bytes) -> str:
    """What is wrong with a JSON route's body that FastAPI left unparsed (sent with a Content-Type that is
    not JSON, as `curl -d` does): the messages a body sent as JSON gets."""
    try:
        json.loads(body)
    except RecursionError:
        return "JSON nested too deeply"
    except UnicodeDecodeError:
        return NOT_UNICODE_JSON
    except ValueError:
        return "JSON decode error"
    return "JSON sent without `Content-Type: application/json`; send that header"


NOT_UNICODE_JSON = "not JSON in UTF-8, UTF-16 or UTF-32"


async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
    # The offending input is not echoed back: it can be large (a 20 kB query) or hostile.
    errors = exc.errors()
    if isinstance(exc.body, bytes) and any(tuple(error.get("loc", ())) == ("body",) for error in errors):
        # A body route given bytes FastAPI did not parse: said as for a body sent as JSON.
        return _invalid_request(request, [FieldProblem(location="body", message=unparsed_body_problem(exc.body))])
    if any(error.get("type") == "json_invalid" for error in errors):
        # FastAPI places a syntax error at its character offset (`body.0`); the body is where it is.
        return _invalid_request(request, [FieldProblem(location="body", message="JSON decode error")])
    names = schema_names(request.app.openapi())  # built once per app, then cached by FastAPI
    problems, omitted = field_problems(errors, exc.body, names)
    return _invalid_request(request, problems, omitted)


def _multipart_problem(exc: MultiPartException) -> str:
    """A form body Starlette's parser refused, in the upload route's own words."""
    message = str(exc)
    if message.startswith("Too many files"):
        return (
            f"more files in one request than the form parser takes ({message.split('is ')[-1].rstrip('.')}); "
            f"the limit of the upload route is {MAX_UPLOAD_FILES} files: send fewer at a time"
        )
    if message.startswith("Invalid multipart data"):
        return (
            "the multipart body could not be parsed: a part's header is over 4 KiB (a file name needs 1 to "
            f"{MAX_UPLOAD_NAME_CHARS} characters) or its framing is broken"
        )
    return f"the multipart body could not be parsed: {message}"


async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
    return error_response(exc.status, exc.code, exc.detail, headers=exc.headers, path=request.url.path)


async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    # FastAPI turns a body its JSON parser raised on (other than a syntax error) into a bare 400: answer it
    # as the 422 a syntax error gets.
    if exc.status_code == 400 and isinstance(exc.__cause__, RecursionError):
        return _invalid_request(request, [FieldProblem(location="body", message="JSON nested too deeply")])
    if exc.status_code == 400 and isinstance(exc.__cause__, ValueError):
        problem = FieldProblem(location="body", message=NOT_UNICODE_JSON)
        return _invalid_request(request, [problem])
    if exc.status_code == 400 and isinstance(exc.__context__, MultiPartException):
        # Starlette's form parser caps files and part headers below what the route would name: its own words.
        return error_response(422, "invalid_request", _multipart_problem(exc.__context__), path=request.url.path)
    code = _STATUS_CODES.get(exc.status_code, "http_error")
    return error_response(
        exc.status_code, code, str(exc.detail), headers=getattr(exc, "headers", None), path=request.url.path
    )


async def _invalid(request: Request, exc: Exception) -> JSONResponse:
    return error_response(_invalid_status(request), "invalid_request", str(exc), path=request.url.path)


async def _kb_not_found(request: Request, exc: KnowledgeBaseNotFoundError) -> JSONResponse:
    return error_response(404, "kb_not_found", str(exc), path=request.url.path)


async def _graph_disabled(request: Request, exc: GraphDisabledError) -> JSONResponse:
    kb = request.path_params.get("kb", "{kb}")
    detail = (
        f"the graph of knowledge base {kb!r} is disabled, so it cannot be searched; a manage key can "
        f'enable it again with PUT /api/v1/knowledge-bases/{kb}/graph {{"enabled": true}}'
    )
    headers = {"Retry-After": str(RETRY_AFTER_GRAPH_DISABLED_S)}
    return error_response(503, "graph_disabled", detail, headers=headers, path=request.url.path)


async def _backend_unavailable(request: Request, exc: Exception) -> JSONResponse:
    # The driver's message names hosts and ports; it goes to the log, not to the caller. The store's health
    # state warns once per outage, so each 503 is only an info line.
    log.info("graph backend unavailable: %s", exc)
    return error_response(
        503,
        "backend_unavailable",
        "the graph backend (Neo4j) is unavailable; retry later",
        headers={"Retry-After": str(RETRY_AFTER_UNAVAILABLE_S)},
        path=request.url.path,
    )


async def _model_error(request: Request, exc: ModelError) -> JSONResponse:
    log.warning("model error: %s", exc)
    detail = "the language model failed after its retries; retry later"
    return error_response(502, "model_error", detail, path=request.url.path)


async def _model_required(request: Request, exc: ModelRequiredError) -> JSONResponse:
    return error_response(409, "model_required", str(exc), path=request.url.path)


async def _query_timeout(request: Request, exc: QueryTimeoutError) -> JSONResponse:
    log.warning("query timeout: %s", exc)
    return error_response(504, "query_timeout", str(exc), path=request.url.path)


async def _internal(request: Request, exc: Exception) -> JSONResponse:
    log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    detail = "internal server error; the server log has the details"
    return error_response(500, "internal_error", detail, path=request.url.path)


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _validation)
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(StarletteHTTPException, _http)
    for invalid in (InvalidQueryError, InvalidIdentifierError, InputError, InvalidExtractConfigError):
        app.add_exception_handler(invalid, _invalid)
    app.add_exception_handler(KnowledgeBaseNotFoundError, _kb_not_found)
    # Starlette picks the handler of the nearest class in the MRO, so the subclass wins over its parent.
    app.add_exception_handler(GraphDisabledError, _graph_disabled)
    app.add_exception_handler(BackendUnavailableError, _backend_unavailable)
    app.add_exception_handler(UnsupportedServerError, _backend_unavailable)
    # The store turns the driver's connection failures and refused credentials into BackendUnavailableError.
    app.add_exception_handler(ModelError, _model_error)
    app.add_exception_handler(ModelRequiredError, _model_required)
    app.add_exception_handler(QueryTimeoutError, _query_timeout)
    app.add_exception_handler(Exception, _internal)
