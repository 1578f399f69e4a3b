"""Mermaid output: weights, bold edges, hubs, one subgraph per component, safe labels, determinism."""

from __future__ import annotations

import random
import re

from driftrag.models.views import GraphView
from driftrag.views.mermaid import MermaidView, escape_label, render_mermaid

SAMPLE = """\
graph TD
  %% driftrag graph view: kb sample, the whole graph: 8 of 8 entities, 6 of 6 relationships
  %% weight = 1 + 9 x (0.6 x PMI + 0.4 x mean strength, both min-max over shown edges); above 7 bold
  subgraph g1["Component 1: 4 entities"]
    n1["A"]
    n2["B"]
    n3["C"]
    n4["D"]
    n1 ==>|"9.6"| n2
    n1 -->|"5.3"| n3
    n1 ---|"1.0"| n4
    n2 -->|"7.0"| n3
  end
  subgraph g2["Component 2: 3 entities"]
    n5["E"]
    n6["F"]
    n7["G"]
    n5 ==>|"7.1"| n6
    n5 ===|"10.0"| n7
  end
  subgraph g3["Without relationships: 1 entity"]
    n8["H"]
  end
  classDef hub fill:#ffd54f,stroke:#e65100,stroke-width:3px,color:#000
  class n1 hub
"""

# Every line the renderer may write; anything else would be a label escaping its quotes.
LINE = re.compile(
    r"graph TD"
    r"|  %% [^\n]*"
    r'|  subgraph g\d+\["[^"]*"\]'
    r'|    n\d+\["[^"]*"\]'
    r'|    n\d+ (-->|---|==>|===)\|"\d+\.\d"\| n\d+'
    r"|  end"
    r"|  classDef hub \S+"
    r"|  class n\d+(,n\d+)* hub"
)
NODE = re.compile(r'^    (n\d+)\["([^"]*)"\]$', re.MULTILINE)
EDGE = re.compile(r'^    (n\d+) (-->|---|==>|===)\|"([\d.]+)"\| (n\d+)$', re.MULTILINE)
CODE = re.compile(r"#(\w+);")
NAMED = {"quot": '"', "lt": "<", "gt": ">"}

HOSTILE = [
    'He said "hi"',
    "[bracket] (paren) {brace}",
    "A --> B",
    "`tick` and ``double``",
    "%% not a comment",
    "#35; looks like a code",
    "<script>alert(1)</script>",
    "line\nbreak\r\n%%{init: {'theme':'dark'}}%%",
    "Ünïcødé 愛 🐇",
    "end",
    "|pipe|; semi",
    "a & b \\ back",
    "class n1 hub",
    "graph LR",
]


def decode(label: str) -> str:
    return CODE.sub(lambda m: NAMED.get(m.group(1)) or chr(int(m.group(1))), label)


def assert_valid(text: str) -> None:
    assert text.endswith("\n")
    bad = [line for line in text.splitlines() if not LINE.fullmatch(line)]
    assert bad == []
    assert text.count("\n  end\n") == text.count("subgraph ")


def test_the_sample_renders_exactly(sample_view: GraphView) -> None:
    assert render_mermaid(sample_view) == SAMPLE
    assert_valid(SAMPLE)


def test_edges_are_labelled_with_their_weight_and_bold_above_seven(
    sample_view: GraphView, expected_weights: dict[str, float]
) -> None:
    edges = EDGE.findall(render_mermaid(sample_view))

    assert sorted(float(weight) for _, _, weight, _ in edges) == sorted(expected_weights.values())
    for _, arrow, weight, _ in edges:
        assert (arrow in {"==>", "==="}) == (float(weight) > 7), (arrow, weight)
    # RELATED_TO is symmetric (no arrowhead); typed relationships point from source to target.
    assert ("n1", "---", "1.0", "n4") in edges
    assert ("n5", "===", "10.0", "n7") in edges


def test_high_degree_entities_are_highlighted(sample_view: GraphView, make_entity, make_relationship) -> None:
    text = render_mermaid(sample_view)
    assert "  classDef hub fill:" in text
    assert re.findall(r"^  class (.*) hub$", text, re.MULTILINE) == ["n1"]

    star = GraphView(
        kb="star",
        entities=[make_entity("hub", degree=5)] + [make_entity(f"leaf{i}", degree=1) for i in range(5)],
        relationships=[make_relationship(f"r{i}", "hub", f"leaf{i}", pmi=1.0, weight=5, listed=1) for i in range(5)],
        entities_total=6,
        relationships_total=5,
    )
    star_text = render_mermaid(star)
    [hub_node] = [node for node, label in NODE.findall(star_text) if label == "hub"]
    assert f"  class {hub_node} hub" in star_text


