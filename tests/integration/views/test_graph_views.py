"""Graph views read from the real Neo4j: kb and community scopes, the node cap, disabled sources, the CLI.

The graph, `write_graph` of tests/support/view_graph.py, is drawn in that module's docstring.
"""

from __future__ import annotations

import json
import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from driftrag.errors import CommunityNotFoundError, InvalidIdentifierError, KnowledgeBaseNotFoundError
from driftrag.models.views import GraphView
from driftrag.store import Neo4jStore
from driftrag.store.graph import GraphStore
from driftrag.store.graph_search import GraphSearchStore
from driftrag.store.views import GraphViewStore
from driftrag.views import render_mermaid
from tests.support.cli import run_cli_fail_fast
from tests.support.ports import free_port
from tests.support.view_graph import rid, write_graph


@pytest.fixture
async def graph_kb(store: Neo4jStore, kb: str, schema: None) -> str:
    await write_graph(store, kb)
    return kb


def by_name(view: GraphView) -> dict[str, dict]:
    return {e.name: e.model_dump() for e in view.entities}


def edges(view: GraphView) -> dict[tuple[str, str], dict]:
    names = {e.id: e.name for e in view.entities}
    return {(names[r.source_id], names[r.target_id]): r.model_dump() for r in view.relationships}


# --- reads ---------------------------------------------------------------------------------------


async def test_kb_view_keeps_only_entities_and_relationships_with_valid_sources(
    store: Neo4jStore, graph_kb: str
) -> None:
    view = await GraphViewStore(store).read_view(graph_kb)

    entities = by_name(view)
    assert sorted(entities) == ["Alice", "Cat", "Hatter", "Lonely", "Queen", "Rabbit"]
    assert {name: (e["degree"], e["mentions"]) for name, e in entities.items()} == {
        "Alice": (3, 3),
        "Rabbit": (2, 2),
        "Cat": (2, 1),
        "Queen": (2, 1),
        "Hatter": (1, 1),
        "Lonely": (0, 1),
    }
    assert entities["Alice"]["type"] == "CHARACTER"
    assert sorted(edges(view)) == [
        ("Alice", "Cat"),
        ("Alice", "Queen"),
        ("Alice", "Rabbit"),
        ("Queen", "Hatter"),
        ("Rabbit", "Cat"),
    ]
    assert (view.entities_total, view.relationships_total, view.truncated) == (6, 5, False)
    assert [e.id for e in view.entities] == sorted(e.id for e in view.entities)


async def test_pmi_falls_back_to_chunk_counts_when_not_stored(store: Neo4jStore, graph_kb: str) -> None:
    rels = edges(await GraphViewStore(store).read_view(graph_kb))

    # log2(n_ab * N / (n_a * n_b)) with N = 3 enabled chunks.
    assert rels["Rabbit", "Cat"]["pmi"] == pytest.approx(math.log2(2 * 3 / (2 * 1)))
    assert rels["Queen", "Hatter"]["pmi"] == pytest.approx(math.log2(3))
    assert rels["Alice", "Rabbit"]["pmi"] == pytest.approx(0.0)
    assert all(r["pmi_estimated"] for r in rels.values())
    rabbit_cat = rels["Rabbit", "Cat"]
    assert (rabbit_cat["weight"], rabbit_cat["source_chunks"], rabbit_cat["listed_source_chunks"]) == (12.0, 2, 2)
    assert rels["Queen", "Hatter"]["type"] == "RELATED_TO"


async def test_the_pmi_comes_from_the_stored_counts_and_the_kbs_n(store: Neo4jStore, kb: str, schema: None) -> None:
    await write_graph(store, kb, total_chunks=12)
    graph, views = GraphStore(store), GraphViewStore(store)

    rels = edges(await views.read_view(kb))

    # log2(n_ab * N / (n_a * n_b)) over the listed chunks as written, N = 12: not the estimate over
    # enabled chunks (N = 3), and the unlisted chunk of Cat - Hatter counts as listed.
    assert rels["Alice", "Rabbit"]["pmi"] == pytest.approx(math.log2(2 * 12 / (3 * 2)))
    assert rels["Queen", "Hatter"]["pmi"] == pytest.approx(math.log2(12))
    assert not any(r["pmi_estimated"] for r in rels.values())
    stored = {r.id: r.pmi for r in (await graph.entity_layer(kb)).relationships}
    assert stored[rid("Alice", "Rabbit")] == pytest.approx(math.log2(2 * 12 / (3 * 2)))
    assert stored[rid("Cat", "Hatter")] == pytest.approx(math.log2(1 * 12 / (1 * 1)))

    # A new N (a delete) changes every PMI by the same log2(N' / N), with no relationship rewritten.
    await graph.set_pmi_chunks(kb, 24)
    again = edges(await views.read_view(kb))
    assert again["Alice", "Rabbit"]["pmi"] == pytest.approx(rels["Alice", "Rabbit"]["pmi"] + 1.0)
    assert again["Queen", "Hatter"]["pmi"] == pytest.approx(rels["Queen", "Hatter"]["pmi"] + 1.0)
    layer = {r.id: r.pmi for r in (await graph.relationships_by_id(kb, list(stored)))}
    assert layer == pytest.approx({rel_id: value + 1.0 for rel_id, value in stored.items()})


