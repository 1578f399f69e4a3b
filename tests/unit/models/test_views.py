"""The pure parts of the graph view: the mean strength and the view summary."""

from __future__ import annotations

from driftrag.models.views import GraphView, ViewRelationship


def test_mean_strength_divides_by_every_listed_source() -> None:
    relationship = ViewRelationship(
        id="relationship-x",
        source_id="entity-a",
        target_id="entity-b",
        weight=12,
        pmi=0.0,
        pmi_estimated=True,
        source_chunks=1,  # one of the two sources disabled: the stored weight still sums both strengths
        listed_source_chunks=2,
    )
    assert relationship.mean_strength == 6.0


def test_describe_says_what_was_cut() -> None:
    view = GraphView(kb="k", entities_total=40, relationships_total=90, max_nodes=10, truncated=True)

    assert view.describe() == (
        "kb k, the whole graph: 0 of 40 entities, 0 of 90 relationships; "
        "cut to the 10 highest-degree entities (max_nodes)"
    )
    assert (
        "community community-0-1"
        in GraphView(kb="k", community_id="community-0-1", entities_total=0, relationships_total=0).describe()
    )
