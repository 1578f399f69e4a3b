"""The top-rated report (DRIFT's HyDE template) read by ordered index seeks, with every tie-break."""

from __future__ import annotations

import random
import uuid

import pytest

from driftrag.models.graph import Community, CommunityReport
from driftrag.store import Neo4jStore
from driftrag.store.graph import GraphStore
from driftrag.store.search import SearchStore


async def _write_communities(
    store: Neo4jStore, kb: str, seed: int, n: int, ratings: list[float], largest: int = 6
) -> None:
    rnd = random.Random(seed)
    communities, reports = [], {}
    for i in range(n):
        members = [f"e{j}" for j in range(rnd.randint(1, largest))]
        community = Community(id=f"community-0-{i}", level=0, entity_ids=members)
        communities.append(community)
        if rnd.random() < 0.8:  # some communities have no report (and so no rating)
            reports[community.id] = CommunityReport(
                community_id=community.id, level=0, title=f"c{i}", summary="s", rating=rnd.choice(ratings)
            )
    await GraphStore(store).replace_communities(kb, communities, reports, {}, {})


@pytest.mark.parametrize("largest", [6, 1], ids=["sizes-vary", "all-one-size"])
async def test_top_rated_report_breaks_ties_by_size_then_id_and_stays_in_its_kb(store: Neo4jStore, largest) -> None:
    await store.ensure_schema()
    kb, other = f"test-top-{uuid.uuid4().hex[:6]}", f"test-top-{uuid.uuid4().hex[:6]}"
    # Few distinct ratings, so the best one is shared by many communities (more than the candidates
    # read) and the choice rests on the tie-breaks; with one size for all, on the id alone.
    await _write_communities(store, kb, seed=7, n=120, ratings=[2.0, 6.5, 9.0], largest=largest)
    await _write_communities(store, other, seed=8, n=30, ratings=[9.5, 10.0])
    try:
        communities = await GraphStore(store).communities(kb)
        rated = sorted(
            (c for c in communities if c["rating"] is not None),
            key=lambda c: (-c["rating"], -len(c["entity_ids"]), c["id"]),
        )
        assert sum(c["rating"] == 9.0 for c in rated) > 8
        top = await SearchStore(store).top_rated_report(kb)
        assert top is not None and (top.id, top.rating) == (rated[0]["id"], 9.0)
        assert top.text.startswith(f"# {top.title}")
    finally:
        for name in (kb, other):
            await GraphStore(store).delete_kb(name)
