"""An interactive graph view (pyvis, i.e. vis-network) that works with no network: nodes coloured by
community, a search box that finds an entity by name and highlights its neighbourhood, hover details.

pyvis is an optional extra (`pip install 'driftrag[notebook]'`). The page is self-contained: pyvis's
own template with its `in_line` resources (vis-network, its style sheet, tom-select for the search box,
all read from the installed pyvis package), minus the Bootstrap links that template always fetches
from a CDN, which a few lines of inline CSS replace. The template is rendered with autoescaping on, so
entity names reach the page as text, never as markup. Nodes start at the static view's seeded layout
(`driftrag.views.html.layout`), so the page of a view is always the same, and vis-network's
forceAtlas2 spreads them before the first frame; they can then be dragged, zoomed and searched.

Everything here is pure (no Neo4j): `DriftRAG`-side reading is `driftrag.notebook.interactive_graph`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from driftrag.errors import OptionalDependencyError
from driftrag.models.views import GraphView
from driftrag.views.html import layout
from driftrag.views.measures import ViewMeasures, measure

# Tableau 10, then a second ring of lighter tones: distinct on white, colour-blind friendlier than HSV steps.
PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#e15759",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
    "#a0cbe8",
    "#ffbe7d",
    "#ff9d9a",
    "#8cd17d",
    "#f1ce63",
    "#d4a6c8",
)
NO_COMMUNITY_COLOUR = "#cfd8dc"
NO_COMMUNITY = "no community at this level"
# Bootstrap's links in pyvis's template (a style sheet and a script, both on a CDN).
_BOOTSTRAP = re.compile(r"<(link|script)\b[^>]*bootstrap[^>]*>\s*(</script>)?", re.IGNORECASE | re.DOTALL)
# Stands in for the Bootstrap classes the template uses (card, grid row, select, button).
_CSS = """
body { margin: 12px; font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; color: #212121; }
h1:empty { display: none; }
.card { border: 1px solid #e0e0e0; border-radius: 6px; }
.card-header { padding: 8px; background: #fafafa; border-bottom: 1px solid #e0e0e0; }
.row { display: flex; gap: 8px; align-items: center; }
.col-10 { flex: 1; } .col-2 { flex: 0 0 auto; } .col-3 { flex: 1; }
.btn { padding: 6px 12px; border: 1px solid #1565c0; border-radius: 4px; background: #1976d2; color: #fff; }
.driftrag-legend { margin: 0 0 8px; font-size: 13px; line-height: 1.7; }
.driftrag-legend span.swatch { display: inline-block; width: 11px; height: 11px; border-radius: 50%;
  margin: 0 4px 0 10px; vertical-align: -1px; }
"""
# Any resource the page would ask for: pyvis's in_line page has none (its scripts and styles are inside).
_EXTERNAL = re.compile(r"<(script|link|img|iframe)\b[^>]*\b(src|href)\s*=", re.IGNORECASE)


class CommunityColour(BaseModel):
    """One colour of the legend: a community (or the entities in none) and how many shown entities it has."""

    model_config = ConfigDict(extra="forbid")

    id: str | None
    title: str
    colour: str
    entities: int


class Membership(BaseModel):
    """Which community colours each shown entity, at one level of the hierarchy."""

    model_config = ConfigDict(extra="forbid")

    level: int | None
    community_of: dict[str, str]  # entity id -> community id
    titles: dict[str, str]  # community id -> title (its report's, or its id)


def membership(view: GraphView, communities: Sequence[Mapping[str, Any]], level: int | None = None) -> Membership:
    """The community of each shown entity at `level`, from `DriftRAG.communities(kb)` rows.

    `level=None` picks the level below the view's community (level 0 for a whole-kb view), so a
    community view is coloured by its sub-communities; when no community sits at that level (a finest
    community), the view's own level is used. A community's `entity_ids` include its descendants', so
    at one level an entity is in at most one community."""
    levels = {row["level"] for row in communities if row.get("level") is not None}
    if level is None:
        wanted = 0 if view.community_level is None else view.community_level + 1
        level = wanted if wanted in levels else view.community_level
    shown = {entity.id for entity in view.entities}
    community_of: dict[str, str] = {}
    titles: dict[str, str] = {}
    for row in sorted(communities, key=lambda r: r["id"]):
        if level is None or row.get("level") != level:
            continue
        members = shown.intersection(row.get("entity_ids") or [])
        for entity_id in sorted(members):
            community_of.setdefault(entity_id, row["id"])
        if members:
            titles[row["id"]] = (row.get("title") or "").strip() or row["id"]
    return Membership(level=level, community_of=community_of, titles=titles)


def legend(view: GraphView, member: Membership) -> list[CommunityColour]:
    """Communities by shown size (largest first, ties by id), each with its colour; then the unplaced."""
    sizes: dict[str, int] = {}
    for entity in view.entities:
        community_id = member.community_of.get(entity.id)
        if community_id is not None:
            sizes[community_id] = sizes.get(community_id, 0) + 1
    ranked = sorted(sizes, key=lambda c: (-sizes[c], c))
    colours = [
        CommunityColour(id=c, title=member.titles[c], colour=PALETTE[i % len(PALETTE)], entities=sizes[c])
        for i, c in enumerate(ranked)
    ]
    unplaced = len(view.entities) - sum(sizes.values())
    if unplaced:
        colours.append(CommunityColour(id=None, title=NO_COMMUNITY, colour=NO_COMMUNITY_COLOUR, entities=unplaced))
    return colours


def _pyvis() -> Any:
    try:
        from pyvis.network import Network
    except ImportError:
        raise OptionalDependencyError(
            "the interactive graph view needs pyvis, an optional extra: pip install 'driftrag[notebook]' "
            "(HtmlView, the static picture, needs nothing more)"
        ) from None
    return Network


def _template(network: Any) -> Any:
    """pyvis's template without its CDN links, in an autoescaping environment on pyvis's template folder."""
    from jinja2 import Environment, FileSystemLoader

    environment = Environment(loader=FileSystemLoader(network.template_dir), autoescape=True)
    source, _, _ = environment.loader.get_source(environment, network.path)
    stripped, removed = _BOOTSTRAP.subn("", re.sub(r"<!--.*?-->", "", source, flags=re.DOTALL))
    if removed != 2:
        raise OptionalDependencyError(_UNKNOWN_TEMPLATE)
    stripped = stripped.replace("</head>", f"<style>{_CSS}</style>\n</head>", 1)
    return environment.from_string(stripped.replace("Select a Node by ID", "Search an entity by name", 1))


_UNKNOWN_TEMPLATE = (
    "the installed pyvis has a template driftrag does not know (it supports pyvis>=0.3.2,<0.4): "
    "its page could fetch from the network, so it is not drawn"
)


def _unique_names(view: GraphView) -> dict[str, str]:
    """Entity id -> the name the search box lists; a repeated name gets its id appended."""
    counts: dict[str, int] = {}
    for entity in view.entities:
        name = entity.name.strip() or entity.id
        counts[name] = counts.get(name, 0) + 1
    return {
        e.id: (name if counts[name] == 1 else f"{name} ({e.id})")
        for e in view.entities
        for name in [e.name.strip() or e.id]
    }


class InteractiveGraph:
    """A graph view drawn by pyvis: `write_html(path)` saves the page, notebooks show it inline (an
    iframe holding the page, so it runs in JupyterLab, Notebook and VS Code alike)."""

    def __init__(
        self,
        view: GraphView,
        member: Membership,
        *,
        height: int = 640,
        measures: ViewMeasures | None = None,
    ) -> None:
        self.view = view
        self.membership = member
        self.height = height
        self.measures = measures or measure(view)
        self.legend = legend(view, member)
        self.names = _unique_names(view)
        self.html = self._render()

    def _render(self) -> str:
        network_class = _pyvis()
        network = network_class(
            height=f"{self.height}px", width="100%", directed=False, select_menu=True, cdn_resources="in_line"
        )
        colour_of = {c.id: c.colour for c in self.legend}
        title_of = {c.id: c.title for c in self.legend}
        positions = layout(self.view, self.measures)
        hubs = set(self.measures.hubs)
        for entity in sorted(self.view.entities, key=lambda e: e.id):
            community_id = self.membership.community_of.get(entity.id)
            x, y = positions[entity.id]
            details = [
                self.names[entity.id],
                f"type {entity.type or 'UNKNOWN'}; degree {entity.degree}; {entity.mentions} mentions",
                f"community: {title_of[community_id]}" + (f" ({community_id})" if community_id else ""),
            ]
            if entity.aliases:
                details.append(f"also named: {', '.join(entity.aliases)}")
            network.add_node(
                self.names[entity.id],
                label=self.names[entity.id],
                title="\n".join(details),
                color=colour_of[community_id],
                size=8 + 3 * entity.degree**0.5,
                borderWidth=3 if entity.id in hubs else 1,
                x=x,
                y=y,
                community=title_of[community_id],
            )
        for relationship in sorted(self.view.relationships, key=lambda r: r.id):
            edge = self.measures.edges[relationship.id]
            network.add_edge(
                self.names[relationship.source_id],
                self.names[relationship.target_id],
                title=f"{relationship.type or 'RELATED_TO'}, weight {edge.weight:.1f}",
                width=0.5 + 0.4 * edge.weight,
                color="#37474f" if edge.bold else "#b0bec5",
                **({"arrows": "to"} if edge.directed else {}),
            )
        network.set_options(
            json.dumps(
                {
                    # Spread from the static layout's positions before the first frame, then settle.
                    "physics": {
                        "solver": "forceAtlas2Based",
                        "forceAtlas2Based": {"gravitationalConstant": -60, "springLength": 70, "avoidOverlap": 0.6},
                        "stabilization": {"iterations": 300, "fit": True},
                    },
                    "interaction": {"hover": True, "tooltipDelay": 150},
                    "nodes": {"shape": "dot", "font": {"size": 14, "strokeWidth": 3, "strokeColor": "#ffffff"}},
                    "edges": {"smooth": False},
                }
            )
        )
        network.template = _template(network)
        page = network.generate_html(notebook=True)
        if _EXTERNAL.search(page):
            raise OptionalDependencyError(_UNKNOWN_TEMPLATE)
        return page.replace("<body>", f"<body>\n{self._legend_html()}", 1)

    def _legend_html(self) -> str:
        level = "" if self.membership.level is None else f" (level {self.membership.level})"
        items = "".join(
            f'<span class="swatch" style="background:{c.colour}"></span>{escape(c.title)} ({c.entities})'
            for c in self.legend
        )
        return (
            f'<div class="driftrag-legend"><strong>{escape(self.describe())}</strong><br>'
            f"Colour: community{level}:{items}<br>"
            "Search an entity in the box to highlight its neighbourhood; hover a node or an edge for details; "
            "drag, scroll to zoom.</div>"
        )

    def describe(self) -> str:
        communities = sum(1 for c in self.legend if c.id is not None)
        return f"{self.view.describe()}; {communities} communities"

    def write_html(self, path: str | Path) -> Path:
        """The self-contained page (about 0.8 MB: vis-network is inside); opens with no network."""
        target = Path(path)
        target.write_text(self.html, encoding="utf-8")
        return target

    def _repr_html_(self) -> str:
        return (
            f'<iframe srcdoc="{escape(self.html, quote=True)}" title="{escape(self.describe())}" '
            f'style="width:100%;height:{self.height + 160}px;border:0"></iframe>'
        )

    def __str__(self) -> str:
        return f"interactive graph: {self.describe()} (a notebook shows it; write_html(path) saves it)"

    __repr__ = __str__
