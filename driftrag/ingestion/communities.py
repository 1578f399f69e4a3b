"""Hierarchical community detection with Leiden (graspologic-native, as Microsoft GraphRAG v3 does).

Levels: level 0 is the coarsest partition of the graph; each level below splits the communities
that are still larger than `max_cluster_size` into sub-communities, so a higher level is finer. A
community that needs no split ends at its level and has no children. Each entity belongs to exactly
one *finest* community (see `finest_community_by_entity`); a community's `entity_ids` lists all its
members, so a parent's members are the union of its children's. Hierarchical Leiden leaves a dense
group unsplit when splitting it lowers modularity at the given resolution; such an oversized finest
community is split here by re-running Leiden on its own subgraph at doubled resolutions (bounded), so
finest communities respect `max_cluster_size` whenever any split exists.

Isolated entities (no relationship to another entity) are left out of every community, as in
Microsoft GraphRAG: a one-entity community would cost a report call and say nothing the entity's own
summary does not. The graph given to Leiden is undirected: weights of both directions of a pair and
of its several relationship types are summed; self-loops are ignored.

Determinism: edges are sorted, the seed is fixed, and ids are `community-<level>-<n>` with n the rank
of the community's sorted member list at its level, so the same graph always yields the same ids,
whatever numbering Leiden uses internally.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import graspologic_native as gn

from driftrag.models.graph import Community, MergedEntity, MergedRelationship
from driftrag.store.protocols import GraphStorage

DEFAULT_MAX_CLUSTER_SIZE = 10
DEFAULT_SEED = 0xDEECE66D
_MAX_RESOLUTION_DOUBLINGS = 10


def community_edges(entity_ids: set[str], relationships: Sequence[MergedRelationship]) -> list[tuple[str, str, float]]:
    """Sorted undirected edges between known entities, weights summed per pair."""
    weights: dict[tuple[str, str], float] = defaultdict(float)
    for rel in relationships:
        if rel.source_id == rel.target_id or not {rel.source_id, rel.target_id} <= entity_ids:
            continue
        pair = (min(rel.source_id, rel.target_id), max(rel.source_id, rel.target_id))
        # Leiden needs positive weights; a zero-weight relationship still links its ends.
        weights[pair] += max(rel.weight, 1e-6)
    return [(a, b, w) for (a, b), w in sorted(weights.items())]


@dataclass
class CommunityGraph:
    """What community detection reads of a kb, compact: undirected weighted edges for Leiden, each
    relationship's (id, source, target) to list a community's relationships, each entity's chunks."""

    edges: list[tuple[str, str, float]]
    relationships: list[tuple[str, str, str]] = field(default_factory=list)
    chunks_of: dict[str, list[str]] = field(default_factory=dict)


def detect_communities(
    entities: Sequence[MergedEntity],
    relationships: Sequence[MergedRelationship],
    *,
    max_cluster_size: int = DEFAULT_MAX_CLUSTER_SIZE,
    seed: int = DEFAULT_SEED,
    resolution: float = 1.0,
) -> list[Community]:
    """Communities of every level, sorted by (level, id); empty when the graph has no edges."""
    graph = CommunityGraph(
        edges=community_edges({e.id for e in entities}, relationships),
        relationships=[(r.id, r.source_id, r.target_id) for r in relationships],
        chunks_of={e.id: e.source_chunk_ids for e in entities},
    )
    return detect_graph_communities(graph, max_cluster_size=max_cluster_size, seed=seed, resolution=resolution)


async def read_community_graph(graph: GraphStorage, kb: str, *, page_size: int = 50_000) -> CommunityGraph:
    """The kb's graph as stored, read in keyset pages (a large kb is never one query result); edges
    are built as `community_edges` builds them from merged relationships."""
    weights: dict[tuple[str, str], float] = defaultdict(float)
    relationships: list[tuple[str, str, str]] = []
    chunks_of: dict[str, list[str]] = {}
    async for page in graph.entity_chunk_pages(kb, page_size):
        chunks_of.update(page)
    async for page in graph.relationship_edge_pages(kb, page_size):
        for rel_id, source, target, weight in page:
            relationships.append((rel_id, source, target))
            if source != target:
                weights[(min(source, target), max(source, target))] += max(weight, 1e-6)
    edges = [(a, b, w) for (a, b), w in sorted(weights.items())]
    return CommunityGraph(edges=edges, relationships=relationships, chunks_of=chunks_of)


