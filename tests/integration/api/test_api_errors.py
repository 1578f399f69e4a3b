"""The refusals of the API: 401, 403, 404, 422, 503 (with Retry-After) and a 500 that hides its traceback."""

from __future__ import annotations

import httpx
import pytest

from driftrag.api import create_app
from driftrag.api.server import BackgroundServer
from driftrag.facade import DriftRAG
from driftrag.search.graph_search import MAX_QUERY_CHARS
from tests.support.api import error_body

# --- 401 ----------------------------------------------------------------------------------------------------


def test_no_key_is_401(server: BackgroundServer, make_client, corpus_kb: str) -> None:
    anonymous = make_client(server)
    for response in (
        anonymous.post(f"/knowledge-bases/{corpus_kb}/graph-search", json={"query": "Captain"}),
        anonymous.get("/system"),
        anonymous.get(f"/knowledge-bases/{corpus_kb}/stats"),
    ):
        body = error_body(response, 401, "unauthorized")
        assert "missing API key" in body["detail"]
        assert response.headers["www-authenticate"] == "Bearer"


def test_a_wrong_key_is_401_in_either_header(server: BackgroundServer, make_client, corpus_kb: str, keys) -> None:
    for header in ("bearer", "x-api-key"):
        wrong = make_client(server, keys.reader + "x", header=header)
        response = wrong.post(f"/knowledge-bases/{corpus_kb}/graph-search", json={"query": "Captain"})
        assert error_body(response, 401, "unauthorized")["detail"] == "invalid API key"


def test_the_key_may_come_in_x_api_key(server: BackgroundServer, make_client, corpus_kb: str, keys) -> None:
    response = make_client(server, keys.reader, header="x-api-key").post(
        f"/knowledge-bases/{corpus_kb}/graph-search", json={"query": "Captain"}
    )
    assert response.status_code == 200, response.text


def test_two_different_keys_are_401(server: BackgroundServer, corpus_kb: str, keys) -> None:
    response = httpx.post(
        f"{server.url}/api/v1/knowledge-bases/{corpus_kb}/graph-search",
        json={"query": "Captain"},
        headers={"Authorization": f"Bearer {keys.reader}", "X-API-Key": keys.manage_all},
    )
    error_body(response, 401, "unauthorized")


def test_authentication_comes_before_validation(server: BackgroundServer, make_client) -> None:
    response = make_client(server).post("/knowledge-bases/bad'kb/graph-search", json={"query": ""})
    error_body(response, 401, "unauthorized")


# --- 403 ----------------------------------------------------------------------------------------------------


def test_a_kb_outside_the_allow_list_is_403(server: BackgroundServer, make_client, corpus_kb: str, keys) -> None:
    stranger = make_client(server, keys.stranger)
    for response in (
        stranger.post(f"/knowledge-bases/{corpus_kb}/graph-search", json={"query": "Captain"}),
        stranger.post(f"/knowledge-bases/{corpus_kb}/query", json={"question": "Who?", "mode": "basic"}),
        stranger.get(f"/knowledge-bases/{corpus_kb}/stats"),
    ):
        assert corpus_kb in error_body(response, 403, "forbidden")["detail"]


def test_a_manage_key_is_still_bound_to_its_kbs(server: BackgroundServer, make_client, keys) -> None:
    owner = make_client(server, keys.manage_one)
    response = owner.put("/knowledge-bases/someone-else/graph", json={"enabled": False})
    error_body(response, 403, "forbidden")


