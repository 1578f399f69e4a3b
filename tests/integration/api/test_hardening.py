"""Limits a caller cannot lift, answers that do not echo hostile input, and the manual's own HTTP examples,
against the real uvicorn server and Neo4j."""

from __future__ import annotations

import json
import os
import re
import subprocess
import uuid
from pathlib import Path

import httpx
import pytest

from driftrag.api.server import BackgroundServer
from driftrag.errors import InvalidQueryError
from driftrag.facade import DriftRAG
from driftrag.settings import Settings
from tests.support.jobs import wait_for

ROOT = Path(__file__).resolve().parents[3]
HOSTILE = "<script>alert(1)</script>" + "A" * 400


# --- graph-search caps are ceilings -------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["max_seeds", "max_rows"])
def test_a_caller_cannot_raise_the_graph_search_caps(
    reader: httpx.Client, corpus_kb: str, api_settings: Settings, field: str
) -> None:
    cap = getattr(api_settings, f"graph_search_{field}")
    above = reader.post(f"/knowledge-bases/{corpus_kb}/graph-search", json={"query": "Captain", field: cap + 1})
    assert above.status_code == 422, above.text
    assert f"{field} {cap + 1} is above the server's cap of {cap}" in above.json()["detail"]
    at_cap = reader.post(f"/knowledge-bases/{corpus_kb}/graph-search", json={"query": "Captain", field: cap})
    assert at_cap.status_code == 200


def test_a_caller_may_lower_the_graph_search_caps(reader: httpx.Client, corpus_kb: str) -> None:
    response = reader.post(f"/knowledge-bases/{corpus_kb}/graph-search", json={"query": "a", "max_seeds": 1})
    assert response.status_code == 200
    assert response.json()["truncation"]["candidates_returned"] <= 1


async def test_the_python_api_enforces_the_same_ceilings(api_settings: Settings, corpus_kb: str) -> None:
    async with DriftRAG(api_settings) as rag:
        with pytest.raises(InvalidQueryError, match="only lower the caps"):
            await rag.graph_search(corpus_kb, "Captain", max_rows=api_settings.graph_search_max_rows + 1)


# --- one question limit --------------------------------------------------------------------------------------


def test_a_question_over_the_token_limit_is_422(reader: httpx.Client, corpus_kb: str, api_settings: Settings) -> None:
    # Under the body's character cap, over the token limit: distinct words are about one token each.
    question = " ".join(f"w{i}" for i in range(api_settings.max_question_tokens + 50))
    for mode in ("drift", "local", "entity", "basic"):
        response = reader.post(f"/knowledge-bases/{corpus_kb}/query", json={"question": question, "mode": mode})
        assert response.status_code == 422, response.text
        assert "too long" in response.json()["detail"] and "DRIFTRAG_MAX_QUESTION_TOKENS" in response.json()["detail"]


async def test_the_python_api_refuses_a_long_question_at_once(api_settings: Settings, corpus_kb: str) -> None:
    async with DriftRAG(api_settings) as rag:
        for mode in ("drift", "local", "entity", "basic"):
            with pytest.raises(InvalidQueryError, match="too long"):
                await rag.query(corpus_kb, "why " * 200_000, mode=mode)


# --- no echo ------------------------------------------------------------------------------------------------


def test_422_answers_do_not_echo_hostile_ids(admin: httpx.Client, corpus_kb: str) -> None:
    for response in (
        admin.post(f"/knowledge-bases/{corpus_kb}/chunks/disable", json={"chunk_ids": [HOSTILE]}),
        admin.delete(f"/knowledge-bases/{corpus_kb}/documents/document-{'x' * 300}<b>"),
        admin.post(f"/knowledge-bases/<b>onclick=alert(1){'A' * 40}/graph-search", json={"query": "Captain"}),
        admin.post(f"/knowledge-bases/{corpus_kb}/chunks/enable", json={"chunk_ids": ["chunk-ok", HOSTILE]}),
    ):
        assert response.status_code == 422, response.text
        assert "<script>" not in response.text and "AAAAAAAAAA" not in response.text and "<b>" not in response.text


