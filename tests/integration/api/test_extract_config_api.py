"""The extraction config over HTTP against the real Neo4j, offline: read, set and clear it (manage scope,
404, 422 naming schema fields only), preview an extraction (nothing stored), and the 409 of a draft."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import httpx
import pytest

from driftrag.api.server import BackgroundServer
from driftrag.store import Neo4jStore
from tests.support.api import error_body
from tests.support.database import count_everything

ROOT = Path(__file__).resolve().parents[3]
FRENCH_EXAMPLE = json.loads((ROOT / "docs" / "examples" / "extract-config.fr.json").read_text(encoding="utf-8"))
FRENCH_TEXT = (
    "Jeanne Morel dirigeait l'imprimerie Morel et Fils à Lyon. Jeanne Morel engagea Paul Besson en 1862.\n\n"
    "Paul Besson grava les planches de l'Almanach des canuts pour Jeanne Morel. Louis Gardet rédigea "
    "l'Almanach des canuts avec Paul Besson."
)


@pytest.fixture
def new_kb(admin: httpx.Client):
    kb = f"test-config-{uuid.uuid4().hex[:8]}"
    yield kb
    admin.delete(f"/knowledge-bases/{kb}")


def test_set_show_and_clear_a_config(admin: httpx.Client, new_kb: str) -> None:
    assert admin.get(f"/knowledge-bases/{new_kb}/extract-config").status_code == 404
    stored = admin.put(f"/knowledge-bases/{new_kb}/extract-config", json=FRENCH_EXAMPLE)
    assert stored.status_code == 200, stored.text
    assert stored.json() == {
        "kb": new_kb,
        "config": FRENCH_EXAMPLE,
        "stored": True,
        "globally_enabled": True,
        "extraction_enabled": True,
    }
    assert admin.get(f"/knowledge-bases/{new_kb}/extract-config").json()["config"] == FRENCH_EXAMPLE
    assert new_kb in {kb["kb"] for kb in admin.get("/knowledge-bases").json()["knowledge_bases"]}

    switched_off = admin.put(f"/knowledge-bases/{new_kb}/extract-config", json={**FRENCH_EXAMPLE, "enabled": False})
    assert switched_off.json()["extraction_enabled"] is False and switched_off.json()["globally_enabled"] is True

    cleared = admin.delete(f"/knowledge-bases/{new_kb}/extract-config")
    assert cleared.status_code == 200
    assert cleared.json()["stored"] is False and cleared.json()["config"]["tags"] == []
    assert admin.get(f"/knowledge-bases/{new_kb}/extract-config").json()["stored"] is False


def test_a_kb_without_a_config_shows_the_defaults(admin: httpx.Client, corpus_kb: str) -> None:
    shown = admin.get(f"/knowledge-bases/{corpus_kb}/extract-config").json()
    assert shown["stored"] is False and shown["extraction_enabled"] is True
    assert shown["config"] == {
        "enabled": True,
        "text": "",
        "tags": [],
        "nodes": [],
        "relations": [],
        "custom_instructions": "",
    }


def test_unknown_kbs_are_404(admin: httpx.Client) -> None:
    kb = f"test-nosuch-{uuid.uuid4().hex[:8]}"
    error_body(admin.get(f"/knowledge-bases/{kb}/extract-config"), 404, "kb_not_found")
    error_body(admin.delete(f"/knowledge-bases/{kb}/extract-config"), 404, "kb_not_found")
    error_body(admin.post(f"/knowledge-bases/{kb}/extract/preview", json={"text": FRENCH_TEXT}), 404, "kb_not_found")


def test_every_route_needs_a_manage_key_for_the_kb(
    server: BackgroundServer, make_client, keys, corpus_kb: str, reader: httpx.Client
) -> None:
    anonymous, stranger = make_client(server), make_client(server, keys.stranger)
    calls = [
        ("GET", "extract-config", None),
        ("PUT", "extract-config", FRENCH_EXAMPLE),
        ("DELETE", "extract-config", None),
        ("POST", "extract/preview", {"text": FRENCH_TEXT}),
        ("POST", "extract/suggest", {"description": "Imprimeurs lyonnais"}),
    ]
    for method, route, body in calls:
        url = f"/knowledge-bases/{corpus_kb}/{route}"
        error_body(anonymous.request(method, url, json=body), 401, "unauthorized")
        assert "'manage' scope" in error_body(reader.request(method, url, json=body), 403, "forbidden")["detail"]
        error_body(stranger.request(method, url, json=body), 403, "forbidden")
    owner = make_client(server, keys.manage_one)
    assert owner.get(f"/knowledge-bases/{corpus_kb}/extract-config").status_code == 200
    error_body(owner.get("/knowledge-bases/someone-else/extract-config"), 403, "forbidden")


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ({"tags": ["отношение"]}, "body.tags.0"),
        ({"nodes": [{"name": "   "}]}, "body.nodes.0.name"),
        ({"relations": [{"node1": "A", "node2": "B", "type": ""}]}, "body.relations.0.type"),
        ({"text": "x" * 5001}, "body.text"),
        ({"enabled": "sometimes"}, "body.enabled"),
        ({"<img src=x onerror=alert(1)>": True}, "body"),
        ({"nodes": [{"name": "Lyon", "<svg/onload=alert(1)>": 1}]}, "body.nodes.0"),
    ],
)
def test_an_invalid_config_is_422_naming_the_field_and_changes_nothing(
    admin: httpx.Client, new_kb: str, body: dict, where: str
) -> None:
    admin.put(f"/knowledge-bases/{new_kb}/extract-config", json=FRENCH_EXAMPLE)
    response = admin.put(f"/knowledge-bases/{new_kb}/extract-config", json=body)
    error = error_body(response, 422, "invalid_request")
    assert where in {problem["location"] for problem in error["problems"]}, error
    assert "alert" not in response.text and "xxxxx" not in response.text and "отношение" not in response.text
    assert admin.get(f"/knowledge-bases/{new_kb}/extract-config").json()["config"] == FRENCH_EXAMPLE


def test_a_body_that_is_not_json_is_422(admin: httpx.Client, new_kb: str) -> None:
    response = admin.put(
        f"/knowledge-bases/{new_kb}/extract-config",
        content=b'{"tags": ["LEADS",',
        headers={"Content-Type": "application/json"},
    )
    error_body(response, 422, "invalid_request")
    assert admin.get(f"/knowledge-bases/{new_kb}/extract-config").status_code == 404, "no kb was created"


async def test_an_offline_preview_extracts_and_stores_nothing(
    admin: httpx.Client, corpus_kb: str, store: Neo4jStore
) -> None:
    client = httpx.AsyncClient(base_url=admin.base_url, headers=admin.headers, timeout=300)
    async with client:
        before = await count_everything(store), (await client.get(f"/knowledge-bases/{corpus_kb}/stats")).json()
        response = await client.post(
            f"/knowledge-bases/{corpus_kb}/extract/preview", json={"text": FRENCH_TEXT, "config": FRENCH_EXAMPLE}
        )
        after = await count_everything(store), (await client.get(f"/knowledge-bases/{corpus_kb}/stats")).json()
    assert after == before
    assert response.status_code == 200, response.text
    preview = response.json()
    names = {entity["name"] for entity in preview["entities"]}
    assert {"Jeanne Morel", "Paul Besson", "Louis Gardet"} <= names
    pairs = {(r["source"], r["target"]) for r in preview["relationships"]}
    assert ("Jeanne Morel", "Paul Besson") in pairs or ("Paul Besson", "Jeanne Morel") in pairs
    assert preview["mode"] == "offline" and preview["chunks"] >= 1 and preview["failed_chunks"] == 0
    # The offline extractor cannot follow few-shot text, labels or instructions, and says so.
    assert any("offline extraction ignores" in warning for warning in preview["warnings"])
    assert any("kb-wide refinement" in note for note in preview["notes"])


def test_a_preview_of_a_switched_off_kb_runs_and_says_so(admin: httpx.Client, new_kb: str) -> None:
    admin.put(f"/knowledge-bases/{new_kb}/extract-config", json={"enabled": False})
    preview = admin.post(f"/knowledge-bases/{new_kb}/extract/preview", json={"text": FRENCH_TEXT}).json()
    assert preview["entities"] and any("`enabled` is off" in note for note in preview["notes"])


@pytest.mark.parametrize(
    "body",
    [
        {"text": "x" * 5001},
        {"text": ""},
        {"text": "   \n  "},
        {"text": FRENCH_TEXT, "tags": ["отношение"]},
        {"text": FRENCH_TEXT, "config": {"tags": "LEADS"}},
        {"text": FRENCH_TEXT, "cypher": "MATCH (n) DETACH DELETE n"},
    ],
    ids=["too-long", "empty", "blank", "bad-tag", "bad-config", "extra-field"],
)
def test_bad_preview_bodies_are_422(admin: httpx.Client, corpus_kb: str, body: dict) -> None:
    response = admin.post(f"/knowledge-bases/{corpus_kb}/extract/preview", json=body)
    error_body(response, 422, "invalid_request")
    assert len(response.content) < 4096, "the input is not echoed back"


def test_a_text_at_the_limit_is_previewed(admin: httpx.Client, corpus_kb: str) -> None:
    sentence = "Jeanne Morel engagea Paul Besson à Lyon. "
    text = (sentence * (5000 // len(sentence) + 1))[:5000]
    response = admin.post(f"/knowledge-bases/{corpus_kb}/extract/preview", json={"text": text})
    assert response.status_code == 200, response.text
    assert response.json()["chunks"] > 1, "a long text is chunked as ingestion would chunk it"


def test_an_offline_server_refuses_to_draft_with_409(admin: httpx.Client, corpus_kb: str) -> None:
    response = admin.post(f"/knowledge-bases/{corpus_kb}/extract/suggest", json={"description": "Imprimeurs lyonnais"})
    assert "needs a language model" in error_body(response, 409, "model_required")["detail"]
