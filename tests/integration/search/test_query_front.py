"""Every mode through the facade's one query front: the same retry of a transient Neo4j failure and the
same timeout, DRIFT and the single-pass modes alike. The failures are injected around the real driver
(`tests.fakes.flaky_neo4j`), so the store's own error translation and the real Neo4j run underneath."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from driftrag.errors import BackendUnavailableError, QueryTimeoutError
from driftrag.facade import DriftRAG
from driftrag.providers import Providers
from driftrag.search.modes import MODE_NAMES
from driftrag.settings import Settings
from driftrag.store import Neo4jStore
from driftrag.store.roles import neo4j_roles
from tests.fakes.flaky_neo4j import FlakyDriver
from tests.fakes.scripted_llm import ScriptedChatModel

QUESTION = "What did Captain Mirela Voss tell Jonas Pell about the Grey Reef?"


async def flaky_rag(settings: Settings, providers: Providers) -> tuple[DriftRAG, FlakyDriver]:
    flaky = FlakyDriver(Neo4jStore.from_settings(settings).driver)
    rag = DriftRAG(
        settings, stores=neo4j_roles(Neo4jStore(settings, flaky)), providers=providers, chat=ScriptedChatModel()
    )
    await rag.connect(start_local=False)
    return rag, flaky


@pytest.fixture
async def rag_with_retries(search_settings: Settings, search_providers: Providers) -> AsyncIterator[tuple]:
    rag, flaky = await flaky_rag(search_settings.model_copy(update={"query_step_retries": 1}), search_providers)
    yield rag, flaky
    await rag.close()


@pytest.mark.parametrize("mode", MODE_NAMES)
async def test_every_mode_retries_a_transient_neo4j_failure(rag_with_retries, graph_kb: str, mode: str) -> None:
    rag, flaky = rag_with_retries
    # The query's first read (the kb and graph check) loses the server on both of the store's attempts
    # (the one-round-trip read and its managed retry): the query's step retry answers.
    flaky.fail_next(2)
    result = await rag.query(graph_kb, QUESTION, mode=mode)
    assert flaky.injected == 2
    assert result.mode == mode and result.answer.strip()
    assert set(result.source_ids) <= {s.id for s in result.retrieved_sources()}


@pytest.mark.parametrize("mode", MODE_NAMES)
async def test_without_retries_every_mode_reports_the_lost_server(
    search_settings: Settings, search_providers: Providers, graph_kb: str, mode: str
) -> None:
    rag, flaky = await flaky_rag(search_settings.model_copy(update={"query_step_retries": 0}), search_providers)
    try:
        flaky.fail_next(2)  # both of the store's attempts at the first read
        with pytest.raises(BackendUnavailableError, match="unreachable"):
            await rag.query(graph_kb, QUESTION, mode=mode)
    finally:
        await rag.close()


@pytest.mark.parametrize("mode", MODE_NAMES)
async def test_every_mode_stops_at_the_query_timeout(
    search_settings: Settings, search_providers: Providers, graph_kb: str, mode: str
) -> None:
    settings = search_settings.model_copy(update={"query_timeout_s": 0.5})
    rag, flaky = await flaky_rag(settings, search_providers)
    try:
        flaky.stall_next(1, seconds=3.0)
        with pytest.raises(QueryTimeoutError, match=f"the {mode} query .* longer than query_timeout_s=0.5"):
            await rag.query(graph_kb, QUESTION, mode=mode)
    finally:
        await rag.close()


@pytest.mark.parametrize("mode", MODE_NAMES)
async def test_progress_reaches_the_caller_in_every_mode(rag_with_retries, graph_kb: str, mode: str) -> None:
    rag, _ = rag_with_retries
    phases: list[str] = []
    await rag.query(graph_kb, QUESTION, mode=mode, on_progress=lambda event: phases.append(event.phase))
    assert phases[-1] == ("reduce" if mode in ("drift", "global") else "answered"), phases
