"""Global search on the real Neo4j: level choice, map and reduce through the scripted LLM double, the
extractive offline version, its sources and citations, its budget, and through the OpenAI-compatible
test server. The graph comes from `conftest.py` (several community levels: `max_cluster_size` 4)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from pydantic import SecretStr

from driftrag.composition import query_deps
from driftrag.errors import GraphDisabledError, InvalidQueryError
from driftrag.facade import DriftRAG
from driftrag.offline.query.global_search import GLOBAL_NOTE
from driftrag.search.global_search.levels import level_reports
from driftrag.search.global_search.models import GlobalProgress, GlobalResult
from driftrag.search.options import QueryOptions
from driftrag.settings import Settings
from driftrag.store.graph_search import GraphSearchStore
from driftrag.store.roles import neo4j_roles
from driftrag.store.search import SearchStore
from driftrag.workflows.query import run_query
from tests.fakes.harbor_corpus import CORPUS
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.scripted_llm import ScriptedResponder
from tests.support.search import ingested_kb, make_deps

QUESTION = "What are the main themes of Harbor Town, its ships and its people?"


async def _levels(store, kb: str, embedder) -> list[int]:
    reports = await SearchStore(store).community_reports(kb, await embedder.aget_query_embedding(QUESTION))
    return sorted({r.level for r in reports})


async def _global(deps, kb: str, question: str = QUESTION, **options) -> tuple[GlobalResult, list[GlobalProgress]]:
    events: list[GlobalProgress] = []
    result = await run_query(deps, "global", kb, question, on_progress=events.append, options=QueryOptions(**options))
    assert isinstance(result, GlobalResult)
    return result, events


def _assert_grounded(result: GlobalResult, graph_ids: dict[str, set[str]]) -> None:
    mapped = {r.id for r in result.reports}
    sources = {s.id for s in result.sources}
    assert mapped <= graph_ids["community"]
    assert {s.id for s in result.sources if s.kind == "chunk"} <= graph_ids["chunk"]
    assert set(result.source_ids) <= sources
    for point in result.points:
        assert set(point.report_ids) <= mapped


async def test_the_llm_map_reduce_spends_one_call_per_batch_and_one_reduce(
    search_settings, module_store, search_providers, graph_kb, graph_ids
) -> None:
    deps, chat = make_deps(search_settings, module_store, search_providers)
    levels = await _levels(module_store, graph_kb, search_providers.embedder)
    assert len(levels) >= 2, "the test graph should have a hierarchy"
    result, events = await _global(deps, graph_kb)

    # The default level is the finest one: the whole graph fits the default budget many times over.
    assert result.level is not None and result.level.reason == "budget" and result.level.fits
    assert result.level.level == levels[-1] and result.level.levels == levels
    assert result.level.n_mapped == result.level.n_reports == len(result.reports)
    assert chat.calls["global_map"] == result.level.n_batches >= 1
    assert chat.calls["global_reduce"] == 1
    assert result.llm_calls == result.level.n_batches + 1 and result.prompt_tokens > 0
    assert [e.phase for e in events] == ["reports", *["map"] * result.level.n_batches, "reduce"]

    # Key points cite reports by handle, mapped back to ids; the answer cites reports and their chunks.
    assert result.points and result.reduced_from
    assert all(p.report_ids for p in result.points)
    cited = set(result.source_ids)
    assert any(i.startswith("community-") for i in cited) and any(i.startswith("chunk-") for i in cited)
    assert "[S" not in result.answer and result.unknown_citations == 0
    _assert_grounded(result, graph_ids)

    # The sources the evaluation scores: the chunks behind the key points first, then the reports.
    ranked = result.retrieved_sources()
    kinds = [s.kind for s in ranked]
    assert kinds[0] == "chunk" and kinds.index("community") == kinds.count("chunk")
    assert {s.id for s in ranked} == {s.id for s in result.sources}


async def test_a_requested_level_is_mapped_and_a_missing_one_is_refused(
    search_settings, module_store, search_providers, graph_kb
) -> None:
    deps, chat = make_deps(search_settings, module_store, search_providers)
    vector = await search_providers.embedder.aget_query_embedding(QUESTION)
    reports = await SearchStore(module_store).community_reports(graph_kb, vector)
    result, _ = await _global(deps, graph_kb, community_level=0)
    assert result.level is not None and (result.level.level, result.level.reason) == (0, "query")
    assert {r.id for r in result.reports} == {r.id for r in level_reports(reports, 0)}
    assert all(r.origin == "level 0" for r in result.reports)

    # The setting is the default of every query; a query's own level wins over it.
    deps_setting, _ = make_deps(search_settings, module_store, search_providers, global_community_level=0)
    from_setting, _ = await _global(deps_setting, graph_kb)
    assert from_setting.level is not None and (from_setting.level.level, from_setting.level.reason) == (0, "setting")

    calls = sum(chat.calls.values())
    with pytest.raises(InvalidQueryError, match="levels are"):
        await _global(deps, graph_kb, community_level=99)
    with pytest.raises(InvalidQueryError, match="does not apply to local"):
        await run_query(deps, "local", graph_kb, QUESTION, options=QueryOptions(community_level=0))
    assert sum(chat.calls.values()) == calls  # refused before any model call


async def test_a_small_budget_picks_a_coarser_level_or_maps_the_nearest_reports(
    search_settings, module_store, search_providers, graph_kb, graph_ids
) -> None:
    # Two calls: one map call and the reduce; 500-token batches. The finest level needs more batches.
    deps, chat = make_deps(
        search_settings, module_store, search_providers, query_max_llm_calls=2, global_map_context_tokens=500
    )
    result, _ = await _global(deps, graph_kb)
    assert result.level is not None and result.level.n_batches <= 1
    assert result.llm_calls <= 2 and chat.calls["global_map"] <= 1
    if not result.level.fits:
        assert result.level.level == min(result.level.levels)
        assert result.level.n_mapped < result.level.n_reports and any("do not fit" in n for n in result.notes)
        # The reports kept are the nearest to the question.
        scores = [r.score or 0.0 for r in result.reports]
        assert scores == sorted(scores, reverse=True)
    _assert_grounded(result, graph_ids)


async def test_offline_global_search_is_extractive_and_says_so(
    search_settings, module_store, search_providers, graph_kb, graph_ids
) -> None:
    deps = query_deps(search_settings, neo4j_roles(module_store), search_providers)
    result, events = await _global(deps, graph_kb)
    assert result.extractive and result.llm_calls == 0 and result.usage.chat_calls == 0
    assert result.answer.startswith(GLOBAL_NOTE)
    assert result.points and all(0 < p.score <= 100 for p in result.points)
    # Every key point is a sentence of the report it cites.
    texts = {r.id: " ".join(r.text.split()) for r in result.reports}
    for point in result.points:
        sentence = point.description.rsplit(" [", 1)[0]
        assert any(sentence in texts[report_id] for report_id in point.report_ids)
    assert events[0].phase == "reports" and events[-1].phase == "reduce"
    _assert_grounded(result, graph_ids)


async def test_global_search_refuses_a_disabled_graph(search_settings, module_store, search_providers) -> None:
    kb = await ingested_kb(module_store, search_settings, search_providers)
    deps, chat = make_deps(search_settings, module_store, search_providers)
    try:
        await GraphSearchStore(module_store).set_graph_enabled(kb, False)
        with pytest.raises(GraphDisabledError):
            await _global(deps, kb)
        assert sum(chat.calls.values()) == 0
    finally:
        from driftrag.store.graph import GraphStore

        await GraphStore(module_store).delete_kb(kb)


async def test_global_search_through_the_openai_compatible_server(neo4j_settings: Settings, tmp_path: Path) -> None:
    responder = ScriptedResponder()
    with FakeOpenAIServer(responder=responder, embedding_dimension=384) as server:
        settings = neo4j_settings.model_copy(
            update={
                "llm_provider": "openai",
                "openai_api_key": SecretStr("test"),
                "openai_base_url": server.base_url,
                "home": tmp_path,
                "embedding_dimensions": 384,
                "llm_cache": False,
                "llm_max_retries": 0,
                "chunk_size": 120,
                "chunk_overlap": 10,
                "max_cluster_size": 4,
            }
        )
        kb = f"test-global-{uuid.uuid4().hex[:8]}"
        async with DriftRAG(settings) as rag:
            try:
                await rag.ingest(kb, texts=CORPUS)
                before = len(server.requests_to("/v1/chat/completions"))
                result = await rag.global_search(kb, QUESTION)
                chat_requests = len(server.requests_to("/v1/chat/completions")) - before
            finally:
                await rag.delete_kb(kb)
    assert isinstance(result, GlobalResult) and not result.extractive
    assert result.level is not None
    assert chat_requests == result.llm_calls == result.level.n_batches + 1
    assert result.answer.strip() and any(i.startswith("community-") for i in result.source_ids)
