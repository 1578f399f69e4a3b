"""GraphML export of a graph view (for Gephi, yEd, Cytoscape, networkx).

A directed graph that may hold several edges between two nodes: node ids are entity ids, edge ids
are relationship ids. Attributes, each declared with its GraphML type:

- Graph: kb, community_id/community_level/community_title (community views), entities_total,
  relationships_total, truncated, max_nodes (0 = no cap).
- Nodes: name, type, degree, mentions, hub, component (1-based; 0 = no shown relationship).
- Edges: type, weight (1–10 view weight), bold, symmetric (RELATED_TO), pmi, pmi_estimated,
  pmi_norm, strength (mean per-chunk), strength_norm, stored_weight (summed strengths),
  source_chunks, listed_source_chunks.

The document is written with xml.etree rather than networkx's writer, which spells booleans `True`
where GraphML (XML Schema) wants `true`; `to_networkx` gives the same data as a `MultiDiGraph`.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from driftrag.models.views import GraphView
from driftrag.views.measures import ViewMeasures, measure

GRAPHML_NS = "http://graphml.graphdrawing.org/xmlns"

# Characters XML 1.0 cannot carry at all, even escaped; names from a model may contain them.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")

Attributes = dict[str, Any]


def _xml_text(text: str) -> str:
    return _NOT_XML.sub(" ", text)


def _graph_attributes(view: GraphView) -> Attributes:
    attributes: Attributes = {"kb": view.kb}
    if view.community_id is not None:
        attributes["community_id"] = view.community_id
        if view.community_level is not None:
            attributes["community_level"] = view.community_level
        if view.community_title is not None:
            attributes["community_title"] = _xml_text(view.community_title)
    attributes |= {
        "entities_total": view.entities_total,
        "relationships_total": view.relationships_total,
        "truncated": view.truncated,
        "max_nodes": view.max_nodes or 0,
    }
    return attributes


def _nodes(view: GraphView, measures: ViewMeasures) -> list[tuple[str, Attributes]]:
    component = {entity_id: i for i, members in enumerate(measures.components, start=1) for entity_id in members}
    hubs = set(measures.hubs)
    return [
        (
            entity.id,
            {
                "name": _xml_text(entity.name),
                "type": _xml_text(entity.type or ""),
                "degree": entity.degree,
                "mentions": entity.mentions,
                "hub": entity.id in hubs,
                "component": component.get(entity.id, 0),
            },
        )
        for entity in sorted(view.entities, key=lambda e: e.id)
    ]


def _edges(view: GraphView, measures: ViewMeasures) -> list[tuple[str, str, str, Attributes]]:
    rows = []
    for relationship in sorted(view.relationships, key=lambda r: r.id):
        edge = measures.edges[relationship.id]
        attributes = {
            "type": _xml_text(relationship.type or ""),
            "weight": edge.weight,
            "bold": edge.bold,
            "symmetric": not edge.directed,
            "pmi": relationship.pmi,
            "pmi_estimated": relationship.pmi_estimated,
            "pmi_norm": edge.pmi_norm,
            "strength": edge.strength,
            "strength_norm": edge.strength_norm,
            "stored_weight": relationship.weight,
            "source_chunks": relationship.source_chunks,
            "listed_source_chunks": relationship.listed_source_chunks,
        }
        rows.append((relationship.id, relationship.source_id, relationship.target_id, attributes))
    return rows


def to_networkx(view: GraphView, measures: ViewMeasures | None = None):
    """The view as a `networkx.MultiDiGraph` (edge keys are relationship ids), same attributes."""
    import networkx as nx

    measures = measures or measure(view)
    graph = nx.MultiDiGraph(**_graph_attributes(view))
    graph.add_nodes_from(_nodes(view, measures))
    for edge_id, source, target, attributes in _edges(view, measures):
        graph.add_edge(source, target, key=edge_id, **attributes)
    return graph


def _graphml_type(value: Any) -> str:
    if isinstance(value, bool):  # before int: bool is an int
        return "boolean"
    if isinstance(value, int):
        return "long"
    if isinstance(value, float):
        return "double"
    return "string"


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def render_graphml(view: GraphView, measures: ViewMeasures | None = None) -> str:
    """The GraphML document as text (UTF-8 XML declaration included)."""
    measures = measures or measure(view)
    graph_attributes = _graph_attributes(view)
    nodes = _nodes(view, measures)
    edges = _edges(view, measures)

    root = ET.Element("graphml", {"xmlns": GRAPHML_NS})
    declared: dict[tuple[str, str], str] = {}
    samples = (
        [("graph", graph_attributes)]
        + [("node", attributes) for _, attributes in nodes[:1]]
        + [("edge", attributes) for *_, attributes in edges[:1]]
    )
    for scope, attributes in samples:
        for name, value in attributes.items():
            key_id = f"{scope}_{name}"
            declared[(scope, name)] = key_id
            ET.SubElement(
                root, "key", {"id": key_id, "for": scope, "attr.name": name, "attr.type": _graphml_type(value)}
            )

    def add_data(element: ET.Element, scope: str, attributes: Attributes) -> None:
        for name, value in attributes.items():
            ET.SubElement(element, "data", {"key": declared[(scope, name)]}).text = _text(value)

    graph = ET.SubElement(root, "graph", {"id": "G", "edgedefault": "directed"})
    add_data(graph, "graph", graph_attributes)
    for node_id, attributes in nodes:
        add_data(ET.SubElement(graph, "node", {"id": node_id}), "node", attributes)
    for edge_id, source, target, attributes in edges:
        add_data(ET.SubElement(graph, "edge", {"id": edge_id, "source": source, "target": target}), "edge", attributes)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def write_graphml(view: GraphView, path: str | Path, measures: ViewMeasures | None = None) -> Path:
    target = Path(path)
    target.write_text(render_graphml(view, measures), encoding="utf-8")
    return target
