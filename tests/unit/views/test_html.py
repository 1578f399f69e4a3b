"""The HTML view: self-contained (no network, no script), every entity labelled, deterministic."""

from __future__ import annotations

import re
from html import escape
from pathlib import Path

from driftrag.models.views import GraphView
from driftrag.views.html import HtmlView, layout, render_fragment, render_html
from driftrag.views.measures import measure

HOSTILE = ['Tom "the" <b>Cat</b>', "A & B", "Ünïcødé 愛", "x --> y"]


def test_the_page_is_self_contained(sample_view: GraphView) -> None:
    page = render_html(sample_view)

    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r"https?:", page)
    assert not re.search(r"<(script|link|img|iframe)\b|@import|src=", page, re.IGNORECASE)
    assert '<meta charset="utf-8">' in page
    assert page.count("<svg") == 1


def test_every_entity_has_a_label(sample_view: GraphView, make_entity) -> None:
    entities = [*sample_view.entities, *(make_entity(f"z{i}", name=name) for i, name in enumerate(HOSTILE))]
    view = sample_view.model_copy(update={"entities": entities, "entities_total": len(entities)})

    page = render_html(view)

    labels = re.findall(r'paint-order="stroke">([^<]*)</text>', page)
    assert sorted(labels) == sorted(escape(entity.name) for entity in entities)
    assert "<b>Cat</b>" not in page
    assert page.count("<circle") == len(entities)


def test_edges_hubs_and_cut_are_drawn(sample_view: GraphView) -> None:
    cut = sample_view.model_copy(update={"entities_total": 30, "max_nodes": 8, "truncated": True})

    page = render_html(cut)

    assert page.count("<line") == len(sample_view.relationships)
    # Bold edges are dark; the hub (A) is gold; directed edges end with an arrow, RELATED_TO does not.
    assert page.count('stroke="#263238"') == 3
    assert page.count('fill="#ffd54f"') == 1
    assert page.count("marker-end=") == 4
    assert "only the 8 highest-degree of 30 entities are shown" in page


def test_layout_is_deterministic_and_inside_the_canvas(sample_view: GraphView) -> None:
    measures = measure(sample_view)

    first, second = layout(sample_view, measures), layout(sample_view, measures)

    assert first == second
    assert set(first) == {entity.id for entity in sample_view.entities}
    assert all(x > 0 and y > 0 for x, y in first.values())
    assert len(set(first.values())) == len(first)
    assert render_html(sample_view) == render_html(sample_view)


def test_notebooks_get_a_fragment_and_files_a_page(sample_view: GraphView, tmp_path: Path) -> None:
    shown = HtmlView(sample_view)

    fragment = shown._repr_html_()
    path = shown.save(tmp_path / "graph.html")

    assert fragment == render_fragment(sample_view)
    assert fragment.startswith('<div class="driftrag-graph"') and "<html" not in fragment
    assert path.read_text(encoding="utf-8") == render_html(sample_view)


def test_an_empty_view_renders() -> None:
    page = render_html(GraphView(kb="empty", entities_total=0, relationships_total=0))

    assert "<svg" in page and "<circle" not in page


def test_an_entity_tooltip_names_its_merged_aliases(sample_view: GraphView) -> None:
    first = sample_view.entities[0].model_copy(update={"name": "Cheshire Cat", "aliases": ["Cat"]})
    view = sample_view.model_copy(update={"entities": [first, *sample_view.entities[1:]]})

    page = render_html(view)

    assert "Cheshire Cat (PERSON)" in page and "also named: Cat" in page