def test_each_connected_component_is_a_subgraph(sample_view: GraphView) -> None:
    text = render_mermaid(sample_view)
    blocks = re.findall(r'^  subgraph (g\d+)\["([^"]*)"\]\n(.*?)^  end$', text, re.MULTILINE | re.DOTALL)
    names = {node: label for node, label in NODE.findall(text)}

    members = [sorted(names[node] for node in NODE_IN_BLOCK.findall(body)) for _, _, body in blocks]
    assert members == [["A", "B", "C", "D"], ["E", "F", "G"], ["H"]]
    assert [title for _, title, _ in blocks] == [
        "Component 1: 4 entities",
        "Component 2: 3 entities",
        "Without relationships: 1 entity",
    ]
    # Each edge sits in the block of its component.
    for _, _, body in blocks:
        block_nodes = set(NODE_IN_BLOCK.findall(body))
        for source, _, _, target in EDGE.findall(body):
            assert {source, target} <= block_nodes


NODE_IN_BLOCK = re.compile(r"^    (n\d+)\[", re.MULTILINE)


def test_hostile_names_stay_inside_their_labels(make_entity, make_relationship) -> None:
    entities = [make_entity(f"h{i:02}", name=name, degree=1) for i, name in enumerate(HOSTILE)]
    relationships = [
        make_relationship(f"r{i:02}", f"h{i:02}", f"h{i + 1:02}", pmi=float(i), weight=5, listed=1)
        for i in range(0, len(HOSTILE) - 1, 2)
    ]
    view = GraphView(
        kb="hostile",
        entities=entities,
        relationships=relationships,
        entities_total=len(entities),
        relationships_total=len(relationships),
    )

    text = render_mermaid(view)

    assert_valid(text)
    assert "%%{" not in text
    assert [line for line in text.splitlines() if line.startswith("  %%")] == text.splitlines()[1:3]
    labels = dict(NODE.findall(text))
    assert len(labels) == len(HOSTILE)
    for label in labels.values():
        assert not re.search(r"[\"\[\](){}|<>`%;&\\]", CODE.sub("", label)), label
    # Decoding the entity codes gives the name back, flattened to one line.
    assert sorted(decode(label) for label in labels.values()) == sorted(" ".join(name.split()) for name in HOSTILE)
    assert decode(labels["n8"]) == "line break %%{init: {'theme':'dark'}}%%"


def test_labels_are_one_line_and_shortened() -> None:
    assert escape_label("tab\there\x00nul") == "tab here nul"
    long = escape_label("x" * 200)
    assert len(long) == 60 and long.endswith("…")


def test_output_is_deterministic_whatever_the_input_order(sample_view: GraphView) -> None:
    shuffled = sample_view.model_copy(
        update={
            "entities": random.Random(1).sample(sample_view.entities, len(sample_view.entities)),
            "relationships": random.Random(2).sample(sample_view.relationships, len(sample_view.relationships)),
        }
    )
    assert render_mermaid(sample_view) == render_mermaid(sample_view) == render_mermaid(shuffled)


def test_a_cut_view_says_so(sample_view: GraphView) -> None:
    cut = sample_view.model_copy(update={"entities_total": 50, "max_nodes": 8, "truncated": True})

    text = render_mermaid(cut)

    assert_valid(text)
    assert "  %% cut: only the 8 highest-degree of 50 entities are shown" in text


def test_an_empty_view_is_still_a_diagram() -> None:
    text = render_mermaid(GraphView(kb="empty", entities_total=0, relationships_total=0))

    assert_valid(text)
    assert text.startswith("graph TD\n")
    assert "subgraph" not in text


def test_notebooks_get_a_mermaid_markdown_block(sample_view: GraphView) -> None:
    shown = MermaidView(sample_view)

    assert str(shown) == SAMPLE
    assert shown._repr_markdown_() == f"```mermaid\n{SAMPLE}```\n"