async def test_community_view_holds_its_members_and_the_relationships_between_them(
    store: Neo4jStore, graph_kb: str
) -> None:
    views = GraphViewStore(store)

    top = await views.read_view(graph_kb, community_id="community-0-0")
    assert (top.community_id, top.community_level, top.community_title) == ("community-0-0", 0, "Alice and the Rabbit")
    assert sorted(by_name(top)) == ["Alice", "Cat", "Lonely", "Rabbit"]
    # Alice -> Queen leaves the community, so it is not shown and does not count in degrees.
    assert sorted(edges(top)) == [("Alice", "Cat"), ("Alice", "Rabbit"), ("Rabbit", "Cat")]
    assert {name: e["degree"] for name, e in by_name(top).items()} == {"Alice": 2, "Rabbit": 2, "Cat": 2, "Lonely": 0}

    child = await views.read_view(graph_kb, community_id="community-1-0")
    assert sorted(by_name(child)) == ["Cat", "Rabbit"] and child.community_title is None
    assert sorted(edges(child)) == [("Rabbit", "Cat")]

    other = await views.read_view(graph_kb, community_id="community-0-1")
    assert sorted(by_name(other)) == ["Hatter", "Queen"]  # Ghost has no valid source
    assert sorted(edges(other)) == [("Queen", "Hatter")]


async def test_the_cap_keeps_the_highest_degree_entities_and_says_so(store: Neo4jStore, graph_kb: str) -> None:
    view = await GraphViewStore(store).read_view(graph_kb, max_nodes=2)

    # Alice (degree 3), then Rabbit: degree 2 like Cat and Queen, but more mentions.
    assert sorted(by_name(view)) == ["Alice", "Rabbit"]
    assert sorted(edges(view)) == [("Alice", "Rabbit")]
    assert (view.truncated, view.max_nodes, view.entities_total, view.relationships_total) == (True, 2, 6, 5)
    assert by_name(view)["Alice"]["degree"] == 3  # degree in the scope, not in the cut picture
    assert "%% cut: only the 2 highest-degree of 6 entities are shown" in render_mermaid(view)

    uncut = await GraphViewStore(store).read_view(graph_kb, max_nodes=6)
    assert not uncut.truncated and len(uncut.entities) == 6


async def test_disabled_chunks_stop_vouching_for_entities_and_relationships(store: Neo4jStore, graph_kb: str) -> None:
    switches = GraphSearchStore(store)
    assert await switches.set_chunks_enabled(graph_kb, ["chunk-2a"], False) == 1

    view = await GraphViewStore(store).read_view(graph_kb)

    assert sorted(by_name(view)) == ["Alice", "Cat", "Lonely", "Rabbit"]
    assert by_name(view)["Alice"]["mentions"] == 2
    rels = edges(view)
    assert sorted(rels) == [("Alice", "Cat"), ("Alice", "Rabbit"), ("Rabbit", "Cat")]
    assert (rels["Rabbit", "Cat"]["source_chunks"], rels["Rabbit", "Cat"]["listed_source_chunks"]) == (1, 2)
    assert rels["Rabbit", "Cat"]["pmi"] == pytest.approx(0.0)  # log2(1 * 2 / (2 * 1)): N is now 2 chunks
    community = await GraphViewStore(store).read_view(graph_kb, community_id="community-0-1")
    assert community.entities == [] and community.entities_total == 0

    await switches.set_chunks_enabled(graph_kb, ["chunk-2a"], True)
    assert len((await GraphViewStore(store).read_view(graph_kb)).entities) == 6


async def test_a_kb_without_entities_gives_an_empty_view(store: Neo4jStore, kb: str, schema: None) -> None:
    await write_graph(store, kb, rels=[])
    await GraphStore(store).replace_entity_layer(kb, [], [], total_chunks=0)

    view = await GraphViewStore(store).read_view(kb)

    assert (view.entities, view.relationships, view.entities_total) == ([], [], 0)


