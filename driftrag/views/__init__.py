"""Graph views: Mermaid, self-contained HTML (inline SVG) and GraphML renderings of a `GraphView`.

Read a view with `DriftRAG.graph_view(kb, community_id=…, max_nodes=…)`;
everything here is pure (no Neo4j, no network). Weights, bold edges, hubs and components are defined
once in `driftrag.views.measures` and drawn the same way by every renderer.
"""

from driftrag.views.graphml import render_graphml, to_networkx, write_graphml
from driftrag.views.html import HtmlView, render_fragment, render_html, render_svg
from driftrag.views.measures import EdgeWeight, GraphViewReport, ViewMeasures, edge_weights, hub_ids, measure
from driftrag.views.mermaid import MermaidView, escape_label, render_mermaid

__all__ = [
    "EdgeWeight",
    "GraphViewReport",
    "HtmlView",
    "MermaidView",
    "ViewMeasures",
    "edge_weights",
    "escape_label",
    "hub_ids",
    "measure",
    "render_fragment",
    "render_graphml",
    "render_html",
    "render_mermaid",
    "render_svg",
    "to_networkx",
    "write_graphml",
]
