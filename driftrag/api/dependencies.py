"""The route dependencies every router shares: the backend, the key's principal (401), and the kb a key may
use with a scope (422, 403)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request, Security
from fastapi import Path as PathParam
from fastapi.security import APIKeyHeader, APIKeyQuery, HTTPAuthorizationCredentials, HTTPBearer

from driftrag.api.auth import ApiKeys, Principal, Scope
from driftrag.api.backend import Backend
from driftrag.api.errors import ApiError
from driftrag.api.limits import QUERY_KEY_PARAM
from driftrag.models.identifiers import KB_ID_PATTERN, validate_kb_id

_bearer = HTTPBearer(auto_error=False, description="`Authorization: Bearer <key>`")
_api_key_header = APIKeyHeader(name="X-API-Key", auto_error=False, description="`X-API-Key: <key>`")
_api_key_query = APIKeyQuery(
    name=QUERY_KEY_PARAM,
    auto_error=False,
    description="`?api_key=<key>`: only `GET …/query/stream`, and only on a server started with "
    "DRIFTRAG_API_ALLOW_QUERY_KEY=true (a browser's EventSource cannot send headers).",
)

_UNAUTHORIZED_HEADERS = {"WWW-Authenticate": "Bearer"}


def backend_of(request: Request) -> Backend:
    return request.app.state.backend


def keys_of(request: Request) -> ApiKeys:
    return request.app.state.keys


def _principal(keys: ApiKeys, presented: set[str]) -> Principal:
    if len(presented) > 1:
        raise ApiError(401, "unauthorized", "two different API keys were sent; send one", _UNAUTHORIZED_HEADERS)
    principal = keys.authenticate(next(iter(presented), None))
    if principal is None:
        detail = (
            "invalid API key" if presented else "missing API key: send `Authorization: Bearer <key>` or `X-API-Key`"
        )
        raise ApiError(401, "unauthorized", detail, _UNAUTHORIZED_HEADERS)
    return principal


def authenticate(
    keys: Annotated[ApiKeys, Depends(keys_of)],
    bearer: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
    header_key: Annotated[str | None, Security(_api_key_header)],
) -> Principal:
    """401 without a key, with an unknown key, or with two different keys."""
    return _principal(keys, {key for key in (bearer.credentials if bearer else None, header_key) if key})


def authenticate_with_query_key(
    keys: Annotated[ApiKeys, Depends(keys_of)],
    bearer: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
    header_key: Annotated[str | None, Security(_api_key_header)],
    query_key: Annotated[str | None, Security(_api_key_query)],
) -> Principal:
    """`authenticate`, also reading `?api_key=`; `RequestLimits` has refused it already unless the server
    allows it on this route."""
    presented = {key.strip() for key in (bearer.credentials if bearer else None, header_key, query_key) if key}
    return _principal(keys, {key for key in presented if key})


KbPath = Annotated[
    str,
    PathParam(
        description="Knowledge base id: 1-64 of A-Z a-z 0-9 _ -, starting with a letter or digit.",
        json_schema_extra={"pattern": KB_ID_PATTERN.pattern},
    ),
]


def authorise(principal: Principal, kb: str, scope: Scope) -> str:
    """The validated kb id once `principal` may use it with `scope` (422, 403)."""
    validate_kb_id(kb)
    if not principal.has_scope(scope):
        raise ApiError(403, "forbidden", f"the API key {principal.name!r} lacks the {scope!r} scope")
    if not principal.may_use(kb):
        raise ApiError(403, "forbidden", f"the API key {principal.name!r} may not use knowledge base {kb!r}")
    return kb


def _require(scope: Scope):
    """A dependency giving the validated kb id once the key may use it with `scope` (401, 422, 403)."""

    def authorised_kb(kb: KbPath, principal: Annotated[Principal, Depends(authenticate)]) -> str:
        return authorise(principal, kb, scope)

    return authorised_kb


def _read_kb_with_query_key(kb: KbPath, principal: Annotated[Principal, Depends(authenticate_with_query_key)]) -> str:
    return authorise(principal, kb, "read")


ReadKb = Annotated[str, Depends(_require("read"))]
ManageKb = Annotated[str, Depends(_require("manage"))]
# The EventSource form of the query stream: the key may also come as `?api_key=` (see `driftrag.api.limits`).
ReadKbFromUrl = Annotated[str, Depends(_read_kb_with_query_key)]
BackendDep = Annotated[Backend, Depends(backend_of)]
PrincipalDep = Annotated[Principal, Depends(authenticate)]
KeysDep = Annotated[ApiKeys, Depends(keys_of)]
