"""Bodies are bounded and keys checked before anything reads a body: raw HTTP against the real uvicorn server.

Each test sends the headers and only the start of a large body, then reads the answer: an answer
that arrives while most of the body was never sent proves the server did not wait for (or read) it.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from driftrag.api import create_app
from driftrag.api.server import BackgroundServer
from driftrag.facade import DriftRAG
from driftrag.settings import Settings

MAX_BODY_KB = 64


@pytest.fixture(scope="module")
def small_limits_server(api_settings: Settings, api_keys) -> Iterator[BackgroundServer]:
    settings = api_settings.model_copy(update={"api_max_body_kb": MAX_BODY_KB, "api_max_ingest_body_mb": 1.0})
    with BackgroundServer(create_app(DriftRAG(settings), api_keys)) as running:
        yield running


def _connect(server: BackgroundServer) -> socket.socket:
    url = urlsplit(server.url)
    sock = socket.create_connection((url.hostname, url.port), timeout=10)
    return sock


def _head(path: str, headers: dict[str, str]) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _status_and_body(sock: socket.socket) -> tuple[int, dict]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1])
    length = next(
        (int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")), 0
    )
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    return status, json.loads(rest[:length] or b"{}")


def test_a_huge_body_without_a_key_is_401_before_it_is_read(server: BackgroundServer, corpus_kb: str) -> None:
    path = f"/api/v1/knowledge-bases/{corpus_kb}/documents"
    declared = 300 * 1024 * 1024
    with _connect(server) as sock:
        started = time.monotonic()
        sock.sendall(_head(path, {"Content-Type": "application/json", "Content-Length": str(declared)}))
        sock.sendall(b'{"texts": [{"title": "t", "text": "' + b"x" * 65536)
        status, body = _status_and_body(sock)
        elapsed = time.monotonic() - started
    assert status == 401 and body["code"] == "unauthorized"
    assert elapsed < 5, "the answer came before the 300 MB were sent"


@pytest.mark.parametrize("header", ["Authorization", "X-API-Key"])
def test_a_declared_body_over_the_limit_is_413(small_limits_server, corpus_kb: str, keys, header: str) -> None:
    value = f"Bearer {keys.reader}" if header == "Authorization" else keys.reader
    with _connect(small_limits_server) as sock:
        sock.sendall(
            _head(
                f"/api/v1/knowledge-bases/{corpus_kb}/graph-search",
                {header: value, "Content-Type": "application/json", "Content-Length": str(MAX_BODY_KB * 1024 + 1)},
            )
        )
        status, body = _status_and_body(sock)
    assert status == 413 and body["code"] == "payload_too_large"


def test_a_streamed_body_is_cut_at_the_limit(small_limits_server, corpus_kb: str, keys) -> None:
    with _connect(small_limits_server) as sock:
        sock.sendall(
            _head(
                f"/api/v1/knowledge-bases/{corpus_kb}/graph-search",
                {
                    "Authorization": f"Bearer {keys.reader}",
                    "Content-Type": "application/json",
                    "Transfer-Encoding": "chunked",
                },
            )
        )
        piece = b'{"query": "' + b"x" * 16384
        sent = 0
        # Twice the limit, never terminated: only a server that stops reading at the limit can answer.
        while sent <= 2 * MAX_BODY_KB * 1024:
            sock.sendall(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            sent += len(piece)
            piece = b"x" * 16384
        status, body = _status_and_body(sock)
    assert status == 413 and body["code"] == "payload_too_large"


def test_ingestion_has_its_own_larger_limit(small_limits_server, make_client, corpus_kb: str, keys) -> None:
    client = make_client(small_limits_server, keys.manage_all)
    # Over the 64 KiB of other routes, under the 1 MiB of ingestion: refused by validation, not by size.
    body = {"texts": [{"title": "", "text": "x" * (200 * 1024)}]}
    assert client.post(f"/knowledge-bases/{corpus_kb}/documents", json=body).status_code == 422
    too_big = {"texts": [{"title": "t", "text": "x" * (2 * 1024 * 1024)}]}
    response = client.post(f"/knowledge-bases/{corpus_kb}/documents", json=too_big)
    assert response.status_code == 413 and response.json()["code"] == "payload_too_large"
    # Other routes keep the small limit.
    search = client.post(f"/knowledge-bases/{corpus_kb}/graph-search", json={"query": "x" * (100 * 1024)})
    assert search.status_code == 413


def test_the_openapi_document_needs_no_key(small_limits_server) -> None:
    assert httpx.get(f"{small_limits_server.url}/api/v1/openapi.json").status_code == 200