def test_a_hostile_body_of_unknown_fields_gets_a_small_422_without_a_copy(reader: httpx.Client, corpus_kb: str) -> None:
    name = "<img src=x onerror=alert(1)>"
    fields = ", ".join(f'"{name}{i}": 1' for i in range(13_000))
    body = f'{{"query": "Captain", {fields}}}'.encode()
    assert len(body) > 400_000
    response = reader.post(
        f"/knowledge-bases/{corpus_kb}/graph-search", content=body, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 422
    assert len(response.content) < 1000, "bounded, whatever the input"
    assert "onerror" not in response.text and "<img" not in response.text
    error = response.json()
    assert error["code"] == "invalid_request"
    assert error["problems"] == [{"location": "body", "message": "unknown field (not shown) (×13000)"}]


def test_many_distinct_problems_are_capped_with_a_count(admin: httpx.Client, corpus_kb: str) -> None:
    texts = [{"title": f"{HOSTILE}{i}", "text": " ", HOSTILE: i} for i in range(200)]
    response = admin.post(f"/knowledge-bases/{corpus_kb}/documents", json={"texts": texts})
    assert response.status_code == 422
    error = response.json()
    assert len(error["problems"]) == 20 and error["problems_omitted"] == 2 * 200 - 20
    assert all(problem["location"].startswith("body.texts.") for problem in error["problems"])
    assert "<script>" not in response.text and "AAAAAAAAAA" not in response.text


@pytest.mark.parametrize(
    "body",
    [b"[" * 50_000 + b"]" * 50_000, b'{"query": ' + b"[" * 50_000 + b"]" * 50_000 + b"}"],
    ids=["deep-array", "deep-field"],
)
def test_deeply_nested_json_is_the_usual_422(reader: httpx.Client, corpus_kb: str, body: bytes) -> None:
    response = reader.post(
        f"/knowledge-bases/{corpus_kb}/graph-search", content=body, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 422, response.text
    error = response.json()
    assert error["code"] == "invalid_request"
    assert error["problems"] == [{"location": "body", "message": "JSON nested too deeply"}]


def test_a_body_that_is_not_utf8_is_the_usual_422(reader: httpx.Client, corpus_kb: str) -> None:
    response = reader.post(
        f"/knowledge-bases/{corpus_kb}/graph-search",
        content=b'{"query": "Capt\xe9\xff"}',
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 422, response.text
    assert response.json()["problems"][0]["location"] == "body"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"not json", "JSON decode error"),
        (b"[" * 10_000 + b"]" * 10_000, "JSON nested too deeply"),
        (b'{"query": "Captain"', "JSON decode error"),
    ],
    ids=["not-json", "deep", "cut"],
)
@pytest.mark.parametrize("content_type", ["application/json", "text/plain", "application/x-www-form-urlencoded"])
def test_a_body_that_is_not_json_gets_the_documented_message_whatever_its_content_type(
    reader: httpx.Client, corpus_kb: str, body: bytes, message: str, content_type: str
) -> None:
    response = reader.post(
        f"/knowledge-bases/{corpus_kb}/graph-search", content=body, headers={"Content-Type": content_type}
    )
    assert response.status_code == 422, response.text
    assert response.json()["problems"] == [{"location": "body", "message": message}]


def test_json_sent_as_text_says_which_header_to_send(reader: httpx.Client, corpus_kb: str) -> None:
    response = reader.post(
        f"/knowledge-bases/{corpus_kb}/graph-search",
        content=b'{"query": "Captain"}',
        headers={"Content-Type": "text/plain"},
    )
    assert response.status_code == 422
    assert "Content-Type: application/json" in response.json()["problems"][0]["message"]


def test_too_many_files_for_the_form_parser_get_the_upload_routes_own_refusal(
    admin: httpx.Client, corpus_kb: str
) -> None:
    files = [("files", (f"{i}.txt", b"x")) for i in range(1001)]
    response = admin.post(f"/knowledge-bases/{corpus_kb}/documents/files", files=files)
    assert response.status_code == 422, response.text
    error = response.json()
    assert error["code"] == "invalid_request" and "limit of the upload route is 100 files" in error["detail"]


def test_a_file_name_of_thousands_of_characters_gets_the_upload_routes_own_refusal(
    admin: httpx.Client, corpus_kb: str
) -> None:
    for length in (300, 10_000):
        response = admin.post(
            f"/knowledge-bases/{corpus_kb}/documents/files", files=[("files", ("a" * length + ".txt", b"x"))]
        )
        assert response.status_code == 422, response.text
        error = response.json()
        assert error["code"] == "invalid_request" and "1 to 255 characters" in error["detail"]
        assert "aaaaaaaaaa" not in response.text


# --- the HTTP examples of docs/http-api.md ---------------------------------------------------------------------


def documented_curl_commands() -> list[str]:
    """The curl commands of the HTTP API page of the manual, continuation lines joined."""
    page = (ROOT / "docs" / "http-api.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)```", page, flags=re.S)
    commands = []
    for block in blocks:
        joined = re.sub(r"\\\n\s*", " ", block)
        commands += [line.split("  #", 1)[0].strip() for line in joined.splitlines() if line.startswith("curl ")]
    return commands


def test_the_documented_http_examples_work(server: BackgroundServer, keys, corpus_kb: str, admin: httpx.Client) -> None:
    commands = documented_curl_commands()
    assert len(commands) >= 6
    # Reads run with a read key on the corpus; the ingestion-job examples with a manage key on a kb of their own.
    jobs_kb = f"test-docs-{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "KEY": keys.reader, "MANAGE_KEY": keys.manage_all}
    posted = False
    try:
        for command in commands:
            assert "Content-Type: application/json" in command or " -d " not in command, command
            # The page's server and kbs are the defaults; here they are the test server, its corpus, a fresh kb.
            command = command.replace("http://127.0.0.1:8000", server.url)
            command = command.replace("/sample/", f"/{corpus_kb}/").replace("/notes/", f"/{jobs_kb}/")
            command = command.replace("curl -s", "curl -s -w '\\n%{http_code}'")
            done = subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True, timeout=300)
            body, _, status = done.stdout.rpartition("\n")
            ingest = "/documents" in command and " -d " in command
            assert status == ("202" if ingest else "200"), (command, done.stdout[-2000:], done.stderr[-2000:])
            if "/query/stream" in command:
                # Server-Sent Events: the last one is the result, the same JSON as the unstreamed query's.
                last = body.strip().rsplit("\n\n", 1)[-1]
                assert re.match(r"id: \d+\nevent: result\ndata: ", last), last[:200]
                body = last.split("data: ", 1)[1]
            answer = json.loads(body)
            if ingest:
                env["JOB"], posted = answer["id"], True
        assert posted, "docs/http-api.md shows how to start an ingestion job"
    finally:
        if posted:
            wait_for(admin, jobs_kb, env["JOB"])
            admin.delete(f"/knowledge-bases/{jobs_kb}")
