"""Slow and greedy clients against the real uvicorn server (127.0.0.1) over the test Neo4j: a trickled header
or body is closed within its time-out, ordinary requests still answer meanwhile, a steady large upload is not
cut, Content-Length with chunked framing is refused, and the connection cap answers 503 beyond it.

The time-outs are set small through the settings, as an operator would; each check allows a margin of a
few seconds for a busy machine, far below what an unguarded server would hold a trickle open (for ever).
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from driftrag.api import create_app
from driftrag.api.server import BackgroundServer
from driftrag.facade import DriftRAG
from driftrag.settings import Settings

HEADER_TIMEOUT_S = 1.0
BODY_TIMEOUT_S = 1.5
MARGIN_S = 3.0
TRICKLE_EVERY_S = 0.25  # well inside each time-out: only the total time can catch it


@pytest.fixture(scope="module")
def guarded_settings(api_settings: Settings) -> Settings:
    return api_settings.model_copy(
        update={
            "api_header_timeout_s": HEADER_TIMEOUT_S,
            "api_body_timeout_s": BODY_TIMEOUT_S,
            "api_body_min_rate_kib_s": 64.0,
        }
    )


@pytest.fixture(scope="module")
def guarded(guarded_settings: Settings, api_keys) -> Iterator[BackgroundServer]:
    app = create_app(DriftRAG(guarded_settings), api_keys)
    with BackgroundServer(app, settings=guarded_settings) as running:
        yield running


def _connect(server: BackgroundServer) -> socket.socket:
    url = urlsplit(server.url)
    return socket.create_connection((url.hostname, url.port), timeout=10)


def _head(method: str, path: str, headers: dict[str, str]) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def trickle(sock: socket.socket, *, limit_s: float) -> tuple[float, bytes]:
    """Send one byte every TRICKLE_EVERY_S until the server closes; the seconds that took and what it sent."""
    started = time.monotonic()
    sock.settimeout(TRICKLE_EVERY_S)
    received = b""
    while time.monotonic() - started < limit_s:
        try:
            sock.sendall(b"a")
        except OSError:  # reset: closed by the server
            break
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            continue
        except OSError:
            break
        if not chunk:
            break
        received += chunk
    else:
        raise AssertionError(f"the server kept a trickling connection open for {limit_s:g} s")
    return time.monotonic() - started, received


def _answer(raw: bytes) -> tuple[int, dict]:
    head, _, body = raw.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), json.loads(body)


def test_a_trickled_header_is_closed_within_its_timeout(guarded: BackgroundServer, corpus_kb: str) -> None:
    with _connect(guarded) as sock:
        sock.sendall(f"POST /api/v1/knowledge-bases/{corpus_kb}/graph-search HTTP/1.1\r\nX-Padding: ".encode())
        elapsed, received = trickle(sock, limit_s=HEADER_TIMEOUT_S + MARGIN_S)
    status, body = _answer(received)
    assert status == 408 and body["code"] == "request_timeout"
    assert HEADER_TIMEOUT_S * 0.8 <= elapsed <= HEADER_TIMEOUT_S + MARGIN_S


def test_a_silent_connection_is_closed_without_an_answer(guarded: BackgroundServer) -> None:
    with _connect(guarded) as sock:
        started = time.monotonic()
        assert sock.recv(1024) == b""  # closed, nothing written: it asked for nothing
        assert time.monotonic() - started <= HEADER_TIMEOUT_S + MARGIN_S


def test_a_trickled_body_is_closed_within_its_timeout(guarded: BackgroundServer, corpus_kb: str, keys) -> None:
    headers = {"Authorization": f"Bearer {keys.reader}", "Content-Type": "application/json", "Content-Length": "500"}
    with _connect(guarded) as sock:
        sock.sendall(_head("POST", f"/api/v1/knowledge-bases/{corpus_kb}/graph-search", headers) + b'{"query": "')
        elapsed, received = trickle(sock, limit_s=BODY_TIMEOUT_S + MARGIN_S)
    status, body = _answer(received)
    assert status == 408 and body["code"] == "request_timeout"
    assert BODY_TIMEOUT_S * 0.8 <= elapsed <= BODY_TIMEOUT_S + MARGIN_S


def test_a_trickled_body_the_route_never_reads_is_closed_too(guarded: BackgroundServer, keys) -> None:
    # /system takes no body and answers at once; the rest of the declared body must still come in time.
    headers = {"Authorization": f"Bearer {keys.reader}", "Content-Length": "500"}
    with _connect(guarded) as sock:
        sock.sendall(_head("GET", "/api/v1/system", headers))
        elapsed, received = trickle(sock, limit_s=BODY_TIMEOUT_S + MARGIN_S)
    assert received.startswith(b"HTTP/1.1 200")
    assert elapsed <= BODY_TIMEOUT_S + MARGIN_S


def test_a_steady_upload_longer_than_the_base_timeout_is_not_cut(
    guarded: BackgroundServer, corpus_kb: str, keys
) -> None:
    # 320 KiB at about 128 KiB/s takes 2.5 s, over the 1.5 s base; at 64 KiB/s it earns 5 s more.
    body = b'{"query": "Captain"' + b" " * (320 * 1024) + b"}"
    headers = {
        "Authorization": f"Bearer {keys.reader}",
        "Content-Type": "application/json",
        "Content-Length": str(len(body)),
    }
    with _connect(guarded) as sock:
        sock.sendall(_head("POST", f"/api/v1/knowledge-bases/{corpus_kb}/graph-search", headers))
        started = time.monotonic()
        for offset in range(0, len(body), 16 * 1024):
            sock.sendall(body[offset : offset + 16 * 1024])
            time.sleep(0.125)
        assert time.monotonic() - started > BODY_TIMEOUT_S
        sock.settimeout(120)  # a slow answer is fine here (a busy machine): only a cut would fail the test
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = sock.recv(65536)
            assert chunk, "closed before the answer"
            received += chunk
    assert received.startswith(b"HTTP/1.1 200"), received[:200]


def test_ordinary_requests_answer_while_slow_clients_trickle(
    guarded: BackgroundServer, corpus_kb: str, keys, make_client
) -> None:
    outcomes: list[float] = []

    def slow_header() -> None:
        with _connect(guarded) as sock:
            sock.sendall(b"GET /api/v1/system HTTP/1.1\r\nX-Padding: ")
            outcomes.append(trickle(sock, limit_s=HEADER_TIMEOUT_S + MARGIN_S)[0])

    def slow_body() -> None:
        headers = {
            "Authorization": f"Bearer {keys.reader}",
            "Content-Type": "application/json",
            "Content-Length": "900",
        }
        with _connect(guarded) as sock:
            sock.sendall(_head("POST", f"/api/v1/knowledge-bases/{corpus_kb}/graph-search", headers))
            outcomes.append(trickle(sock, limit_s=BODY_TIMEOUT_S + MARGIN_S)[0])

    threads = [threading.Thread(target=target) for target in (slow_header, slow_body) * 4]
    for thread in threads:
        thread.start()
    client = make_client(guarded, keys.reader)
    try:
        for _ in range(10):
            response = client.post(f"/knowledge-bases/{corpus_kb}/graph-search", json={"query": "Captain"})
            assert response.status_code == 200 and response.json()["entities"]
    finally:
        for thread in threads:
            thread.join(timeout=30)
    assert len(outcomes) == len(threads), "every slow client was closed by the server"


def test_content_length_with_chunked_framing_is_refused(guarded: BackgroundServer, corpus_kb: str, keys) -> None:
    headers = {
        "Authorization": f"Bearer {keys.reader}",
        "Content-Type": "application/json",
        "Content-Length": "4",
        "Transfer-Encoding": "chunked",
    }
    payload = b'{"query": "Captain"}'
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(payload), payload)
    smuggled = _head("GET", "/api/v1/system", {"Authorization": f"Bearer {keys.reader}"})
    with _connect(guarded) as sock:
        sock.sendall(_head("POST", f"/api/v1/knowledge-bases/{corpus_kb}/graph-search", headers) + chunked + smuggled)
        received = b""
        while chunk := sock.recv(65536):  # read to the close: nothing else may be answered on this connection
            received += chunk
    status, body = _answer(received)
    assert status == 400 and body["code"] == "invalid_request"
    assert "Content-Length and Transfer-Encoding" in body["detail"]
    assert received.count(b"HTTP/1.1") == 1, "the request behind it was not served"


class _Records(logging.Handler):
    """Every record of the server's loggers while a test runs (uvicorn's do not reach caplog's root)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def server_log() -> Iterator[_Records]:
    handler = _Records()
    loggers = [logging.getLogger(name) for name in ("uvicorn.error", "driftrag.api", "asyncio")]
    for logger in loggers:
        logger.addHandler(handler)
    try:
        yield handler
    finally:
        for logger in loggers:
            logger.removeHandler(handler)


