"""The interactive graph view in a real browser, with the network switched off: headless Chromium (Debian's
package) opens the page `interactive_graph(...).write_html` writes for a graph read from the real Neo4j
through the facade, and the test checks that vis-network drew every entity in its community's colour,
that the search box finds an entity and highlights its neighbourhood, that no script failed and that
the page asked for nothing but itself.

The screenshot is kept as a test artifact: `test-artifacts/graph-widget.png` (git-ignored);
docs/images/graph-widget.png is made the same way (`docs/draw_graph_widget.py`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest
from matplotlib import image

from driftrag.facade import DriftRAG
from driftrag.notebook import interactive_graph
from driftrag.settings import Settings
from driftrag.store import Neo4jStore
from driftrag.store.graph import GraphStore
from driftrag.views.interactive import NO_COMMUNITY_COLOUR
from tests.support.browser import Chromium
from tests.support.view_graph import write_graph

ROOT = Path(__file__).resolve().parents[3]
ARTIFACTS = ROOT / "test-artifacts"

# What vis-network holds once drawn: each node's id (its shown name) and colour, the canvas, the search box.
DRAWN = """(() => ({
  nodes: nodes.get().map((n) => ({id: n.id, color: n.color})),
  edges: edges.length,
  canvas: (() => { const c = document.querySelector('#mynetwork canvas');
                   return c ? [c.width, c.height] : null; })(),
  search: !!document.querySelector('#select-node').tomselect,
}))()"""


@pytest.fixture
async def rag(neo4j_settings: Settings, store: Neo4jStore, kb: str) -> AsyncIterator[DriftRAG]:
    """The facade over the test graph (see tests/support/view_graph.py: two level-0 communities, one below)."""
    await store.ensure_schema()
    await write_graph(store, kb)
    async with DriftRAG(neo4j_settings) as engine:
        yield engine
    await GraphStore(store).delete_kb(kb)


def _pixels(png: Path, colour: str) -> int:
    rgb = np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)])
    pixels = (image.imread(png)[..., :3] * 255).round().astype(int)
    return int(np.all(np.abs(pixels - rgb) <= 2, axis=-1).sum())


async def test_the_interactive_page_draws_and_searches_offline(
    chromium: Path, rag: DriftRAG, kb: str, tmp_path: Path
) -> None:
    graph = await interactive_graph(rag, kb)
    page = graph.write_html(tmp_path / "graph.html")
    colours = {c.title: c.colour for c in graph.legend}
    assert colours["Alice and the Rabbit"] != colours["community-0-1"]  # no report: titled by its id
    expected = {graph.names[e.id]: e for e in graph.view.entities}
    assert len(expected) >= 5

    with Chromium(chromium, tmp_path) as browser:
        # No network at all: a page that needed a CDN would fail to draw, and its request would show.
        browser.send(
            "Network.emulateNetworkConditions",
            {"offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1},
        )
        browser.open(page.as_uri())
        drawn = browser.evaluate(DRAWN)
        shot = browser.screenshot(ARTIFACTS / "graph-widget.png")
        # Search as a user does: type into the box, pick the first match.
        found = browser.evaluate(
            "(() => { const box = document.querySelector('#select-node').tomselect;"
            " box.setTextboxValue('Rabb'); box.refreshOptions(false);"
            " const hits = box.currentResults.items.map((i) => i.id);"
            " box.setValue(hits[0]); return hits; })()"
        )
        highlighted = browser.evaluate("nodes.get().map((n) => ({id: n.id, color: n.color}))")
        errors, requests = list(browser.errors), list(browser.requests)

    assert errors == []
    assert requests == [page.as_uri()], "the page loads nothing but itself"
    assert drawn["search"] and drawn["canvas"] and min(drawn["canvas"]) > 300
    assert drawn["edges"] == len(graph.view.relationships)
    by_label = {node["id"]: node["color"] for node in drawn["nodes"]}
    assert sorted(by_label) == sorted(expected)
    for label, entity in expected.items():
        community_id = graph.membership.community_of.get(entity.id)
        wanted = NO_COMMUNITY_COLOUR if community_id is None else colours[graph.membership.titles[community_id]]
        assert by_label[label] == wanted, label
    # Each colour of the legend is painted on the canvas.
    for colour in {c.colour for c in graph.legend}:
        assert _pixels(shot, colour) > 30, colour

    assert found == ["Rabbit"]
    after = {node["id"]: node["color"] for node in highlighted}
    rabbit = next(e for e in graph.view.entities if graph.names[e.id] == "Rabbit")
    neighbours = {
        graph.names[r.target_id if r.source_id == rabbit.id else r.source_id]
        for r in graph.view.relationships
        if rabbit.id in (r.source_id, r.target_id)
    }
    assert after["Rabbit"] == by_label["Rabbit"]  # the entity found keeps its colour...
    assert all(after[name] == by_label[name] for name in neighbours)  # ...and so do its neighbours
    faded = set(after) - neighbours - {"Rabbit"}
    assert faded and all(after[name] != by_label[name] for name in faded)  # the rest is greyed out
