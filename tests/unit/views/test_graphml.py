"""GraphML export: parses back with xml.etree, with the node, edge and graph attributes."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import networkx as nx

from driftrag.models.views import GraphView
from driftrag.views.graphml import render_graphml, to_networkx, write_graphml

NS = {"g": "http://graphml.graphdrawing.org/xmlns"}


def parse(text: str) -> tuple[ET.Element, dict[str, str]]:
    root = ET.fromstring(text.encode("utf-8"))
    keys = {key.get("id"): key.get("attr.name") for key in root.findall("g:key", NS)}
    return root, keys


def data(element: ET.Element, keys: dict[str, str]) -> dict[str, str]:
    return {keys[d.get("key")]: d.text or "" for d in element.findall("g:data", NS)}


def test_graphml_parses_back_with_its_attributes(sample_view: GraphView, expected_weights: dict[str, float]) -> None:
    root, keys = parse(render_graphml(sample_view))
    [graph] = root.findall("g:graph", NS)

    assert graph.get("edgedefault") == "directed"
    assert data(graph, keys) == {
        "kb": "sample",
        "entities_total": "8",
        "relationships_total": "6",
        "truncated": "false",
        "max_nodes": "0",
    }
    nodes = {node.get("id"): data(node, keys) for node in graph.findall("g:node", NS)}
    assert set(nodes) == {entity.id for entity in sample_view.entities}
    assert nodes["entity-A"] == {
        "name": "A",
        "type": "PERSON",
        "degree": "3",
        "mentions": "2",
        "hub": "true",
        "component": "1",
    }
    assert nodes["entity-H"]["component"] == "0"
    edges = {
        edge.get("id"): (edge.get("source"), edge.get("target"), data(edge, keys))
        for edge in graph.findall("g:edge", NS)
    }
    assert {key.removeprefix("relationship-"): float(e[2]["weight"]) for key, e in edges.items()} == expected_weights
    source, target, r1 = edges["relationship-r1"]
    assert (source, target) == ("entity-A", "entity-B")
    assert r1["bold"] == "true" and r1["symmetric"] == "false"
    assert (float(r1["pmi"]), float(r1["strength"]), float(r1["stored_weight"])) == (3.0, 9.0, 18.0)
    assert (r1["source_chunks"], r1["listed_source_chunks"], r1["pmi_estimated"]) == ("2", "2", "false")
    assert edges["relationship-r3"][2]["symmetric"] == "true"


def test_community_views_and_hostile_names_round_trip(make_entity, tmp_path: Path) -> None:
    view = GraphView(
        kb="k",
        community_id="community-1-3",
        community_level=1,
        community_title='The "Tea" <Party> & co',
        entities=[make_entity("a", name="Mad\x00Hatter\x0b <&> 愛"), make_entity("b", name="Dormouse")],
        entities_total=5,
        relationships_total=0,
        max_nodes=2,
        truncated=True,
    )

    path = write_graphml(view, tmp_path / "view.graphml")

    root, keys = parse(path.read_text(encoding="utf-8"))
    graph_data = data(root.find("g:graph", NS), keys)
    assert graph_data["community_id"] == "community-1-3"
    assert graph_data["community_title"] == 'The "Tea" <Party> & co'
    assert (graph_data["truncated"], graph_data["max_nodes"]) == ("true", "2")
    # Characters XML cannot carry become spaces; everything else survives.
    names = sorted(data(node, keys)["name"] for node in root.iter(f"{{{NS['g']}}}node"))
    assert names == ["Dormouse", "Mad Hatter  <&> 愛"]
    read = nx.read_graphml(path)
    assert read.graph["community_level"] == 1
    assert read.nodes["entity-b"]["name"] == "Dormouse"


def test_to_networkx_holds_the_same_data(sample_view: GraphView) -> None:
    graph = to_networkx(sample_view)

    assert isinstance(graph, nx.MultiDiGraph)
    assert graph.graph["kb"] == "sample"
    assert graph.nodes["entity-A"]["hub"] is True
    assert graph.edges["entity-E", "entity-G", "relationship-r6"]["weight"] == 10.0
    assert graph.number_of_edges() == len(sample_view.relationships)
