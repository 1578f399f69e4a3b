"""The committed OpenAPI document is the app's, byte for byte; and the CLI prints the same."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from driftrag.api.app import API_PREFIX, render_openapi

ROOT = Path(__file__).resolve().parents[3]
COMMITTED = ROOT / "docs" / "openapi.json"
REGENERATE = "regenerate it: `driftrag api openapi > docs/openapi.json`"


def test_the_committed_document_matches_the_code() -> None:
    assert COMMITTED.read_text(encoding="utf-8") == render_openapi(), REGENERATE


def test_the_document_covers_every_endpoint_and_both_credentials() -> None:
    document = json.loads(render_openapi())
    operations = {
        (method.upper(), path.removeprefix(API_PREFIX)) for path, item in document["paths"].items() for method in item
    }
    kb = "/knowledge-bases/{kb}"
    assert operations == {
        ("GET", "/system"),
        ("POST", f"{kb}/graph-search"),
        ("POST", f"{kb}/query"),
        ("POST", f"{kb}/query/stream"),
        ("GET", f"{kb}/query/stream"),
        ("GET", f"{kb}/stats"),
        ("GET", "/knowledge-bases"),
        ("POST", f"{kb}/documents"),
        ("POST", f"{kb}/documents/files"),
        ("GET", f"{kb}/jobs"),
        ("GET", f"{kb}/jobs/{{job_id}}"),
        ("DELETE", f"{kb}/documents/{{document_id}}"),
        ("DELETE", kb),
        ("POST", f"{kb}/chunks/enable"),
        ("POST", f"{kb}/chunks/disable"),
        ("PUT", f"{kb}/graph"),
        ("POST", f"{kb}/repair"),
        ("GET", f"{kb}/extract-config"),
        ("PUT", f"{kb}/extract-config"),
        ("DELETE", f"{kb}/extract-config"),
        ("POST", f"{kb}/extract/preview"),
        ("POST", f"{kb}/extract/suggest"),
        # The OpenAI-compatible routes, outside /api/v1.
        ("GET", "/v1/models"),
        ("GET", "/v1/models/{model}"),
        ("POST", "/v1/chat/completions"),
    }
    # The URL key is declared on the EventSource form of the stream only.
    assert set(document["components"]["securitySchemes"]) == {"HTTPBearer", "APIKeyHeader", "APIKeyQuery"}
    in_url = [
        (method, path)
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if any("APIKeyQuery" in requirement for requirement in operation.get("security", []))
    ]
    assert in_url == [("get", f"{API_PREFIX}{kb}/query/stream")]
    search = document["paths"][f"{API_PREFIX}{kb}/graph-search"]["post"]
    assert {"401", "403", "404", "422", "503"} <= set(search["responses"])
    assert "Retry-After" in search["responses"]["503"]["headers"]
    streamed = document["paths"][f"{API_PREFIX}{kb}/query/stream"]["post"]
    assert "text/event-stream" in streamed["responses"]["200"]["content"]
    assert {"401", "403", "404", "422", "502", "503", "504"} <= set(streamed["responses"])
    chat = document["paths"]["/v1/chat/completions"]["post"]
    assert {"400", "401", "404", "502", "503", "504"} <= set(chat["responses"])
    assert "text/event-stream" in chat["responses"]["200"]["content"]


def test_the_cli_prints_the_document() -> None:
    printed = subprocess.run(
        [sys.executable, "-m", "driftrag", "api", "openapi"], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert printed.stdout == render_openapi()
