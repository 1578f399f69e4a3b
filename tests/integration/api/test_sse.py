"""The query stream as Server-Sent Events over real uvicorn: numbered events, keep-alive comments while a
(slow) model works, the GET form for a browser's EventSource and how it authenticates, and no key in
the server's access log."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import httpx
import openai
import pytest

from driftrag.api import ApiKeys, create_app
from driftrag.api.server import BackgroundServer
from driftrag.facade import DriftRAG
from driftrag.settings import Settings
from tests.fakes.harbor_corpus import SlowChatModel

QUESTION = "Who repaired the lamp of the Glass Lighthouse?"
PING_S = 0.05


def raw_lines(client: httpx.Client, method: str, url: str, **kwargs) -> tuple[httpx.Response, list[str]]:
    with client.stream(method, url, **kwargs) as response:
        lines = list(response.iter_lines())
    return response, lines


def frames(lines: list[str]) -> list[dict[str, str]]:
    """The events of a stream: their fields (`id`, `event`, `data`); comments are left out."""
    events, current = [], {}
    for line in [*lines, ""]:
        if not line:
            if current:
                events.append(current)
            current = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(": ")
            current[name] = value
    return events


@pytest.fixture(scope="module")
def slow_server(api_settings: Settings, api_keys: ApiKeys) -> Iterator[BackgroundServer]:
    """A model that sleeps before each answer, and keep-alive comments every 50 ms."""
    settings = api_settings.model_copy(update={"api_sse_ping_s": PING_S})
    rag = DriftRAG(settings, chat=SlowChatModel(delay_s=0.4))
    with BackgroundServer(create_app(rag, api_keys)) as running:
        yield running


@pytest.fixture(scope="module")
def url_key_server(api_settings: Settings, api_keys: ApiKeys) -> Iterator[BackgroundServer]:
    """A server that takes the key as `?api_key=` on the GET stream, logging every request."""
    settings = api_settings.model_copy(update={"api_allow_query_key": True})
    with BackgroundServer(create_app(DriftRAG(settings), api_keys), log_level="info") as running:
        yield running


@pytest.fixture(scope="module")
def stalling_server(api_settings: Settings, api_keys: ApiKeys, keys, corpus_kb: str) -> Iterator[BackgroundServer]:
    """A model slower than the query timeout: retrieval is done (the stream has started), the answer never is."""
    settings = api_settings.model_copy(update={"query_timeout_s": 10.0})
    with BackgroundServer(create_app(DriftRAG(settings, chat=SlowChatModel(delay_s=60.0)), api_keys)) as running:
        # Warm up (connect, load the embedder) within one stream, left once retrieval is done: a cold first
        # retrieval on a busy machine could itself pass the timeout.
        url = f"{running.url}/api/v1/knowledge-bases/{corpus_kb}/query/stream"
        headers = {"Authorization": f"Bearer {keys.reader}"}
        body = {"question": QUESTION, "mode": "basic"}
        with httpx.stream("POST", url, json=body, headers=headers, timeout=300) as warming:
            assert warming.status_code == 200
            next(line for line in warming.iter_lines() if '"phase":"retrieved"' in line)
        yield running


def test_a_failure_after_the_start_is_the_last_event(stalling_server: BackgroundServer, keys, make_client, corpus_kb):
    response, lines = raw_lines(
        make_client(stalling_server, keys.reader),
        "POST",
        f"/knowledge-bases/{corpus_kb}/query/stream",
        json={"question": QUESTION, "mode": "basic"},
    )
    assert response.status_code == 200
    events = frames(lines)
    assert events[0]["event"] == "progress" and events[-1]["event"] == "error"
    assert [int(event["id"]) for event in events] == list(range(1, len(events) + 1))
    assert '"status":504' in events[-1]["data"] and '"code":"query_timeout"' in events[-1]["data"]


def test_the_openai_client_raises_a_failure_after_the_start(stalling_server: BackgroundServer, keys, corpus_kb):
    chat = openai.OpenAI(base_url=f"{stalling_server.url}/v1", api_key=keys.reader, max_retries=0, timeout=300)
    stream = chat.chat.completions.create(
        model=f"{corpus_kb}:basic", messages=[{"role": "user", "content": QUESTION}], stream=True
    )
    received = []
    with pytest.raises(openai.APIError) as caught:
        for chunk in stream:
            received.append(chunk)
    assert received and received[0].choices[0].delta.role == "assistant"  # the stream had started
    assert not isinstance(caught.value, openai.APIStatusError)  # an event of a 200 stream, not a status
    assert caught.value.body["code"] == "query_timeout" and caught.value.body["type"] == "server_error"


def test_every_event_has_an_increasing_id(reader: httpx.Client, corpus_kb: str) -> None:
    response, lines = raw_lines(
        reader, "POST", f"/knowledge-bases/{corpus_kb}/query/stream", json={"question": QUESTION, "mode": "drift"}
    )
    assert response.status_code == 200
    events = frames(lines)
    assert events[-1]["event"] == "result" and len(events) > 3
    assert [int(event["id"]) for event in events] == list(range(1, len(events) + 1))


def test_keep_alive_comments_arrive_while_the_model_works(slow_server: BackgroundServer, keys, make_client, corpus_kb):
    response, lines = raw_lines(
        make_client(slow_server, keys.reader),
        "POST",
        f"/knowledge-bases/{corpus_kb}/query/stream",
        json={"question": QUESTION, "mode": "basic"},
    )
    assert response.status_code == 200
    pings = [line for line in lines if line.startswith(": ping")]
    assert pings, "a 0.4 s model answer with 50 ms pings sends some"
    events = frames(lines)
    assert events[-1]["event"] == "result" and "error" not in {event["event"] for event in events}


def test_the_openai_client_reads_past_the_keep_alive_comments(slow_server: BackgroundServer, keys, corpus_kb) -> None:
    chat = openai.OpenAI(base_url=f"{slow_server.url}/v1", api_key=keys.reader, max_retries=0, timeout=300)
    messages = [{"role": "user", "content": QUESTION}]
    streamed = "".join(
        chunk.choices[0].delta.content or ""
        for chunk in chat.chat.completions.create(model=f"{corpus_kb}:basic", messages=messages, stream=True)
        if chunk.choices
    )
    whole = chat.chat.completions.create(model=f"{corpus_kb}:basic", messages=messages).choices[0].message.content
    assert streamed == whole and whole.strip()


def test_the_get_form_streams_the_same_answer(reader: httpx.Client, corpus_kb: str) -> None:
    url = f"/knowledge-bases/{corpus_kb}/query/stream"
    response, lines = raw_lines(reader, "GET", url, params={"question": QUESTION, "mode": "local"})
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
    got = frames(lines)
    posted = frames(raw_lines(reader, "POST", url, json={"question": QUESTION, "mode": "local"})[1])
    assert [event["event"] for event in got] == [event["event"] for event in posted]
    assert got[-1]["event"] == "result"
    deltas = "".join(httpx.Response(200, content=e["data"]).json()["text"] for e in got if e["event"] == "delta")
    assert deltas == httpx.Response(200, content=got[-1]["data"]).json()["answer"]


def test_the_get_form_refuses_bad_input_with_statuses(reader: httpx.Client, corpus_kb: str) -> None:
    url = f"/knowledge-bases/{corpus_kb}/query/stream"
    assert raw_lines(reader, "GET", url, params={"mode": "local"})[0].status_code == 422
    assert raw_lines(reader, "GET", url, params={"question": QUESTION, "mode": "nope"})[0].status_code == 422
    assert raw_lines(reader, "GET", url, params={"question": "  "})[0].status_code == 422


def test_a_reconnecting_event_source_is_told_to_stop(reader: httpx.Client, corpus_kb: str) -> None:
    response, lines = raw_lines(
        reader,
        "GET",
        f"/knowledge-bases/{corpus_kb}/query/stream",
        params={"question": QUESTION},
        headers={"Last-Event-ID": "7"},
    )
    assert response.status_code == 204 and lines == []


def test_a_key_in_the_url_is_refused_unless_the_server_allows_it(server, url_key_server, keys, corpus_kb) -> None:
    path = f"/api/v1/knowledge-bases/{corpus_kb}/query/stream"
    params = {"question": QUESTION, "mode": "basic", "api_key": keys.reader}
    refused = httpx.get(f"{server.url}{path}", params=params, timeout=300)
    assert refused.status_code == 401 and "DRIFTRAG_API_ALLOW_QUERY_KEY" in refused.json()["detail"]
    with httpx.stream("GET", f"{url_key_server.url}{path}", params=params, timeout=300) as allowed:
        assert allowed.status_code == 200
        assert frames(list(allowed.iter_lines()))[-1]["event"] == "result"
    # Only on the GET stream: elsewhere a key in the URL stays refused.
    elsewhere = httpx.get(f"{url_key_server.url}/api/v1/knowledge-bases", params={"api_key": keys.reader})
    assert elsewhere.status_code == 401
    stranger = httpx.get(f"{url_key_server.url}{path}", params={**params, "api_key": keys.stranger}, timeout=300)
    assert stranger.status_code == 403
    wrong = httpx.get(f"{url_key_server.url}{path}", params={**params, "api_key": "drk_wrong"}, timeout=300)
    assert wrong.status_code == 401


def test_the_access_log_never_shows_a_key(url_key_server: BackgroundServer, keys, corpus_kb: str) -> None:
    seen: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record.getMessage())

    access = logging.getLogger("uvicorn.access")
    handler = Collect()
    access.addHandler(handler)
    try:
        path = f"/api/v1/knowledge-bases/{corpus_kb}/query/stream"
        for key in (keys.reader, "drk_wrong_key_1234"):
            params = {"question": QUESTION, "mode": "basic", "api_key": key}
            httpx.get(f"{url_key_server.url}{path}", params=params, timeout=300)
    finally:
        access.removeHandler(handler)
    assert len(seen) == 2 and all("api_key=[redacted]" in line for line in seen)
    assert not any(keys.reader in line or "drk_wrong_key_1234" in line for line in seen)