def test_a_read_key_may_not_manage(reader: httpx.Client, corpus_kb: str) -> None:
    calls = [
        ("POST", f"/knowledge-bases/{corpus_kb}/documents", {"texts": [{"title": "x", "text": "Some text."}]}),
        ("DELETE", f"/knowledge-bases/{corpus_kb}/documents/document-abc", None),
        ("DELETE", f"/knowledge-bases/{corpus_kb}", None),
        ("POST", f"/knowledge-bases/{corpus_kb}/chunks/disable", {"chunk_ids": ["chunk-abc"]}),
        ("POST", f"/knowledge-bases/{corpus_kb}/chunks/enable", {"chunk_ids": ["chunk-abc"]}),
        ("PUT", f"/knowledge-bases/{corpus_kb}/graph", {"enabled": False}),
    ]
    for method, path, body in calls:
        response = reader.request(method, path, json=body)
        assert "'manage' scope" in error_body(response, 403, "forbidden")["detail"], path
    assert reader.get(f"/knowledge-bases/{corpus_kb}/stats").json()["graph_enabled"] is True


# --- 404 ----------------------------------------------------------------------------------------------------


def test_an_unknown_kb_is_404(admin: httpx.Client) -> None:
    for response in (
        admin.post("/knowledge-bases/no-such-kb/graph-search", json={"query": "Captain"}),
        admin.post("/knowledge-bases/no-such-kb/query", json={"question": "Who?", "mode": "local"}),
        admin.get("/knowledge-bases/no-such-kb/stats"),
        admin.put("/knowledge-bases/no-such-kb/graph", json={"enabled": True}),
        admin.delete("/knowledge-bases/no-such-kb"),
    ):
        assert "no-such-kb" in error_body(response, 404, "kb_not_found")["detail"]


def test_an_unknown_route_is_404_in_the_same_shape(admin: httpx.Client) -> None:
    error_body(admin.get("/no-such-route"), 404, "not_found")


# --- 422 ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        {"query": ""},
        {"query": "   "},
        {"query": "x" * (20 * 1024)},
        {"query": "Captain", "max_seeds": 0},
        {"query": "Captain", "max_rows": -1},
        {"query": "Captain", "cypher": "MATCH (n) DETACH DELETE n"},
        {},
    ],
    ids=["empty", "blank", "20kB", "zero-seeds", "negative-rows", "extra-field", "no-query"],
)
def test_bad_graph_search_bodies_are_422(reader: httpx.Client, corpus_kb: str, body: dict) -> None:
    response = reader.post(f"/knowledge-bases/{corpus_kb}/graph-search", json=body)
    error = error_body(response, 422, "invalid_request")
    assert error["problems"] and error["problems"][0]["location"].startswith("body")
    assert len(response.content) < 4096, "the input is not echoed back"


def test_the_query_length_limit_is_the_contracts(reader: httpx.Client, corpus_kb: str) -> None:
    at_limit = reader.post(f"/knowledge-bases/{corpus_kb}/graph-search", json={"query": "x" * MAX_QUERY_CHARS})
    assert at_limit.status_code == 200


@pytest.mark.parametrize(
    "body",
    [
        {"question": "", "mode": "local"},
        {"question": "\n\t ", "mode": "basic"},
        {"question": "Who keeps the lighthouse?", "mode": "everything"},
        {"question": "x" * (20 * 1024), "mode": "basic"},
        {"mode": "basic"},
    ],
    ids=["empty", "blank", "unknown-mode", "20kB", "no-question"],
)
def test_bad_query_bodies_are_422(reader: httpx.Client, corpus_kb: str, body: dict) -> None:
    response = reader.post(f"/knowledge-bases/{corpus_kb}/query", json=body)
    error_body(response, 422, "invalid_request")


@pytest.mark.parametrize(
    "kb",
    ["bad'kb", "x;MATCH (n) DETACH DELETE n", "a b", "-leading-dash", "k" * 65, "kb}{", "émile", "kb%00"],
)
def test_hostile_kb_ids_are_422(admin: httpx.Client, kb: str) -> None:
    response = admin.post(f"/knowledge-bases/{kb}/graph-search", json={"query": "Captain"})
    assert "invalid knowledge base id" in error_body(response, 422, "invalid_request")["detail"]


