"""Graph search, queries in every mode, /system and the served OpenAPI document, over real HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from driftrag import __version__
from driftrag.api.models import QueryResponse, SystemInfo
from driftrag.api.server import BackgroundServer
from driftrag.search.graph_search import GraphSearchResponse

ROOT = Path(__file__).resolve().parents[3]


def test_graph_search_returns_the_bounded_contract(reader: httpx.Client, corpus_kb: str) -> None:
    response = reader.post(f"/knowledge-bases/{corpus_kb}/graph-search", json={"query": "Glass Lighthouse"})

    assert response.status_code == 200, response.text
    result = GraphSearchResponse.model_validate(response.json())
    assert result.kb == corpus_kb and result.query == "Glass Lighthouse"
    seeds = [entity for entity in result.entities if entity.is_seed]
    assert [(seed.name, seed.match, seed.seed_rank) for seed in seeds] == [("Glass Lighthouse", "exact", 1)]
    neighbours = {entity.name for entity in result.entities if not entity.is_seed}
    assert "Captain Mara Vell" in neighbours
    assert result.relationships, "the seed's relationships come with it"
    ids = {entity.id for entity in result.entities}
    for relationship in result.relationships:
        assert {relationship.source_id, relationship.target_id} <= ids
        assert relationship.source_chunk_ids
    assert result.truncation.results_truncated is False
    assert result.truncation.candidates_matched == 1


def test_graph_search_caps_are_honoured_and_reported(reader: httpx.Client, corpus_kb: str) -> None:
    response = reader.post(
        f"/knowledge-bases/{corpus_kb}/graph-search", json={"query": "Harbor", "max_seeds": 1, "max_rows": 1}
    )

    assert response.status_code == 200, response.text
    truncation = response.json()["truncation"]
    assert truncation["candidates_matched"] >= 2
    assert truncation["candidates_returned"] == 1 and truncation["candidates_truncated"] is True
    assert truncation["rows_returned"] == 1 and truncation["results_truncated"] is True


def test_graph_search_without_a_match_is_an_empty_200(reader: httpx.Client, corpus_kb: str) -> None:
    response = reader.post(f"/knowledge-bases/{corpus_kb}/graph-search", json={"query": "Zanzibar"})

    assert response.status_code == 200
    assert response.json()["entities"] == [] and response.json()["relationships"] == []


@pytest.mark.parametrize("mode", ["drift", "global", "local", "entity", "basic"])
def test_query_answers_in_every_mode_with_its_sources(reader: httpx.Client, corpus_kb: str, mode: str) -> None:
    body = {"question": "Who keeps the Glass Lighthouse?", "mode": mode}
    if mode == "drift":
        del body["mode"]  # the default
    response = reader.post(f"/knowledge-bases/{corpus_kb}/query", json=body)

    assert response.status_code == 200, response.text
    result = QueryResponse.model_validate(response.json())
    assert result.mode == mode and result.kb == corpus_kb
    # The offline mode says, first of all, that its answer is extractive.
    assert result.extractive is True
    assert result.answer.startswith("_Extractive answer (offline mode")
    assert result.sources, "every query reports the sources it used"
    assert all(source.id and source.text for source in result.sources)
    assert len({source.id for source in result.sources}) == len(result.sources)
    assert set(result.cited_source_ids) <= {source.id for source in result.sources}
    if mode == "drift":
        assert result.intermediate_answers and result.intermediate_answers[0].id == "primer"
    else:
        assert result.intermediate_answers == []
    assert (result.community_level is not None) == (mode == "global")


def test_global_query_takes_a_community_level(reader: httpx.Client, corpus_kb: str) -> None:
    url = f"/knowledge-bases/{corpus_kb}/query"
    body = {"question": "What are the main themes?", "mode": "global", "community_level": 0}
    response = reader.post(url, json=body)
    assert response.status_code == 200, response.text
    assert QueryResponse.model_validate(response.json()).community_level == 0
    # A level the kb lacks, a negative one, or a level with another mode: 422 with the reason.
    missing = reader.post(url, json={**body, "community_level": 42})
    assert missing.status_code == 422 and "levels are" in missing.text
    assert reader.post(url, json={**body, "community_level": -1}).status_code == 422
    other = reader.post(url, json={**body, "mode": "local"})
    assert other.status_code == 422 and "does not apply to local" in other.text


def test_system_names_neo4j_when_it_answers(reader: httpx.Client, server: BackgroundServer, keys) -> None:
    response = reader.get("/system")

    assert response.status_code == 200
    info = SystemInfo.model_validate(response.json())
    assert info.version == __version__
    assert info.graph_engine == "Neo4j" and info.graph_engine_version
    assert info.model_mode == "offline" and info.auth == "api-key"
    alias = httpx.get(f"{server.url}/system", headers={"X-API-Key": keys.stranger})
    assert alias.status_code == 200 and alias.json() == response.json()


def test_system_says_not_enabled_when_neo4j_is_unreachable(unreachable_server: BackgroundServer, keys, make_client):
    response = make_client(unreachable_server, keys.reader).get("/system")

    assert response.status_code == 200
    assert response.json()["graph_engine"] == "Not Enabled"
    assert response.json()["graph_engine_version"] is None


def test_the_served_openapi_document_is_the_committed_one(server: BackgroundServer) -> None:
    served = httpx.get(f"{server.url}/api/v1/openapi.json").json()

    committed = json.loads((ROOT / "docs" / "openapi.json").read_text(encoding="utf-8"))
    assert served == committed, "regenerate it: `driftrag api openapi > docs/openapi.json`"
