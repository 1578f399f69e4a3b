"""The interactive (pyvis) graph view: community colours, the legend, a page that fetches nothing,
names shown as text, and a clear message without the extra. Its rendering in a real browser is
tests/integration/views/test_interactive_in_browser.py."""

from __future__ import annotations

import builtins
import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from driftrag.errors import OptionalDependencyError
from driftrag.models.views import GraphView
from driftrag.views import interactive
from driftrag.views.interactive import NO_COMMUNITY, PALETTE, InteractiveGraph, legend, membership

COMMUNITIES = [
    {
        "id": "community-0-0",
        "level": 0,
        "entity_ids": ["entity-A", "entity-B", "entity-C", "entity-D"],
        "title": "ABCD",
    },
    {"id": "community-0-1", "level": 0, "entity_ids": ["entity-E", "entity-F"], "title": ""},
    {"id": "community-1-0", "level": 1, "entity_ids": ["entity-B", "entity-C"], "title": "BC"},
    {"id": "community-1-1", "level": 1, "entity_ids": ["entity-A"], "title": "A alone"},
]


@pytest.fixture
def view(sample_view: GraphView) -> Callable[..., GraphView]:
    """The shared sample view (A..H, A the hub), with some entities renamed."""

    def make(names: dict[str, str] | None = None) -> GraphView:
        renamed = [e.model_copy(update={"name": (names or {}).get(e.name, e.name)}) for e in sample_view.entities]
        return sample_view.model_copy(update={"entities": renamed})

    return make


def _nodes(page: str) -> list[dict[str, Any]]:
    """The node records the page hands to vis-network."""
    found = re.search(r"nodes = new vis\.DataSet\((\[.*?\])\);", page, re.DOTALL)
    assert found, "no node data in the page"
    return json.loads(found.group(1))


def test_a_kb_view_is_coloured_by_its_level_0_communities(view: Callable[..., GraphView]) -> None:
    shown = view()
    member = membership(shown, COMMUNITIES)
    assert member.level == 0
    assert member.community_of == {
        "entity-A": "community-0-0",
        "entity-B": "community-0-0",
        "entity-C": "community-0-0",
        "entity-D": "community-0-0",
        "entity-E": "community-0-1",
        "entity-F": "community-0-1",
    }
    # Largest community first, a community without a title shows its id, the unplaced (G, H) last and grey.
    assert [(c.title, c.entities, c.colour) for c in legend(shown, member)] == [
        ("ABCD", 4, PALETTE[0]),
        ("community-0-1", 2, PALETTE[1]),
        (NO_COMMUNITY, 2, interactive.NO_COMMUNITY_COLOUR),
    ]


def test_a_community_view_is_coloured_by_the_level_below_it(view: Callable[..., GraphView]) -> None:
    shown = view().model_copy(update={"community_id": "community-0-0", "community_level": 0})
    assert membership(shown, COMMUNITIES).level == 1
    finest = shown.model_copy(update={"community_id": "community-1-0", "community_level": 1})
    assert membership(finest, COMMUNITIES).level == 1  # nothing below level 1: its own level
    assert membership(shown, COMMUNITIES, level=0).community_of["entity-B"] == "community-0-0"


def test_the_page_holds_every_entity_in_its_colour_and_fetches_nothing(view: Callable[..., GraphView]) -> None:
    shown = view()
    graph = InteractiveGraph(shown, membership(shown, COMMUNITIES))
    nodes = {node["label"]: node for node in _nodes(graph.html)}
    assert sorted(nodes) == sorted(e.name for e in shown.entities)
    assert nodes["A"]["color"] == nodes["D"]["color"] == PALETTE[0]
    assert nodes["E"]["color"] == PALETTE[1]
    assert nodes["H"]["color"] == interactive.NO_COMMUNITY_COLOUR
    assert "community: ABCD (community-0-0)" in nodes["A"]["title"]
    assert nodes["A"]["borderWidth"] == 3  # the hub
    assert 'id="select-node"' in graph.html and "new TomSelect" in graph.html  # the search box
    assert "new vis.Network" in graph.html  # vis-network inlined
    assert not re.search(r"<(script|link|img|iframe)\b[^>]*\b(src|href)\s*=", graph.html, re.IGNORECASE)
    assert "bootstrap" not in graph.html.lower()
    assert "ABCD (4)" in graph.html and "3 communities" not in graph.describe()
    assert graph.describe().endswith("; 2 communities")


def test_positions_are_the_static_layouts_so_the_page_is_deterministic(view: Callable[..., GraphView]) -> None:
    shown = view()
    first = InteractiveGraph(shown, membership(shown, COMMUNITIES)).html
    assert first == InteractiveGraph(shown, membership(shown, COMMUNITIES)).html
    assert all("x" in node and "y" in node for node in _nodes(first))


def test_hostile_and_repeated_names_reach_the_page_as_text(view: Callable[..., GraphView]) -> None:
    hostile = "<img src=x onerror=alert(1)>"
    shown = view(names={"A": hostile, "B": "Twin", "C": "Twin"})
    graph = InteractiveGraph(shown, membership(shown, COMMUNITIES))
    assert hostile not in graph.html  # escaped in the search box's options, \u003c-encoded in the data
    assert "&lt;img src=x onerror=alert(1)&gt;" in graph.html
    labels = {node["label"] for node in _nodes(graph.html)}
    assert {hostile, "Twin (entity-B)", "Twin (entity-C)"} <= labels
    frame = graph._repr_html_()
    assert frame.startswith("<iframe srcdoc=") and "<script" not in frame  # the page is an escaped attribute


def test_without_pyvis_the_message_names_the_extra(
    view: Callable[..., GraphView], monkeypatch: pytest.MonkeyPatch
) -> None:
    real_import = builtins.__import__

    def no_pyvis(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("pyvis"):
            raise ImportError("No module named 'pyvis'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyvis)
    shown = view()
    with pytest.raises(OptionalDependencyError, match=r"pip install 'driftrag\[notebook\]'"):
        InteractiveGraph(shown, membership(shown, COMMUNITIES))