def _exchange(server: BackgroundServer, raw: bytes) -> bytes:
    with _connect(server) as sock:
        sock.sendall(raw)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    return received


@pytest.mark.parametrize("path", ["/api/v1/system", "/no/such/path"])
def test_both_framings_with_a_body_that_is_not_chunked_are_one_json_400_without_traceback(
    guarded: BackgroundServer, keys, server_log: _Records, path: str
) -> None:
    # h11 reads the body as chunked: "hello world" is no chunk size. It used to answer its own plain-text 400
    # while the app answered too, which logged two ERROR tracebacks per request.
    headers = {"Authorization": f"Bearer {keys.reader}", "Content-Length": "11", "Transfer-Encoding": "chunked"}
    for _ in range(3):
        received = _exchange(guarded, _head("POST", path, headers) + b"hello world\r\n\r\n")
        status, body = _answer(received)
        assert status == 400 and body["code"] == "invalid_request"
        assert "Content-Length and Transfer-Encoding" in body["detail"]
    time.sleep(0.3)  # an app task still running would log its failure now
    assert not [r for r in server_log.records if r.levelno >= logging.ERROR or r.exc_info], [
        r.getMessage() for r in server_log.records
    ]


@pytest.mark.parametrize(
    "framing",
    [b"Transfer-Encoding: gzip\r\n", b"Content-Length: 4\r\nContent-Length: 5\r\n"],
    ids=["unknown-transfer-encoding", "two-content-lengths"],
)
def test_a_request_h11_cannot_parse_is_a_json_400(
    guarded: BackgroundServer, keys, server_log: _Records, framing: bytes
) -> None:
    head = _head("POST", "/api/v1/system", {"Authorization": f"Bearer {keys.reader}"})
    received = _exchange(guarded, head[:-2] + framing + b"\r\nabcd")
    status, body = _answer(received)
    assert status == 400 and body["code"] == "invalid_request"
    assert not [r for r in server_log.records if r.levelno >= logging.ERROR or r.exc_info]