def detect_graph_communities(
    graph: CommunityGraph,
    *,
    max_cluster_size: int = DEFAULT_MAX_CLUSTER_SIZE,
    seed: int = DEFAULT_SEED,
    resolution: float = 1.0,
) -> list[Community]:
    """`detect_communities` on a `CommunityGraph`."""
    edges = graph.edges
    if not edges:
        return []
    clusters = gn.hierarchical_leiden(
        edges, resolution=resolution, max_cluster_size=max_cluster_size, seed=seed, use_modularity=True
    )
    members: dict[int, set[str]] = defaultdict(set)
    level_of: dict[int, int] = {}
    parent_of: dict[int, int | None] = {}
    for row in clusters:
        members[row.cluster].add(row.node)
        level_of[row.cluster] = row.level
        parent_of[row.cluster] = row.parent_cluster
    _split_oversized(edges, members, level_of, parent_of, max_cluster_size, seed, resolution)

    # Stable names: rank of the sorted member list within its level.
    sorted_members = {cluster: sorted(nodes) for cluster, nodes in members.items()}
    by_level: dict[int, list[int]] = defaultdict(list)
    for cluster, level in level_of.items():
        by_level[level].append(cluster)
    name: dict[int, str] = {}
    for level, level_clusters in by_level.items():
        for n, cluster in enumerate(sorted(level_clusters, key=sorted_members.__getitem__)):
            name[cluster] = f"community-{level}-{n}"

    children: dict[int, list[str]] = defaultdict(list)
    for cluster, parent in parent_of.items():
        if parent is not None:
            children[parent].append(name[cluster])
    relationship_ids = _relationships_by_community(graph.relationships, members, level_of, parent_of)
    communities = []
    for cluster, entity_ids in sorted_members.items():
        parent = parent_of[cluster]
        communities.append(
            Community(
                id=name[cluster],
                level=level_of[cluster],
                parent_id=name[parent] if parent is not None else None,
                child_ids=sorted(children[cluster]),
                entity_ids=entity_ids,
                relationship_ids=sorted(relationship_ids.get(cluster, ())),
                chunk_ids=sorted(set().union(*(graph.chunks_of.get(e, ()) for e in entity_ids))),
            )
        )
    return sorted(communities, key=lambda c: (c.level, c.id))


def _relationships_by_community(
    relationships: Sequence[tuple[str, str, str]],
    members: dict[int, set[str]],
    level_of: dict[int, int],
    parent_of: dict[int, int | None],
) -> dict[int, list[str]]:
    """The relationships with both ends in each community. An entity's communities form a chain (its
    finest one, then the parents up to level 0), so a relationship belongs to the common end of its
    two endpoints' chains: one walk per relationship, instead of one pass over every member's
    relationships per community and level."""
    finest: dict[str, int] = {}
    for cluster, nodes in members.items():
        for node in nodes:
            current = finest.get(node)
            if current is None or level_of[cluster] > level_of[current]:
                finest[node] = cluster
    chains: dict[int, tuple[int, ...]] = {}

    def chain(cluster: int) -> tuple[int, ...]:
        found = chains.get(cluster)
        if found is None:
            path, current = [], cluster
            while current is not None and current not in chains:
                path.append(current)
                current = parent_of[current]
            found = chains[current] if current is not None else ()
            for node in reversed(path):
                found = (node, *found)
                chains[node] = found
            found = chains[cluster]
        return found

    holding: dict[int, list[str]] = defaultdict(list)
    for rel_id, source, target in relationships:
        if source not in finest or target not in finest:
            continue
        a, b = chain(finest[source]), chain(finest[target])
        common = min(len(a), len(b))
        # Both chains end at a level-0 community: the communities holding both ends are their common tail.
        depth = 0
        while depth < common and a[-1 - depth] == b[-1 - depth]:
            holding[a[-1 - depth]].append(rel_id)
            depth += 1
    return holding


def _split_oversized(
    edges: list[tuple[str, str, float]],
    members: dict[int, set[str]],
    level_of: dict[int, int],
    parent_of: dict[int, int | None],
    max_cluster_size: int,
    seed: int,
    resolution: float,
) -> None:
    """Split leaves larger than `max_cluster_size` into children, raising the resolution until they split."""
    has_children = {p for p in parent_of.values() if p is not None}
    queue = deque(sorted(c for c in members if c not in has_children and len(members[c]) > max_cluster_size))
    if not queue:
        return
    # Edges by their first node (edges are sorted, so each subgraph's edges stay in sorted order): a
    # community's subgraph is read from its members' edges, not from a scan of the whole graph.
    edges_of: dict[str, list[tuple[str, str, float]]] = defaultdict(list)
    for edge in edges:
        edges_of[edge[0]].append(edge)
    next_cluster = max(members) + 1
    while queue:
        cluster = queue.popleft()
        nodes = members[cluster]
        sub_edges = sorted(e for node in nodes for e in edges_of.get(node, ()) if e[1] in nodes)
        for doubling in range(1, _MAX_RESOLUTION_DOUBLINGS + 1):
            _, partition = gn.leiden(sub_edges, resolution=resolution * 2**doubling, seed=seed)
            parts: dict[int, set[str]] = defaultdict(set)
            for node, part in partition.items():
                parts[part].add(node)
            if len(parts) > 1:
                break
        else:
            continue
        for part_nodes in sorted(parts.values(), key=sorted):
            members[next_cluster] = part_nodes
            level_of[next_cluster] = level_of[cluster] + 1
            parent_of[next_cluster] = cluster
            if len(part_nodes) > max_cluster_size:
                queue.append(next_cluster)
            next_cluster += 1


def finest_community_by_entity(communities: Sequence[Community]) -> dict[str, str]:
    """Each entity's finest community: the deepest one that lists it (entities link to it)."""
    finest: dict[str, Community] = {}
    for community in communities:
        for entity_id in community.entity_ids:
            current = finest.get(entity_id)
            if current is None or community.level > current.level:
                finest[entity_id] = community
    return {entity_id: community.id for entity_id, community in sorted(finest.items())}