def test_malformed_ids_are_422(admin: httpx.Client, corpus_kb: str) -> None:
    for response in (
        admin.delete(f"/knowledge-bases/{corpus_kb}/documents/chunk-abc"),
        admin.delete(f"/knowledge-bases/{corpus_kb}/documents/document-a'b"),
        admin.post(f"/knowledge-bases/{corpus_kb}/chunks/disable", json={"chunk_ids": ["entity-abc"]}),
        admin.post(f"/knowledge-bases/{corpus_kb}/chunks/disable", json={"chunk_ids": []}),
        admin.post(f"/knowledge-bases/{corpus_kb}/documents", json={"texts": []}),
        admin.post(f"/knowledge-bases/{corpus_kb}/documents", json={"texts": [{"title": "t", "text": "  "}]}),
        admin.post(
            f"/knowledge-bases/{corpus_kb}/documents",
            content=b"{not json",
            headers={"content-type": "application/json"},
        ),
    ):
        error_body(response, 422, "invalid_request")


# --- 503 ----------------------------------------------------------------------------------------------------


def test_a_disabled_graph_is_503_with_retry_after(admin: httpx.Client, reader: httpx.Client, corpus_kb: str) -> None:
    assert admin.put(f"/knowledge-bases/{corpus_kb}/graph", json={"enabled": False}).status_code == 200
    try:
        search = reader.post(f"/knowledge-bases/{corpus_kb}/graph-search", json={"query": "Captain"})
        assert "disabled" in error_body(search, 503, "graph_disabled")["detail"]
        assert int(search.headers["retry-after"]) > 0
        for mode in ("drift", "local", "entity"):
            query = reader.post(f"/knowledge-bases/{corpus_kb}/query", json={"question": "Who?", "mode": mode})
            error_body(query, 503, "graph_disabled")
            assert "retry-after" in query.headers
        # Basic search reads chunks only, so it still answers.
        basic = reader.post(f"/knowledge-bases/{corpus_kb}/query", json={"question": "Who?", "mode": "basic"})
        assert basic.status_code == 200, basic.text
        assert reader.get(f"/knowledge-bases/{corpus_kb}/stats").json()["graph_enabled"] is False
    finally:
        assert admin.put(f"/knowledge-bases/{corpus_kb}/graph", json={"enabled": True}).status_code == 200
    again = reader.post(f"/knowledge-bases/{corpus_kb}/graph-search", json={"query": "Captain"})
    assert again.status_code == 200 and again.json()["entities"]


def test_an_unreachable_neo4j_is_503_never_an_empty_200(
    unreachable_server: BackgroundServer, make_client, keys, corpus_kb: str
) -> None:
    down = make_client(unreachable_server, keys.manage_all)
    for response in (
        down.post(f"/knowledge-bases/{corpus_kb}/graph-search", json={"query": "Captain"}),
        down.post(f"/knowledge-bases/{corpus_kb}/query", json={"question": "Who?", "mode": "basic"}),
        down.get(f"/knowledge-bases/{corpus_kb}/stats"),
        down.post(f"/knowledge-bases/{corpus_kb}/documents", json={"texts": [{"title": "t", "text": "Some text."}]}),
    ):
        body = error_body(response, 503, "backend_unavailable")
        assert int(response.headers["retry-after"]) > 0
        assert "127.0.0.1:1" not in body["detail"], "the driver's details stay in the server log"


# --- 500 ----------------------------------------------------------------------------------------------------


class _BrokenRAG(DriftRAG):
    async def graph_search(self, kb, query, *, max_seeds=None, max_rows=None):
        raise RuntimeError("secret internal state: /etc/driftrag/keys.json")


def test_an_unexpected_error_is_a_500_without_traceback(api_settings, api_keys, keys, corpus_kb: str) -> None:
    with BackgroundServer(create_app(_BrokenRAG(api_settings), api_keys)) as broken:
        response = httpx.post(
            f"{broken.url}/api/v1/knowledge-bases/{corpus_kb}/graph-search",
            json={"query": "Captain"},
            headers={"Authorization": f"Bearer {keys.reader}"},
            timeout=60,
        )
    error_body(response, 500, "internal_error")
    assert "Traceback" not in response.text and "secret" not in response.text
