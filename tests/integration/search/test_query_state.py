"""A finished query leaves none of its state alive, also not in the Neo4j connections its steps opened:
asyncio's socket callbacks keep the context a connection was opened in for as long as it is pooled, and a
workflow step's context holds the step's events and results."""

from __future__ import annotations

import gc

from driftrag.facade import DriftRAG
from driftrag.search.drift.search import DriftSearch
from driftrag.settings import Settings

QUESTION = "Who sailed the Amber Lantern out of Harbor Town?"


def _drift_searches() -> set[int]:
    gc.collect()
    return {id(obj) for obj in gc.get_objects() if isinstance(obj, DriftSearch)}


async def test_finished_drift_queries_are_not_kept_alive_by_the_pooled_connections(
    search_settings: Settings, graph_kb: str
) -> None:
    before = _drift_searches()
    # A fresh engine: its pool holds the connection of `connect()`, so the query's concurrent steps open more.
    async with DriftRAG(search_settings) as rag:
        for _ in range(3):
            result = await rag.query(graph_kb, QUESTION, mode="drift")
            assert result.answer and result.intermediate
        del result
        assert _drift_searches() - before == set()
