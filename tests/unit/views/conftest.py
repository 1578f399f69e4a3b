"""A small hand-computed graph view shared by the renderer tests.

Relationships (both parts min-max over the shown edges: pmi spans -1..3, strength = weight / listed
source chunks spans 1..10):

    id  ends     type        pmi   weight/listed  pmi_norm  strength_norm  1 + 9·(0.6·p + 0.4·s)
    r1  A -> B   KNOWS       3.0   18 / 2 = 9     1.0       8/9            9.6   bold
    r2  A -> C   KNOWS       1.0    5 / 1 = 5     0.5       4/9            5.3
    r3  A -- D   RELATED_TO -1.0    1 / 1 = 1     0.0       0              1.0
    r4  B -> C   KNOWS       1.0   37 / 4 = 9.25  0.5       8.25/9         7.0   not bold (7 is not above 7)
    r5  E -> F   KNOWS       1.0   19 / 2 = 9.5   0.5       8.5/9          7.1   bold
    r6  E -- G   RELATED_TO  3.0   20 / 2 = 10    1.0       1              10.0  bold

Components: {A, B, C, D}, {E, F, G}; H has no relationship. Degrees: A 3, B 2, C 2, E 2, D/F/G 1, H 0,
so A (the only entity with degree >= 3) is the one hub.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from driftrag.models.views import GraphView, ViewEntity, ViewRelationship

EXPECTED_WEIGHTS = {"r1": 9.6, "r2": 5.3, "r3": 1.0, "r4": 7.0, "r5": 7.1, "r6": 10.0}


def _entity(key: str, name: str | None = None, degree: int = 1, mentions: int = 2) -> ViewEntity:
    return ViewEntity(id=f"entity-{key}", name=name or key, type="PERSON", degree=degree, mentions=mentions)


def _relationship(
    key: str, source: str, target: str, *, pmi: float, weight: float, listed: int, type_: str = "KNOWS"
) -> ViewRelationship:
    return ViewRelationship(
        id=f"relationship-{key}",
        source_id=f"entity-{source}",
        target_id=f"entity-{target}",
        type=type_,
        weight=weight,
        pmi=pmi,
        pmi_estimated=False,
        source_chunks=listed,
        listed_source_chunks=listed,
    )


@pytest.fixture
def expected_weights() -> dict[str, float]:
    """The view weight of each relationship of `sample_view`, by key (see the table above)."""
    return dict(EXPECTED_WEIGHTS)


@pytest.fixture
def make_entity() -> Callable[..., ViewEntity]:
    return _entity


@pytest.fixture
def make_relationship() -> Callable[..., ViewRelationship]:
    return _relationship


@pytest.fixture
def sample_view() -> GraphView:
    degrees = {"A": 3, "B": 2, "C": 2, "D": 1, "E": 2, "F": 1, "G": 1, "H": 0}
    relationships = [
        _relationship("r1", "A", "B", pmi=3.0, weight=18, listed=2),
        _relationship("r2", "A", "C", pmi=1.0, weight=5, listed=1),
        _relationship("r3", "A", "D", pmi=-1.0, weight=1, listed=1, type_="RELATED_TO"),
        _relationship("r4", "B", "C", pmi=1.0, weight=37, listed=4),
        _relationship("r5", "E", "F", pmi=1.0, weight=19, listed=2),
        _relationship("r6", "E", "G", pmi=3.0, weight=20, listed=2, type_="RELATED_TO"),
    ]
    return GraphView(
        kb="sample",
        entities=[_entity(key, degree=degree) for key, degree in degrees.items()],
        relationships=relationships,
        entities_total=8,
        relationships_total=6,
    )