def test_a_header_over_the_limit_still_incomplete_is_a_json_400(
    guarded: BackgroundServer, guarded_settings: Settings, server_log: _Records
) -> None:
    limit = guarded_settings.api_max_header_kb * 1024
    received = _exchange(guarded, b"GET /api/v1/system HTTP/1.1\r\nX-Padding: " + b"a" * (limit + 1024))
    status, body = _answer(received)
    assert status == 400 and body["code"] == "invalid_request"
    assert not [r for r in server_log.records if r.levelno >= logging.ERROR or r.exc_info]


def test_a_websocket_upgrade_is_served_as_plain_http(guarded: BackgroundServer, keys) -> None:
    headers = {
        "Authorization": f"Bearer {keys.reader}",
        "Connection": "Upgrade",
        "Upgrade": "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
    }
    with _connect(guarded) as sock:
        sock.sendall(_head("GET", "/api/v1/system", headers))
        received = b""
        while b"\r\n\r\n" not in received or not received.rstrip().endswith(b"}"):
            chunk = sock.recv(65536)
            assert chunk, received
            received += chunk
    assert received.startswith(b"HTTP/1.1 200"), received[:100]
    assert json.loads(received.partition(b"\r\n\r\n")[2])["version"]


def test_chunked_framing_alone_is_served(guarded: BackgroundServer, corpus_kb: str, keys) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"query": '
        yield b'"Captain"}'

    client = httpx.Client(
        base_url=f"{guarded.url}/api/v1", headers={"Authorization": f"Bearer {keys.reader}"}, timeout=120
    )
    with client:
        response = client.post(
            f"/knowledge-bases/{corpus_kb}/graph-search", content=chunks(), headers={"Content-Type": "application/json"}
        )
    assert response.status_code == 200 and response.json()["entities"]


def test_a_header_over_the_limit_is_431(guarded: BackgroundServer, guarded_settings: Settings, keys) -> None:
    limit = guarded_settings.api_max_header_kb * 1024
    headers = {"Authorization": f"Bearer {keys.reader}", "X-Padding": "a" * limit}
    with _connect(guarded) as sock:
        sock.sendall(_head("GET", "/api/v1/system", headers))  # whole, in one write
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    status, body = _answer(received)
    assert status == 431 and body["code"] == "headers_too_large"
    small = httpx.get(f"{guarded.url}/api/v1/system", headers={**headers, "X-Padding": "a" * 1000}, timeout=120)
    assert small.status_code == 200


# --- the connection cap --------------------------------------------------------------------------------------

CAP = 3


@pytest.fixture(scope="module")
def capped(api_settings: Settings, api_keys) -> Iterator[BackgroundServer]:
    settings = api_settings.model_copy(update={"api_max_connections": CAP, "api_header_timeout_s": 60.0})
    with BackgroundServer(create_app(DriftRAG(settings), api_keys), settings=settings) as running:
        yield running


def test_requests_beyond_the_connection_cap_are_503(capped: BackgroundServer, keys, make_client) -> None:
    client = make_client(capped, keys.reader)
    assert client.get("/system").status_code == 200  # warm: the client's own connection stays open
    held = [_connect(capped) for _ in range(CAP)]
    try:
        for sock in held:
            sock.sendall(b"GET /api/v1/system HTTP/1.1\r\n")  # a header begun, never finished
        time.sleep(0.3)
        assert client.get("/system").status_code == 503, "CAP connections are open besides the client's"
        held.pop().close()
        time.sleep(0.3)
        assert client.get("/system").status_code == 200
    finally:
        for sock in held:
            sock.close()
