"""Hostile uploads against the real uvicorn and Neo4j: a PDF listing one page thousands of times and an EPUB
whose text is far larger than its file are refused at once by the route's 422; a slow file's reading
runs in a parse worker and stops when its client goes away; queries are not held up meanwhile."""

from __future__ import annotations

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
from tests.support.hostile_files import epub, many_pages_pdf, repeated_page_pdf

SLOW_PAGES = 6000


@pytest.fixture(scope="module")
def engine(api_settings: Settings, api_keys) -> Iterator[tuple[BackgroundServer, DriftRAG]]:
    rag = DriftRAG(api_settings.model_copy(update={"parse_workers": 1}))
    with BackgroundServer(create_app(rag, api_keys), settings=api_settings) as running:
        yield running, rag


@pytest.fixture(scope="module")
def admin_client(engine, keys) -> Iterator[httpx.Client]:
    server, _ = engine
    with httpx.Client(
        base_url=f"{server.url}/api/v1", headers={"Authorization": f"Bearer {keys.manage_all}"}, timeout=120
    ) as client:
        yield client


def test_a_pdf_listing_one_page_20000_times_is_refused_at_once(admin_client: httpx.Client) -> None:
    started = time.monotonic()
    response = admin_client.post(
        "/knowledge-bases/hostile-never/documents/files",
        files=[("files", ("pages.pdf", repeated_page_pdf(20_000, fanout=200), "application/pdf"))],
    )
    assert time.monotonic() - started < 5
    assert response.status_code == 422, response.text
    assert response.json()["detail"].startswith("files[0]: its page tree lists object 3 0 R more than once")


def test_an_epub_whose_text_dwarfs_its_file_is_refused_naming_the_limit(admin_client: httpx.Client) -> None:
    sentence = "All work and no play makes a dull chapter. "
    chapters = {f"c{i}": f"{i} " + sentence * (1_000_000 // len(sentence)) for i in range(5)}
    response = admin_client.post(
        "/knowledge-bases/hostile-never/documents/files",
        files=[("files", ("bomb.epub", epub(chapters, list(chapters)), "application/epub+zip"))],
    )
    assert response.status_code == 422, response.text
    assert "DRIFTRAG_MAX_TEXT_RATIO" in response.json()["detail"]


def test_an_abandoned_upload_stops_its_reading(engine, keys) -> None:
    server, rag = engine
    request = httpx.Request(
        "POST",
        f"{server.url}/api/v1/knowledge-bases/hostile-never/documents/files",
        headers={"Authorization": f"Bearer {keys.manage_all}"},
        files=[("files", ("slow.pdf", many_pages_pdf(SLOW_PAGES), "application/pdf"))],
    )
    body = request.read()
    head = [f"POST {request.url.raw_path.decode()} HTTP/1.1", "Host: 127.0.0.1"]
    head += [f"{name}: {value}" for name, value in request.headers.items() if name.lower() != "host"]
    url = urlsplit(server.url)
    with socket.create_connection((url.hostname, url.port), timeout=10) as sock:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        deadline = time.monotonic() + 30
        while not rag.parsers._busy:  # the reading has started in a worker
            assert time.monotonic() < deadline, "the upload was never read"
            time.sleep(0.05)
        worker = next(iter(rag.parsers._busy))
    gone = time.monotonic()  # the client closed its connection
    while worker.process.returncode is None:
        assert time.monotonic() - gone < 5, "the worker kept reading for a client that was gone"
        time.sleep(0.05)
    assert not rag.parsers._busy
