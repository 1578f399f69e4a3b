import itertools
import random

from driftrag.ingestion.communities import (
    community_edges,
    community_id,
    detect_communities,
    finest_community_by_entity,
)
from driftrag.ingestion.merge import relationship_id
from driftrag.models.graph import MergedEntity, MergedRelationship


def _graph(groups=4, size=8, seed=7):
    """Dense groups of `size` entities linked by single bridges, plus one isolated entity."""
    rnd = random.Random(seed)
    ids = [f"entity-{g:02d}{i:02d}" for g in range(groups) for i in range(size)]
    entities = [MergedEntity(id=i, name=i, normalised_name=i, source_chunk_ids=[f"chunk-{i[-4:-2]}"]) for i in ids]
    entities.append(MergedEntity(id="entity-lonely", name="lonely", normalised_name="lonely"))
    pairs = []
    for g in range(groups):
        members = ids[g * size : (g + 1) * size]
        pairs += [(a, b) for k, a in enumerate(members) for b in members[k + 1 :] if rnd.random() < 0.6]
        pairs += list(itertools.pairwise(members))
    pairs += [(ids[g * size], ids[(g + 1) * size]) for g in range(groups - 1)]
    rels = [
        MergedRelationship(
            id=relationship_id(a, b, "RELATED_TO"), source_id=a, target_id=b, weight=float(rnd.randint(1, 10))
        )
        for a, b in sorted(set(pairs))
    ]
    return entities, rels


def test_same_graph_same_seed_same_communities():
    entities, rels = _graph()
    first = detect_communities(entities, rels, max_cluster_size=5, seed=42)
    again = detect_communities(entities[::-1], rels[::-1], max_cluster_size=5, seed=42)
    assert first == again
    assert first
    assert all(c.id == community_id(c.level, min(c.entity_ids)) for c in first)


def test_a_community_keeps_its_id_when_other_parts_of_the_graph_change():
    """Ids come from each community's own members: a delete elsewhere in the graph (here a whole group
    left without relationships, so its entities drop out) renumbers nothing, and the stored reports of
    the communities drawn again as they were are kept (ids ranked by membership all shifted)."""
    entities, rels = _graph(groups=3, size=4)
    bridges = {(f"entity-{g:02d}00", f"entity-{g + 1:02d}00") for g in range(2)}
    separate = [r for r in rels if (r.source_id, r.target_id) not in bridges]
    before = detect_communities(entities, separate, max_cluster_size=10, seed=42)
    kept = [r for r in separate if not r.source_id.startswith("entity-00")]
    after = detect_communities(entities, kept, max_cluster_size=10, seed=42)

    assert {tuple(c.entity_ids) for c in before} == {
        tuple(f"entity-{g:02d}{i:02d}" for i in range(4)) for g in range(3)
    }
    untouched = [c for c in before if "entity-0000" not in c.entity_ids]
    assert sorted((c.id, c.entity_ids) for c in after) == sorted((c.id, c.entity_ids) for c in untouched)


def test_hierarchy_is_consistent():
    entities, rels = _graph()
    communities = detect_communities(entities, rels, max_cluster_size=5, seed=42)
    by_id = {c.id: c for c in communities}
    assert max(c.level for c in communities) >= 1, "groups of 8 must be split below 5"
    for community in communities:
        if community.parent_id is not None:
            parent = by_id[community.parent_id]
            assert community.id in parent.child_ids and parent.level == community.level - 1
            assert set(community.entity_ids) <= set(parent.entity_ids)
        if community.child_ids:
            union = set().union(*(by_id[c].entity_ids for c in community.child_ids))
            assert union == set(community.entity_ids)
        else:
            assert len(community.entity_ids) <= 5, "max cluster size respected at the finest level"
    level0 = [c for c in communities if c.level == 0]
    assert all(c.parent_id is None for c in level0)
    covered = [e for c in level0 for e in c.entity_ids]
    assert len(covered) == len(set(covered)) == len(entities) - 1


def test_every_linked_entity_in_exactly_one_finest_community_and_isolated_left_out():
    entities, rels = _graph()
    communities = detect_communities(entities, rels, max_cluster_size=5, seed=42)
    leaves = [c for c in communities if not c.child_ids]
    memberships = [e for c in leaves for e in c.entity_ids]
    assert len(memberships) == len(set(memberships))
    finest = finest_community_by_entity(communities)
    assert set(finest) == {e.id for e in entities} - {"entity-lonely"}
    assert all(finest[e] in {c.id for c in leaves} for e in finest)


def test_relationship_and_chunk_ids_follow_members():
    entities, rels = _graph()
    chunks = {e.id: set(e.source_chunk_ids) for e in entities}
    for community in detect_communities(entities, rels, max_cluster_size=5, seed=42):
        members = set(community.entity_ids)
        inside = sorted(r.id for r in rels if r.source_id in members and r.target_id in members)
        assert community.relationship_ids == inside
        assert community.chunk_ids == sorted(set().union(*(chunks[e] for e in members)))


def test_edges_are_undirected_and_sorted():
    a, b = "entity-a", "entity-b"
    rels = [
        MergedRelationship(id="relationship-1", source_id=b, target_id=a, weight=2),
        MergedRelationship(id="relationship-2", source_id=a, target_id=b, type="FOLLOWS", weight=3),
        MergedRelationship(id="relationship-3", source_id=a, target_id=a, weight=3),
        MergedRelationship(id="relationship-4", source_id=a, target_id="entity-gone", weight=3),
    ]
    assert community_edges({a, b}, rels) == [(a, b, 5.0)]


def test_no_edges_no_communities():
    entities, _ = _graph()
    assert detect_communities(entities, []) == []
