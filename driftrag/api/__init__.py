"""The HTTP API (FastAPI, served by uvicorn): `create_app(rag, keys)` and the API keys it accepts."""

from driftrag.api.app import create_app, openapi_document, render_openapi
from driftrag.api.auth import ApiKeys, Principal

__all__ = ["ApiKeys", "Principal", "create_app", "openapi_document", "render_openapi"]
