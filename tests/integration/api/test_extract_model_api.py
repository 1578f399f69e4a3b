"""The extraction preview and the config draft with a model: the project's OpenAI-compatible test server
behind a real API server over the real Neo4j. The preview follows the kb's config and stores nothing; a
messy draft still gives a config the kb accepts; a draft that stays unusable is a 502."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import httpx
import pytest
from pydantic import SecretStr

from driftrag.api import ApiKeys, create_app
from driftrag.api.server import BackgroundServer
from driftrag.facade import DriftRAG
from driftrag.settings import Settings
from driftrag.store import Neo4jStore
from tests.fakes.openai_server import FakeOpenAIServer, message_text
from tests.fakes.scripted_llm import ScriptedResponder
from tests.support.database import count_everything

DIMENSION = 384  # the offline embedder's, so the shared vector indexes stay as they are
DRAFT_MARK = "You help configure the extraction of a knowledge graph"
# What weak and chatty models answer: a think block, prose, a fence, other key names, a label string.
MESSY_DRAFT = (
    "<think>Printers of Lyon; relations between printers and books.</think>\nSure! Here it is:\n```json\n"
    '{"example_text": "Jeanne Morel dirige Morel et Fils. Elle engage Paul Besson.", '
    '"labels": "leads, hired; printed", '
    '"entities": ["Jeanne Morel", {"entity": "Paul Besson", "description": "graveur"}], '
    '"relationships": [{"source": "Jeanne Morel", "target": "Paul Besson", "label": "hired"}, '
    '{"from": "Jeanne Morel", "relation": "knows"}],}\n```\nHope this helps!'
)
TEXT = (
    "Jeanne Morel ran the press of Morel Freres in Lyon. Jeanne Morel hired Paul Besson in the spring.\n\n"
    "Paul Besson engraved the plates of the Almanach Canut for Jeanne Morel."
)


class DraftingResponder:
    """TEST DOUBLE: `ScriptedResponder` for the ingestion tasks, and `draft` for the config-draft prompt."""

    def __init__(self) -> None:
        self.scripted = ScriptedResponder()
        self.draft = MESSY_DRAFT
        self.extraction_prompts: list[str] = []

    def __call__(self, request: dict) -> str:
        first = message_text(request["messages"][0])
        if first.startswith(DRAFT_MARK):
            return self.draft
        if "OUTPUT PROTOCOL" in first:
            self.extraction_prompts.append(first)
        return self.scripted(request)


@pytest.fixture(scope="module")
def model_server() -> Iterator[tuple[FakeOpenAIServer, DraftingResponder]]:
    responder = DraftingResponder()
    with FakeOpenAIServer(responder=responder, embedding_dimension=DIMENSION) as server:
        yield server, responder


@pytest.fixture(scope="module")
def model_api(
    api_settings: Settings, api_keys: ApiKeys, model_server, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BackgroundServer]:
    server, _ = model_server
    settings = api_settings.model_copy(
        update={
            "llm_provider": "openai",
            "openai_api_key": SecretStr("test"),
            "openai_base_url": server.base_url,
            "home": tmp_path_factory.mktemp("model-api-home"),
            "embedding_dimensions": DIMENSION,
            "llm_cache": False,
            "llm_max_retries": 0,
        }
    )
    with BackgroundServer(create_app(DriftRAG(settings), api_keys)) as running:
        yield running


@pytest.fixture
def model_admin(model_api: BackgroundServer, keys, make_client) -> Iterator[httpx.Client]:
    yield make_client(model_api, keys.manage_all)


@pytest.fixture
def configured_kb(model_admin: httpx.Client) -> Iterator[str]:
    kb = f"test-model-config-{uuid.uuid4().hex[:8]}"
    config = {"tags": ["interacts with"], "custom_instructions": "Name every printer in full."}
    assert model_admin.put(f"/knowledge-bases/{kb}/extract-config", json=config).status_code == 200
    yield kb
    model_admin.delete(f"/knowledge-bases/{kb}")


async def test_a_model_preview_follows_the_kb_config_and_stores_nothing(
    model_api: BackgroundServer, keys, configured_kb: str, model_server, store: Neo4jStore
) -> None:
    _, responder = model_server
    url = f"/knowledge-bases/{configured_kb}/extract/preview"
    headers = {"Authorization": f"Bearer {keys.manage_all}"}
    async with httpx.AsyncClient(base_url=f"{model_api.url}/api/v1", headers=headers, timeout=300) as client:
        before = await count_everything(store)
        kept = await client.post(url, json={"text": TEXT})
        replaced = await client.post(url, json={"text": TEXT, "tags": ["LEADS"]})
        after = await count_everything(store)
    assert after == before, "a preview writes nothing"
    assert kept.status_code == 200, kept.text
    preview = kept.json()
    assert preview["mode"] == "openai" and preview["failed_chunks"] == 0
    assert {"Jeanne Morel", "Paul Besson"} <= {entity["name"] for entity in preview["entities"]}
    # The model answers "interacts with": an allowed tag of the kb's config, stored as such.
    assert preview["relationships"] and {r["type"] for r in preview["relationships"]} == {"INTERACTS_WITH"}
    assert any("Name every printer in full." in prompt for prompt in responder.extraction_prompts)
    # Tags given with the request replace the config's: the same answer is now outside them.
    others = replaced.json()["relationships"]
    assert others and {r["type"] for r in others} == {"RELATED_TO"}
    assert {t for r in others for t in r["original_types"]} == {"interacts with"}


def test_a_messy_draft_gives_a_config_the_kb_accepts(model_admin: httpx.Client, configured_kb: str) -> None:
    response = model_admin.post(
        f"/knowledge-bases/{configured_kb}/extract/suggest",
        json={"description": "Registres d'imprimeurs lyonnais du XIXe siècle", "language": "French"},
    )
    assert response.status_code == 200, response.text
    suggestion = response.json()
    config = suggestion["config"]
    assert config["text"].startswith("Jeanne Morel dirige") and config["tags"] == ["LEADS", "HIRED", "PRINTED"]
    assert [node["name"] for node in config["nodes"]] == ["Jeanne Morel", "Paul Besson"]
    assert config["relations"] == [{"node1": "Jeanne Morel", "node2": "Paul Besson", "type": "HIRED"}]
    assert "1 example relations without both ends and a type" in suggestion["warnings"]
    stored = model_admin.put(f"/knowledge-bases/{configured_kb}/extract-config", json=config)
    assert stored.status_code == 200 and stored.json()["config"] == config


def test_a_draft_that_stays_unusable_is_502(model_admin: httpx.Client, configured_kb: str, model_server) -> None:
    _, responder = model_server
    responder.draft = json.dumps({"title": "Printers"})
    try:
        url = f"/knowledge-bases/{configured_kb}/extract/suggest"
        response = model_admin.post(url, json={"description": "Printers"})
    finally:
        responder.draft = MESSY_DRAFT
    assert response.status_code == 502 and response.json()["code"] == "model_error"


def test_a_draft_needs_a_description(model_admin: httpx.Client, configured_kb: str) -> None:
    for body in ({"description": ""}, {"description": "x" * 2001}, {"description": "ok", "language": "y" * 41}):
        response = model_admin.post(f"/knowledge-bases/{configured_kb}/extract/suggest", json=body)
        assert response.status_code == 422 and response.json()["code"] == "invalid_request"
