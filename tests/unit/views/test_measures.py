"""Edge weights, hubs and components: the definitions every renderer shares."""

from __future__ import annotations

import math

import pytest

from driftrag.models.views import GraphView
from driftrag.views.measures import connected_components, edge_weights, hub_ids, measure


def test_weights_follow_the_formula_on_hand_computed_edges(
    sample_view: GraphView, expected_weights: dict[str, float]
) -> None:
    weights = edge_weights(sample_view.relationships)

    assert {key.removeprefix("relationship-"): w.weight for key, w in weights.items()} == expected_weights
    r1 = weights["relationship-r1"]
    assert (r1.pmi_norm, r1.strength) == (1.0, 9.0)
    assert r1.strength_norm == pytest.approx(8 / 9)
    assert weights["relationship-r2"].pmi_norm == 0.5
    assert weights["relationship-r3"].pmi_norm == 0.0


def test_bold_means_a_rounded_weight_above_seven(sample_view: GraphView) -> None:
    weights = edge_weights(sample_view.relationships)

    assert sorted(key for key, w in weights.items() if w.bold) == [
        "relationship-r1",
        "relationship-r5",
        "relationship-r6",
    ]
    assert weights["relationship-r4"].weight == 7.0
    assert not weights["relationship-r4"].bold


def test_related_to_is_symmetric_and_other_types_directed(sample_view: GraphView) -> None:
    weights = edge_weights(sample_view.relationships)

    assert [key for key, w in weights.items() if not w.directed] == ["relationship-r3", "relationship-r6"]


def test_a_part_that_cannot_rank_the_edges_counts_as_the_middle(make_relationship) -> None:
    [edge] = edge_weights([make_relationship("x", "A", "B", pmi=2.5, weight=10, listed=1)]).values()
    assert (edge.pmi_norm, edge.strength_norm, edge.weight, edge.bold) == (0.5, 0.5, 5.5, False)

    same_pmi = edge_weights(
        [
            make_relationship("weak", "A", "B", pmi=1.0, weight=2, listed=1),
            make_relationship("strong", "A", "C", pmi=1.0, weight=8, listed=2),
        ]
    )
    # pmi_norm 0.5 for both; strengths 2 and 4 -> 0 and 1: 1 + 9 * 0.3 = 3.7, 1 + 9 * (0.3 + 0.4) = 7.3
    assert [(w.pmi_norm, w.strength_norm, w.weight) for w in same_pmi.values()] == [(0.5, 0.0, 3.7), (0.5, 1.0, 7.3)]
    assert edge_weights([]) == {}


def test_strength_is_relative_to_the_shown_edges_whatever_its_scale(make_relationship) -> None:
    # Offline graphs store a PMI-weighted count as weight, far below the LLM's 1..10 strengths.
    weights = edge_weights(
        [
            make_relationship("a", "A", "B", pmi=0.0, weight=0.1, listed=2),
            make_relationship("b", "A", "C", pmi=2.0, weight=0.6, listed=2),
            make_relationship("none", "A", "D", pmi=1.0, weight=0, listed=0),  # no listed source: strength 0
        ]
    )

    assert [w.strength for w in weights.values()] == [0.05, 0.3, 0.0]
    assert weights["relationship-b"].weight == 10.0 and weights["relationship-b"].bold
    assert weights["relationship-none"].strength_norm == 0.0


def test_hubs_are_the_top_tenth_by_degree_with_ties(make_entity) -> None:
    entities = [make_entity(f"e{i:02}", degree=1) for i in range(17)]
    entities += [make_entity("hub1", degree=9), make_entity("hub2", degree=9), make_entity("third", degree=8)]

    # 20 entities -> the top 2 by degree; a tie at the threshold would be included too.
    assert hub_ids(entities) == ["entity-hub1", "entity-hub2"]
    assert hub_ids([*entities, make_entity("tie", degree=9)]) == ["entity-hub1", "entity-hub2", "entity-tie"]


def test_small_degrees_are_never_hubs(make_entity) -> None:
    assert hub_ids([make_entity("a", degree=2), make_entity("b", degree=1), make_entity("c", degree=1)]) == []
    assert hub_ids([]) == []


def test_components_largest_first_and_isolated_apart(
    sample_view: GraphView, expected_weights: dict[str, float]
) -> None:
    components, isolated = connected_components(sample_view)

    assert components == [
        ["entity-A", "entity-B", "entity-C", "entity-D"],
        ["entity-E", "entity-F", "entity-G"],
    ]
    assert isolated == ["entity-H"]
    measures = measure(sample_view)
    assert measures.hubs == ["entity-A"]
    assert measures.components == components
    assert math.isclose(sum(w.weight for w in measures.edges.values()), sum(expected_weights.values()))