async def test_unknown_or_malformed_ids_are_refused(store: Neo4jStore, graph_kb: str) -> None:
    views = GraphViewStore(store)

    with pytest.raises(KnowledgeBaseNotFoundError):
        await views.read_view(f"{graph_kb}-absent")
    with pytest.raises(CommunityNotFoundError):
        await views.read_view(graph_kb, community_id="community-9-9")
    for bad_kb in ("bad kb", "x' OR 1=1 //", ""):
        with pytest.raises(InvalidIdentifierError):
            await views.read_view(bad_kb)
    for bad_community in ("entity-abc", "community-$x", "community-0-0}) DETACH DELETE"):
        with pytest.raises(InvalidIdentifierError):
            await views.read_view(graph_kb, community_id=bad_community)
    with pytest.raises(ValueError):
        await views.read_view(graph_kb, max_nodes=0)


# --- CLI ---------------------------------------------------------------------------------------------


async def test_cli_prints_mermaid_and_writes_html_and_graphml(graph_kb: str, neo4j_uri: str, tmp_path: Path) -> None:
    kb = graph_kb
    mermaid = run_cli_fail_fast("graph", "--kb", kb, uri=neo4j_uri, home=tmp_path)
    assert mermaid.returncode == 0, mermaid.stderr
    assert mermaid.stdout.startswith("graph TD\n")
    for name in ("Alice", "Rabbit", "Cat", "Queen", "Hatter", "Lonely"):
        assert f'["{name}"]' in mermaid.stdout
    [alice_node] = re.findall(r'(n\d+)\["Alice"\]', mermaid.stdout)
    assert mermaid.stdout.endswith(f"  class {alice_node} hub\n")  # the only entity of degree >= 3

    cut = run_cli_fail_fast(
        "graph", "--kb", kb, "--community", "community-0-0", "--max-nodes", "1", uri=neo4j_uri, home=tmp_path
    )
    assert cut.returncode == 0, cut.stderr
    assert '["Alice"]' in cut.stdout and '["Rabbit"]' not in cut.stdout
    assert "%% cut:" in cut.stdout and "note:" in cut.stderr

    page = tmp_path / "graph.html"
    html = run_cli_fail_fast("graph", "--kb", kb, "--html", str(page), uri=neo4j_uri, home=tmp_path)
    assert html.returncode == 0, html.stderr
    text = page.read_text(encoding="utf-8")
    assert "http://" not in text and "https://" not in text and "<script" not in text
    assert all(f">{name}</text>" in text for name in ("Alice", "Rabbit", "Lonely"))

    export = tmp_path / "graph.graphml"
    graphml = run_cli_fail_fast("graph", "--kb", kb, "--graphml", str(export), uri=neo4j_uri, home=tmp_path)
    assert graphml.returncode == 0, graphml.stderr
    ns = {"g": "http://graphml.graphdrawing.org/xmlns"}
    root = ET.parse(export).getroot()
    assert len(root.findall("g:graph/g:node", ns)) == 6 and len(root.findall("g:graph/g:edge", ns)) == 5

    as_json = run_cli_fail_fast(
        "graph", "--kb", kb, "--community", "community-1-0", "--json", uri=neo4j_uri, home=tmp_path
    )
    assert as_json.returncode == 0, as_json.stderr
    report = json.loads(as_json.stdout)
    assert sorted(e["name"] for e in report["view"]["entities"]) == ["Cat", "Rabbit"]
    [weight] = report["measures"]["edges"].values()
    assert 1 <= weight["weight"] <= 10


async def test_cli_errors_have_meaningful_exit_codes(graph_kb: str, neo4j_uri: str, tmp_path: Path) -> None:
    unknown_kb = run_cli_fail_fast("graph", "--kb", f"{graph_kb}-absent", uri=neo4j_uri, home=tmp_path)
    assert unknown_kb.returncode == 1 and "does not exist" in unknown_kb.stderr
    unknown_community = run_cli_fail_fast(
        "graph", "--kb", graph_kb, "--community", "community-9-9", uri=neo4j_uri, home=tmp_path
    )
    assert unknown_community.returncode == 1 and "community-9-9" in unknown_community.stderr
    assert "Traceback" not in unknown_kb.stderr + unknown_community.stderr

    for usage in (
        ["--kb", "bad kb"],
        ["--kb", graph_kb, "--community", "entity-x"],
        ["--kb", graph_kb, "--html", "a.html", "--graphml", "b.graphml"],
        ["--kb", graph_kb, "--html", str(tmp_path / "missing" / "a.html")],
    ):
        result = run_cli_fail_fast("graph", *usage, uri=neo4j_uri, home=tmp_path)
        assert result.returncode == 2, (usage, result.stderr)

    unreachable = run_cli_fail_fast("graph", "--kb", graph_kb, uri=f"bolt://127.0.0.1:{free_port()}", home=tmp_path)
    assert unreachable.returncode == 3 and unreachable.stdout == ""
