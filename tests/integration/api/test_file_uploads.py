"""Files uploaded over HTTP (`POST …/documents/files`, multipart), on a real uvicorn and the real Neo4j:
read by the same loaders as `driftrag ingest`, pages and chapters kept into the sources, a bad file one
422 naming its place (nothing queued), the ingestion body limit applied."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from driftrag.api import create_app
from driftrag.api.server import BackgroundServer
from driftrag.facade import DriftRAG
from driftrag.settings import Settings
from tests.fakes.documents import html_page, write_docx, write_epub, write_pdf
from tests.support.jobs import wait_for

PAGE_ONE = ["Captain Mirela Voss sailed into Harbor Town at dawn.", "Captain Mirela Voss met Pip Rackham."]
PAGE_TWO = ["Pip Rackham ran to the Amber Lighthouse.", "Pip Rackham found the keeper asleep."]


def _files(folder: Path) -> list[tuple[str, tuple[str, bytes, str]]]:
    folder.mkdir()
    pdf = write_pdf(folder / "logbook.pdf", [PAGE_ONE, PAGE_TWO, []])  # page 3: no text layer, nothing to OCR
    docx = write_docx(
        folder / "crew.docx",
        ["Captain Mirela Voss commands the Gull."],
        [["Ship", "Captain"], ["Gull", "Mirela Voss"]],
    )
    epub = write_epub(folder / "tales.epub", [("The Lamp", ["Pip Rackham lit the lamp."]), ("The Storm", ["Voss"])])
    html = html_page("Harbor Town", ["Harbor Town keeps the Amber Lighthouse."]).encode("utf-16")  # with a BOM
    return [
        ("files", ("logbook.pdf", pdf.read_bytes(), "application/pdf")),
        ("files", ("crew.docx", docx.read_bytes(), "application/octet-stream")),
        ("files", ("tales.epub", epub.read_bytes(), "application/epub+zip")),
        ("files", ("../../town.html", html, "text/html")),  # a path in the name is dropped
    ]


@pytest.fixture
def kb(admin: httpx.Client) -> Iterator[str]:
    name = f"test-uploads-{uuid.uuid4().hex[:8]}"
    yield name
    admin.delete(f"/knowledge-bases/{name}")


def test_uploaded_files_are_ingested_with_their_pages_and_chapters(
    admin: httpx.Client, kb: str, tmp_path: Path
) -> None:
    response = admin.post(f"/knowledge-bases/{kb}/documents/files", files=_files(tmp_path / "upload"))
    assert response.status_code == 202, response.text
    assert response.json()["texts"] == 4
    job = wait_for(admin, kb, response.json()["id"])
    assert job["state"] == "succeeded", job["error"]
    outcomes = {outcome["source"]: outcome for outcome in job["result"]["documents"]}
    assert sorted(outcomes) == ["crew.docx", "logbook.pdf", "tales.epub", "town.html"]
    assert all(outcome["status"] == "new" and outcome["chunks"] >= 1 for outcome in outcomes.values())
    [warning] = outcomes["logbook.pdf"]["warnings"]
    assert warning.startswith("logbook.pdf: page 3 has no text layer")

    answer = admin.post(
        f"/knowledge-bases/{kb}/query", json={"question": "Who found the keeper asleep?", "mode": "basic"}
    )
    assert answer.status_code == 200, answer.text
    by_title = {source["title"]: source for source in answer.json()["sources"] if source["kind"] == "chunk"}
    assert by_title["logbook.pdf"]["pages"] == [1, 2]
    epub = admin.post(f"/knowledge-bases/{kb}/query", json={"question": "Who lit the lamp?", "mode": "basic"}).json()
    [tales] = [source for source in epub["sources"] if source["title"] == "tales.epub"]
    assert tales["section_kind"] == "chapter" and tales["sections"] == [1, 2]
    assert tales["section_titles"] == ["The Lamp", "The Storm"]

    # The same files again: nothing new.
    again = admin.post(f"/knowledge-bases/{kb}/documents/files", files=_files(tmp_path / "again"))
    rerun = wait_for(admin, kb, again.json()["id"])
    assert {outcome["status"] for outcome in rerun["result"]["documents"]} == {"unchanged"}


def test_a_bad_file_is_one_422_naming_its_place_and_nothing_is_queued(
    admin: httpx.Client, kb: str, tmp_path: Path
) -> None:
    files = _files(tmp_path / "upload")
    files.insert(1, ("files", ("<img src=x onerror=alert(1)>.pdf", b"%PDF-1.4\n" + bytes(range(256)) * 4, "x/y")))
    response = admin.post(f"/knowledge-bases/{kb}/documents/files", files=files)
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "invalid_request" and "files[1]: not a readable PDF" in body["detail"]
    assert "onerror" not in response.text  # the name the client sent is not echoed
    assert admin.get(f"/knowledge-bases/{kb}/jobs").json()["jobs"] == []


@pytest.mark.parametrize(
    ("name", "content", "problem"),
    [
        ("photo.png", b"\x89PNG\r\n", "files[0]: not a supported file type; the name must end in one of .docx"),
        ("/", b"text", "files[0]: the file needs a name"),
        ("notes.txt", b"\x00\x01\x02binary" * 20, "files[0]: looks like a binary file, not text"),
        ("empty.md", b"  \n", "files[0]: file is empty"),
    ],
)
def test_uploads_that_cannot_be_read_are_refused(
    admin: httpx.Client, kb: str, name: str, content: bytes, problem: str
) -> None:
    response = admin.post(f"/knowledge-bases/{kb}/documents/files", files=[("files", (name, content, "text/plain"))])
    assert response.status_code == 422, response.text
    assert problem in response.json()["detail"]


def test_two_files_of_the_same_name_are_refused(admin: httpx.Client, kb: str) -> None:
    part = ("files", ("a.txt", b"Captain Mirela Voss.", "text/plain"))
    response = admin.post(f"/knowledge-bases/{kb}/documents/files", files=[part, part])
    assert response.status_code == 422 and "files[1]: two files of one request have the same name" in response.text


def test_uploading_needs_the_manage_scope(reader: httpx.Client, corpus_kb: str) -> None:
    part = ("files", ("a.txt", b"Captain Mirela Voss.", "text/plain"))
    assert reader.post(f"/knowledge-bases/{corpus_kb}/documents/files", files=[part]).status_code == 403


@pytest.fixture(scope="module")
def small_server(api_settings: Settings, api_keys) -> Iterator[BackgroundServer]:
    settings = api_settings.model_copy(
        update={"api_max_body_kb": 64, "api_max_ingest_body_mb": 1.0, "max_file_mb": 0.25}
    )
    with BackgroundServer(create_app(DriftRAG(settings), api_keys)) as running:
        yield running


def test_uploads_have_the_ingestion_body_limit_and_the_file_limit(small_server, make_client, keys) -> None:
    client = make_client(small_server, keys.manage_all)
    kb = f"test-uploads-{uuid.uuid4().hex[:8]}"
    # Over the 1 MiB of ingestion bodies: 413 from the limits, before the route reads it.
    big = [("files", ("big.txt", b"Captain Mirela Voss. " * 60_000, "text/plain"))]
    response = client.post(f"/knowledge-bases/{kb}/documents/files", files=big)
    assert response.status_code == 413 and response.json()["code"] == "payload_too_large"
    # Under it but over `max_file_mb` (0.25 MiB): 422 naming the setting.
    over = [("files", ("over.txt", b"Captain Mirela Voss. " * 20_000, "text/plain"))]
    response = client.post(f"/knowledge-bases/{kb}/documents/files", files=over)
    assert response.status_code == 422 and "files[0]: file is 420000 bytes" in response.json()["detail"]
    assert "max_file_mb" in response.json()["detail"]
