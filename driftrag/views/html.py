"""A self-contained HTML view of a graph view: inline SVG laid out here, no script, no network.

The layout is deterministic: each connected component gets a seeded spring layout (networkx's
Fruchterman-Reingold, a dependency of llama-index-core) scaled with its size, components are packed
in rows largest first, and entities without relationships sit in a grid below them. Node size grows
with degree, hubs are gold, bold edges (weight above 7) are thick and dark, directed relationships
end in an arrow; hovering a node or an edge shows its details (SVG `<title>`).

`render_html` gives a full page for a file; `HtmlView` also renders itself in Jupyter
(`_repr_html_`), so IPython is never imported here.
"""

from __future__ import annotations

import hashlib
import math
from html import escape
from pathlib import Path

from driftrag.models.views import GraphView
from driftrag.views.measures import ViewMeasures, measure

_SEED = 7
_SPACING = 90.0  # distance scale between neighbouring nodes, in SVG units
_PAD = _SPACING / 2  # room around each component, for labels
_MARGIN = 40.0
_ROW_WIDTH = 1400.0
_FONT = "system-ui, -apple-system, 'Segoe UI', sans-serif"


def _component_positions(members: list[str], edges: list[tuple[str, str]]) -> dict[str, tuple[float, float]]:
    """Positions of one component, centred on (0, 0), spread in proportion to sqrt(size)."""
    if len(members) == 1:
        return {members[0]: (0.0, 0.0)}
    import networkx as nx

    graph = nx.Graph()
    graph.add_nodes_from(members)  # sorted: node order fixes the seeded layout
    graph.add_edges_from(edges)
    # Unweighted: heavy edges pulling their ends together would stack labels on top of each other.
    scale = _SPACING * math.sqrt(len(members))
    layout = nx.spring_layout(graph, seed=_SEED, weight=None, scale=scale, center=(0.0, 0.0))
    return {node: (float(x), float(y)) for node, (x, y) in layout.items()}


