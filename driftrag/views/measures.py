"""What every graph view draws the same way: edge weights on 1–10, bold edges, hubs, connected components.

Edge weight (1–10), computed over the relationships *shown* in the view:

    pmi_norm      = (pmi − min pmi) / (max pmi − min pmi)              min-max over the shown relationships
    strength      = weight / listed source chunks                       the mean per-chunk strength: the
                    LLM path stores the sum of one strength (1..10) per source chunk
    strength_norm = (strength − min strength) / (max − min strength)   min-max over the shown relationships
    combined      = 0.6 · pmi_norm + 0.4 · strength_norm                 in [0, 1]
    view weight   = round(1 + 9 · combined, 1)                           in [1, 10], one decimal

When every shown relationship has the same PMI (or the same strength), that part is 0.5 for all of
them: it cannot rank them. Both parts are min-max because neither has a scale shared by every graph:
PMI depends on corpus size, and the offline mode stores a PMI-weighted co-occurrence count as `weight`
instead of summed 1..10 strengths. So the weights rank the edges *of the view* (the strongest shown
edge is near 10); they are not comparable across views. An edge is *bold* when its (rounded) view
weight is above 7, so the label a reader sees always agrees with the line style.

Hubs: the top 10 % of shown entities by degree (at least one entity; ties included) among those with
degree ≥ 3, so a small chain never has "hubs". Degree is the entity's degree in the view's scope.

Components: connected components of the shown graph (relationships taken as undirected), largest
first, ties by their smallest entity id. Entities without any shown relationship are listed apart.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from driftrag.models.graph import GENERIC_RELATIONSHIP_TYPE
from driftrag.models.views import GraphView, ViewEntity, ViewRelationship

PMI_SHARE = 0.6
STRENGTH_SHARE = 0.4
BOLD_ABOVE = 7.0
HUB_FRACTION = 0.10
HUB_MIN_DEGREE = 3


class EdgeWeight(BaseModel):
    model_config = ConfigDict(extra="forbid")

    relationship_id: str
    pmi_norm: float = Field(ge=0, le=1)
    strength: float = Field(ge=0)
    strength_norm: float = Field(ge=0, le=1)
    weight: float = Field(ge=1, le=10, description="1 + 9 · (0.6 · pmi_norm + 0.4 · strength_norm), one decimal.")
    bold: bool
    directed: bool = Field(description="False for the symmetric generic type RELATED_TO.")


class ViewMeasures(BaseModel):
    """Everything a renderer needs besides the view itself; deterministic for a given view."""

    model_config = ConfigDict(extra="forbid")

    edges: dict[str, EdgeWeight] = Field(default_factory=dict, description="By relationship id.")
    hubs: list[str] = Field(default_factory=list, description="Entity ids, sorted.")
    components: list[list[str]] = Field(
        default_factory=list, description="Entity ids of each component with relationships, sorted; largest first."
    )
    isolated: list[str] = Field(default_factory=list, description="Entities without a shown relationship, sorted.")


class GraphViewReport(BaseModel):
    """A view with its measures, as `driftrag graph --json` prints it."""

    model_config = ConfigDict(extra="forbid")

    view: GraphView
    measures: ViewMeasures


def _min_max(values: dict[str, float]) -> dict[str, float]:
    low, high = min(values.values()), max(values.values())
    return {key: (value - low) / (high - low) if high > low else 0.5 for key, value in values.items()}


def edge_weights(relationships: Sequence[ViewRelationship]) -> dict[str, EdgeWeight]:
    """The 1–10 weight of each relationship, normalised over `relationships` (see the module docstring)."""
    if not relationships:
        return {}
    pmi_norms = _min_max({r.id: r.pmi for r in relationships})
    strength_norms = _min_max({r.id: r.mean_strength for r in relationships})
    weights = {}
    for relationship in relationships:
        pmi_norm, strength_norm = pmi_norms[relationship.id], strength_norms[relationship.id]
        weight = round(1.0 + 9.0 * (PMI_SHARE * pmi_norm + STRENGTH_SHARE * strength_norm), 1)
        weights[relationship.id] = EdgeWeight(
            relationship_id=relationship.id,
            pmi_norm=pmi_norm,
            strength=relationship.mean_strength,
            strength_norm=strength_norm,
            weight=weight,
            bold=weight > BOLD_ABOVE,
            directed=relationship.type != GENERIC_RELATIONSHIP_TYPE,
        )
    return weights


def hub_ids(entities: Sequence[ViewEntity]) -> list[str]:
    """Ids of the high-degree entities (see the module docstring), sorted."""
    candidates = sorted((e for e in entities if e.degree >= HUB_MIN_DEGREE), key=lambda e: -e.degree)
    if not candidates:
        return []
    wanted = max(1, math.ceil(HUB_FRACTION * len(entities)))
    threshold = candidates[min(wanted, len(candidates)) - 1].degree
    return sorted(e.id for e in candidates if e.degree >= threshold)


def connected_components(view: GraphView) -> tuple[list[list[str]], list[str]]:
    """(components with at least one relationship, largest first; entities without any), ids sorted."""
    parent = {e.id: e.id for e in view.entities}

    def root(node: str) -> str:
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    linked: set[str] = set()
    for relationship in view.relationships:
        linked.update((relationship.source_id, relationship.target_id))
        a, b = root(relationship.source_id), root(relationship.target_id)
        if a != b:
            parent[max(a, b)] = min(a, b)
    groups: dict[str, list[str]] = {}
    for entity_id in sorted(linked):
        groups.setdefault(root(entity_id), []).append(entity_id)
    components = sorted(groups.values(), key=lambda ids: (-len(ids), ids[0]))
    isolated = sorted(e.id for e in view.entities if e.id not in linked)
    return components, isolated


def measure(view: GraphView) -> ViewMeasures:
    components, isolated = connected_components(view)
    return ViewMeasures(
        edges=edge_weights(view.relationships),
        hubs=hub_ids(view.entities),
        components=components,
        isolated=isolated,
    )
