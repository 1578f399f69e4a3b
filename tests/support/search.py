"""Query tests over a graph the deterministic test LLM ingested: the graph, and query deps over it."""

from __future__ import annotations

import uuid

from driftrag.composition import query_deps
from driftrag.providers import Providers
from driftrag.search.deps import QueryDeps
from driftrag.settings import Settings
from driftrag.store import Neo4jStore
from driftrag.store.roles import neo4j_roles
from tests.fakes.harbor_corpus import DescriptiveChatModel
from tests.fakes.scripted_llm import ScriptedChatModel
from tests.support.ingestion import Ingestor


async def ingested_kb(store: Neo4jStore, settings: Settings, providers: Providers) -> str:
    """The harbor corpus ingested into a new kb by the deterministic test LLM; returns the kb."""
    kb = f"test-search-{uuid.uuid4().hex[:10]}"
    run = await Ingestor(settings=settings, store=store, providers=providers).run(kb, DescriptiveChatModel())
    assert run.result.failed_chunks == [] and run.result.counts.reports > 0
    return kb


def make_deps(
    settings: Settings, store: Neo4jStore, providers: Providers, chat=None, **overrides
) -> tuple[QueryDeps, ScriptedChatModel]:
    """Query deps over the test Neo4j with `overrides` on the settings, and the chat double they answer with."""
    chat = chat if chat is not None else ScriptedChatModel()
    deps = query_deps(settings.model_copy(update=overrides), neo4j_roles(store), providers, chat)
    return deps, chat


def all_ids(graph_ids: dict[str, set[str]]) -> set[str]:
    """Every id of `graph_ids` (ids by kind, as the `graph_ids` fixture gives them)."""
    return set().union(*graph_ids.values())