def layout(view: GraphView, measures: ViewMeasures) -> dict[str, tuple[float, float]]:
    """Entity id → (x, y) in SVG units, all coordinates ≥ the margin."""
    edges_by_component: dict[int, list[tuple[str, str]]] = {}
    component_of = {entity_id: i for i, members in enumerate(measures.components) for entity_id in members}
    for relationship in view.relationships:
        edges_by_component.setdefault(component_of[relationship.source_id], []).append(
            (relationship.source_id, relationship.target_id)
        )
    positions: dict[str, tuple[float, float]] = {}
    x = y = _MARGIN
    row_height = 0.0
    for i, members in enumerate(measures.components):
        local = _component_positions(members, edges_by_component.get(i, []))
        xs = [p[0] for p in local.values()]
        ys = [p[1] for p in local.values()]
        width, height = max(xs) - min(xs) + 2 * _PAD, max(ys) - min(ys) + 2 * _PAD
        if x > _MARGIN and x + width > _ROW_WIDTH:
            x, y, row_height = _MARGIN, y + row_height, 0.0
        for node, (px, py) in local.items():
            positions[node] = (x + _PAD + px - min(xs), y + _PAD + py - min(ys))
        x += width
        row_height = max(row_height, height)
    y += row_height
    column = 1.6 * _SPACING  # room for a label between isolated entities
    per_row = max(1, int((_ROW_WIDTH - _MARGIN) // column))
    for i, entity_id in enumerate(measures.isolated):
        positions[entity_id] = (_MARGIN + _PAD + (i % per_row) * column, y + _PAD + (i // per_row) * _SPACING)
    return positions


def _marker(marker_id: str, size: int, colour: str) -> str:
    # userSpaceOnUse: arrowheads keep one size instead of growing with the stroke width.
    return (
        f'<marker id="{marker_id}" viewBox="0 0 10 10" refX="10" refY="5" markerUnits="userSpaceOnUse" '
        f'markerWidth="{size}" markerHeight="{size}" orient="auto-start-reverse">'
        f'<path d="M0,0 L10,5 L0,10 z" fill="{colour}"/></marker>'
    )


def _fmt(value: float) -> str:
    return f"{value:.1f}"


def render_svg(view: GraphView, measures: ViewMeasures | None = None) -> str:
    """The `<svg>` element (no XML namespace needed inside HTML); ids are unique per view content."""
    measures = measures or measure(view)
    positions = layout(view, measures)
    names = {e.id: e.name.strip() or e.id for e in view.entities}
    # A content-derived prefix keeps marker ids distinct when a notebook shows several views.
    prefix = "v" + hashlib.sha256(view.model_dump_json().encode()).hexdigest()[:10]
    hubs = set(measures.hubs)
    width = max((p[0] for p in positions.values()), default=0.0) + _PAD + _MARGIN
    height = max((p[1] for p in positions.values()), default=0.0) + _PAD + _MARGIN
    radius = {e.id: 6.0 + 2.5 * math.sqrt(e.degree) for e in view.entities}

    parts = [
        f'<svg viewBox="0 0 {width:.0f} {height:.0f}" width="100%" style="max-width:{width:.0f}px;height:auto" '
        f'role="img" aria-label="{escape(view.describe())}" font-family="{escape(_FONT)}">',
        "<defs>",
        _marker(f"{prefix}-arrow", 10, "#607d8b"),
        _marker(f"{prefix}-arrow-bold", 12, "#263238"),
        "</defs>",
        '<g class="edges">',
    ]
    for relationship in sorted(view.relationships, key=lambda r: r.id):
        edge = measures.edges[relationship.id]
        (x1, y1), (x2, y2) = positions[relationship.source_id], positions[relationship.target_id]
        length = math.hypot(x2 - x1, y2 - y1) or 1.0
        # Stop the line at the target's circle so the arrowhead stays visible.
        end = radius[relationship.target_id] + 2.0
        x2, y2 = x2 - (x2 - x1) * end / length, y2 - (y2 - y1) * end / length
        stroke = "#263238" if edge.bold else "#90a4ae"
        marker = f' marker-end="url(#{prefix}-arrow{"-bold" if edge.bold else ""})"' if edge.directed else ""
        estimated = " estimated" if relationship.pmi_estimated else ""
        tip = (
            f"{names[relationship.source_id]} {relationship.type or ''} {names[relationship.target_id]}\n"
            f"weight {_fmt(edge.weight)} (PMI {relationship.pmi:.2f}{estimated}, "
            f"mean strength {edge.strength:.1f}, {relationship.source_chunks} source chunks)"
        )
        parts.append(
            f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{stroke}" '
            f'stroke-width="{0.6 + 0.4 * edge.weight:.2f}"{marker}><title>{escape(tip)}</title></line>'
        )
    parts += ["</g>", '<g class="nodes">']
    for entity in sorted(view.entities, key=lambda e: e.id):
        x, y = positions[entity.id]
        hub = entity.id in hubs
        fill, stroke = ("#ffd54f", "#e65100") if hub else ("#bbdefb", "#1565c0")
        tip = f"{names[entity.id]} ({entity.type or 'UNKNOWN'})\ndegree {entity.degree}, {entity.mentions} mentions"
        if entity.aliases:
            tip += f"\nalso named: {', '.join(entity.aliases)}"
        label = names[entity.id] if len(names[entity.id]) <= 40 else names[entity.id][:39] + "…"
        parts.append(
            f"<g><title>{escape(tip)}</title>"
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{radius[entity.id]:.1f}" fill="{fill}" stroke="{stroke}" '
            f'stroke-width="{3 if hub else 1.5}"/>'
            f'<text x="{x:.1f}" y="{y + radius[entity.id] + 13:.1f}" text-anchor="middle" font-size="12" '
            f'font-weight="{"bold" if hub else "normal"}" fill="#212121" stroke="#fff" stroke-width="3" '
            f'paint-order="stroke">{escape(label)}</text></g>'
        )
    parts += ["</g>", "</svg>"]
    return "\n".join(parts)


def render_fragment(view: GraphView, measures: ViewMeasures | None = None) -> str:
    """A `<div>` with a caption, a legend and the SVG: embeddable in a notebook or another page."""
    measures = measures or measure(view)
    notes = [escape(view.describe(with_cut=False))]
    if view.community_title:
        notes.insert(0, f"<strong>{escape(view.community_title)}</strong>")
    if view.truncated:
        notes.append(
            f"<strong>Cut:</strong> only the {view.max_nodes} highest-degree of "
            f"{view.entities_total} entities are shown."
        )
    legend = (
        "Edge weight = 1 + 9 × (0.6 × PMI<sub>norm</sub> + 0.4 × strength<sub>norm</sub>), "
        "each min-max normalised over the shown edges; "
        "thick dark edges: weight above 7; gold nodes: high-degree entities; hover for details."
    )
    return (
        f'<div class="driftrag-graph" style="font-family:{escape(_FONT)};color:#212121">'
        f'<p style="margin:4px 0">{" · ".join(notes)}</p>'
        f'<p style="margin:4px 0;font-size:12px;color:#555">{legend}</p>'
        f"{render_svg(view, measures)}</div>"
    )


def render_html(view: GraphView, measures: ViewMeasures | None = None) -> str:
    """A complete, self-contained HTML page (UTF-8, no external resource)."""
    scope = f"community {view.community_id}" if view.community_id else "graph"
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{escape(f'driftrag {scope} of kb {view.kb}')}</title>\n</head>\n"
        f'<body style="margin:16px">\n{render_fragment(view, measures)}\n</body>\n</html>\n'
    )


class HtmlView:
    """A rendered view that notebooks display inline; `save(path)` writes the full page."""

    def __init__(self, view: GraphView, measures: ViewMeasures | None = None) -> None:
        self.view = view
        self.measures = measures or measure(view)

    def _repr_html_(self) -> str:
        return render_fragment(self.view, self.measures)

    def __repr__(self) -> str:
        # The text form a saved notebook keeps beside the picture (and what a terminal prints).
        return f"HtmlView({self.view.describe()})"

    def to_html(self) -> str:
        return render_html(self.view, self.measures)

    def save(self, path: str | Path) -> Path:
        target = Path(path)
        target.write_text(self.to_html(), encoding="utf-8")
        return target
