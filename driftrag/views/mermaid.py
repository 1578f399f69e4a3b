"""Mermaid `graph TD` of a graph view.

- Node ids are `n1`, `n2`, … in entity-id order: never raw names, never a Mermaid keyword.
- Labels are quoted, and every character that means something to Mermaid (quotes, brackets, braces,
  `|`, `#`, `%`, `;`, `<`, `>`, `&`, backticks) is written as a Mermaid entity code (`#quot;`,
  `#35;`, …); newlines and other control characters become spaces; long names are shortened.
- Edges carry their 1–10 weight (see `driftrag.views.measures`) as label: weights above 7 are thick
  (`==>`, or `===` for the symmetric RELATED_TO), the others normal (`-->` or `---`).
- High-degree entities get the `hub` class. Each connected component is a `subgraph`; entities
  without a shown relationship share one last subgraph.
- The output is deterministic: same view, same text.
"""

from __future__ import annotations

from driftrag.models.views import GraphView, ViewRelationship
from driftrag.views.measures import ViewMeasures, measure

MAX_LABEL_CHARS = 60
HUB_STYLE = "fill:#ffd54f,stroke:#e65100,stroke-width:3px,color:#000"

# Decimal entity codes (Mermaid decodes `#<number>;` and a few names such as `#quot;`).
_ESCAPES = {
    '"': "#quot;",
    "#": "#35;",
    "%": "#37;",
    "&": "#38;",
    "'": "#39;",
    "(": "#40;",
    ")": "#41;",
    ";": "#59;",
    "<": "#lt;",
    ">": "#gt;",
    "[": "#91;",
    "\\": "#92;",
    "]": "#93;",
    "`": "#96;",
    "{": "#123;",
    "|": "#124;",
    "}": "#125;",
}


def escape_label(text: str, *, limit: int = MAX_LABEL_CHARS) -> str:
    """Text safe inside a quoted Mermaid label: special characters as entity codes, one line."""
    flat = " ".join("".join(" " if ch.isspace() or not ch.isprintable() else ch for ch in text).split())
    if len(flat) > limit:
        flat = flat[: limit - 1].rstrip() + "…"
    return "".join(_ESCAPES.get(ch, ch) for ch in flat)


def _entities(count: int) -> str:
    return f"{count} entity" if count == 1 else f"{count} entities"


def node_ids(view: GraphView) -> dict[str, str]:
    """Entity id → Mermaid node id (`n1`, `n2`, … in entity-id order)."""
    return {entity_id: f"n{i}" for i, entity_id in enumerate(sorted(e.id for e in view.entities), start=1)}


def render_mermaid(view: GraphView, measures: ViewMeasures | None = None) -> str:
    """The Mermaid `graph TD` text of `view` (ends with a newline)."""
    measures = measures or measure(view)
    ids = node_ids(view)
    names = {e.id: e.name.strip() or e.id for e in view.entities}
    lines = ["graph TD", f"  %% driftrag graph view: {view.describe()}"]
    lines.append("  %% weight = 1 + 9 x (0.6 x PMI + 0.4 x mean strength, both min-max over shown edges); above 7 bold")
    if view.truncated:
        lines.append(f"  %% cut: only the {view.max_nodes} highest-degree of {view.entities_total} entities are shown")
    if not view.entities:
        lines.append("  %% nothing to show: no entity with an enabled source chunk")
        return "\n".join(lines) + "\n"

    by_component: dict[int, list[ViewRelationship]] = {}
    component_of = {entity_id: i for i, members in enumerate(measures.components) for entity_id in members}
    for relationship in view.relationships:
        by_component.setdefault(component_of[relationship.source_id], []).append(relationship)

    blocks = [
        (f"Component {i + 1}: {_entities(len(members))}", members) for i, members in enumerate(measures.components)
    ]
    if measures.isolated:
        blocks.append((f"Without relationships: {_entities(len(measures.isolated))}", measures.isolated))
    for number, (title, members) in enumerate(blocks, start=1):
        lines.append(f'  subgraph g{number}["{escape_label(title)}"]')
        lines.extend(f'    {ids[entity_id]}["{escape_label(names[entity_id])}"]' for entity_id in members)
        relationships = by_component.get(number - 1, []) if number <= len(measures.components) else []
        for relationship in sorted(
            relationships, key=lambda r: (int(ids[r.source_id][1:]), int(ids[r.target_id][1:]), r.id)
        ):
            edge = measures.edges[relationship.id]
            arrow = ("==>" if edge.directed else "===") if edge.bold else ("-->" if edge.directed else "---")
            lines.append(
                f'    {ids[relationship.source_id]} {arrow}|"{edge.weight:.1f}"| {ids[relationship.target_id]}'
            )
        lines.append("  end")

    lines.append(f"  classDef hub {HUB_STYLE}")
    if measures.hubs:
        lines.append("  class " + ",".join(ids[entity_id] for entity_id in measures.hubs) + " hub")
    return "\n".join(lines) + "\n"


class MermaidView:
    """Mermaid text that notebooks render: JupyterLab 4.1+ draws ```mermaid blocks in Markdown output."""

    def __init__(self, view: GraphView, measures: ViewMeasures | None = None) -> None:
        self.text = render_mermaid(view, measures)

    def __str__(self) -> str:
        return self.text

    __repr__ = __str__  # a saved notebook's text form: the Mermaid source, not an object address

    def _repr_markdown_(self) -> str:
        return f"```mermaid\n{self.text}```\n"
