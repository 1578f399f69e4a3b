"""A finished query leaves none of its state alive, also not in the Neo4j connections its steps opened:
asyncio's socket callbacks keep the context a connection was opened in for as long as it is pooled, and a
workflow step's context holds the step's events and results."""

from __future__ import annotations

import asyncio
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
    # A fresh engine: its pool holds the connections `connect()` opened, and a DRIFT round's concurrent
    # reads open more.
    async with DriftRAG(search_settings) as rag:
        for _ in range(3):
            result = await rag.query(graph_kb, QUESTION, mode="drift")
            assert result.answer and result.intermediate
        del result
        # The workflow's own tasks may still be finishing for a few loop turns after the answer; a kept
        # query stays for as long as the pool holds the connection, so a second is plenty.
        for _ in range(20):
            if not (alive := _drift_searches() - before):
                break
            await asyncio.sleep(0.05)
        assert alive == set()
