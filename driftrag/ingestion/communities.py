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

Determinism: edges are sorted, the seed is fixed, and ids are `community-<level>-<digest>` with the
digest of the community's least member id (a level's communities are disjoint, so it is unique at
its level): the same graph always yields the same ids, whatever numbering Leiden uses internally. An
id does not depend on the other communities either, so after a small change of the graph (a
delete), a community Leiden draws again as it was keeps its id, and with it its stored report
(`community_refresh`); ids numbered by rank shifted for nearly every community after any change.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import repeat

import graspologic_native as gn
import numpy as np

from driftrag.collector import collector_paused
from driftrag.models.graph import Community, MergedEntity, MergedRelationship, stable_hash
from driftrag.models.storage import CommunityStorage

log = logging.getLogger(__name__)

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


async def read_community_graph(graph: CommunityStorage, kb: str, *, page_size: int = 50_000) -> CommunityGraph:
    """The kb's graph as stored, read in keyset pages of columns (a large kb is never one query
    result); edges are built as `community_edges` builds them from merged relationships."""
    entity_ids: list[str] = []
    nodes: list[int] = []
    chunks_of: dict[str, list[str]] = {}
    async for entity_page in graph.entity_chunk_pages(kb, page_size):
        entity_ids += entity_page.ids
        nodes += entity_page.nodes
        chunks_of.update(zip(entity_page.ids, entity_page.chunk_ids, strict=True))
    rel_ids: list[str] = []
    sources: list[np.ndarray] = []
    targets: list[np.ndarray] = []
    weights: list[np.ndarray] = []
    async for page in graph.relationship_edge_pages(kb, page_size):
        rel_ids += page.ids
        sources.append(np.asarray(page.source_nodes, dtype=np.int64))
        targets.append(np.asarray(page.target_nodes, dtype=np.int64))
        weights.append(np.asarray(page.weights, dtype=np.float64))
    empty_int, empty_float = np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
    with collector_paused():
        return _graph_from_columns(
            entity_ids,
            np.asarray(nodes, dtype=np.int64),
            chunks_of,
            rel_ids,
            np.concatenate(sources) if sources else empty_int,
            np.concatenate(targets) if targets else empty_int,
            np.concatenate(weights) if weights else empty_float,
        )


def _graph_from_columns(
    entity_ids: list[str],
    nodes: np.ndarray,
    chunks_of: dict[str, list[str]],
    rel_ids: list[str],
    source_nodes: np.ndarray,
    target_nodes: np.ndarray,
    weights: np.ndarray,
) -> CommunityGraph:
    """`community_edges` on integer columns: each entity becomes its rank in id order, so integer
    order is id order, pairs are (min, max) ranks and sorting/summing per pair are numpy passes.
    `np.bincount` adds a pair's weights in relationship id order from 0.0, as the dict of
    `community_edges` does, so the sums are the same floats."""
    names = sorted(entity_ids)
    rank_of_node = np.empty(len(nodes), dtype=np.int64)
    rank_of_node[np.argsort(np.asarray(entity_ids, dtype=object), kind="stable")] = np.arange(len(nodes))
    by_node = np.argsort(nodes, kind="stable")
    sorted_nodes = nodes[by_node]

    def ranks(ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if not len(sorted_nodes):
            return np.zeros(len(ends), dtype=np.int64), np.zeros(len(ends), dtype=bool)
        position = np.minimum(np.searchsorted(sorted_nodes, ends), len(sorted_nodes) - 1)
        return rank_of_node[by_node[position]], sorted_nodes[position] == ends

    source, source_known = ranks(source_nodes)
    target, target_known = ranks(target_nodes)
    known = source_known & target_known
    kept = np.flatnonzero(known)
    relationships = list(
        zip(
            [rel_ids[i] for i in kept.tolist()],
            [names[i] for i in source[kept].tolist()],
            [names[i] for i in target[kept].tolist()],
            strict=True,
        )
    )
    linking = known & (source != target)
    low = np.minimum(source, target)[linking]
    high = np.maximum(source, target)[linking]
    # Leiden needs positive weights; a zero-weight relationship still links its ends.
    pair_weights = np.maximum(weights[linking], 1e-6)
    pairs, inverse = np.unique(low * max(len(names), 1) + high, return_inverse=True)
    summed = np.bincount(inverse, weights=pair_weights, minlength=len(pairs))
    low_names = [names[i] for i in (pairs // max(len(names), 1)).tolist()]
    high_names = [names[i] for i in (pairs % max(len(names), 1)).tolist()]
    edges = list(zip(low_names, high_names, summed.tolist(), strict=True))
    return CommunityGraph(edges=edges, relationships=relationships, chunks_of=chunks_of)


def detect_graph_communities(
    graph: CommunityGraph,
    *,
    max_cluster_size: int = DEFAULT_MAX_CLUSTER_SIZE,
    seed: int = DEFAULT_SEED,
    resolution: float = 1.0,
) -> list[Community]:
    """`detect_communities` on a `CommunityGraph`."""
    with collector_paused():
        return _detect(graph, max_cluster_size, seed, resolution)


def _detect(graph: CommunityGraph, max_cluster_size: int, seed: int, resolution: float) -> list[Community]:
    edges = graph.edges
    if not edges:
        return []
    started = time.perf_counter()
    clusters = gn.hierarchical_leiden(
        edges, resolution=resolution, max_cluster_size=max_cluster_size, seed=seed, use_modularity=True
    )
    leiden_done = time.perf_counter()
    members: dict[int, set[str]] = defaultdict(set)
    level_of: dict[int, int] = {}
    parent_of: dict[int, int | None] = {}
    for row in clusters:
        members[row.cluster].add(row.node)
        level_of[row.cluster] = row.level
        parent_of[row.cluster] = row.parent_cluster
    split = _split_oversized(edges, members, level_of, parent_of, max_cluster_size, seed, resolution)
    split_done = time.perf_counter()

    # Members as ranks in id order (integer sorts, one string sort in all).
    names = sorted(set().union(*members.values()))
    rank = {node: i for i, node in enumerate(names)}
    ranked = {
        c: np.sort(np.fromiter(map(rank.__getitem__, nodes), np.int64, len(nodes))) for c, nodes in members.items()
    }
    name = {cluster: community_id(level_of[cluster], names[ranked[cluster][0]]) for cluster in members}

    children: dict[int, list[str]] = defaultdict(list)
    for cluster, parent in parent_of.items():
        if parent is not None:
            children[parent].append(name[cluster])
    relationship_ids = _relationships_by_community(graph.relationships, members, level_of, parent_of)
    chunk_ids = _chunks_by_community(members, level_of, parent_of, graph.chunks_of)
    entity_names = np.asarray(names, dtype=object)
    communities = []
    for cluster in sorted(members):
        parent = parent_of[cluster]
        communities.append(
            Community(
                id=name[cluster],
                level=level_of[cluster],
                parent_id=name[parent] if parent is not None else None,
                child_ids=sorted(children[cluster]),
                entity_ids=entity_names[ranked[cluster]].tolist(),
                relationship_ids=relationship_ids.get(cluster, []),
                chunk_ids=sorted(chunk_ids[cluster]),
            )
        )
    log.debug(
        "communities of %d edges: hierarchical Leiden %.2f s, %d oversized split %.2f s, listing %.2f s",
        len(edges),
        leiden_done - started,
        split,
        split_done - leiden_done,
        time.perf_counter() - split_done,
    )
    return sorted(communities, key=lambda c: (c.level, c.id))


def _finest_clusters(members: dict[int, set[str]], level_of: dict[int, int]) -> dict[str, int]:
    """Each entity's deepest cluster (later levels overwrite earlier ones)."""
    finest: dict[str, int] = {}
    for cluster in sorted(members, key=level_of.__getitem__):
        finest.update(dict.fromkeys(members[cluster], cluster))
    return finest


def _relationships_by_community(
    relationships: Sequence[tuple[str, str, str]],
    members: dict[int, set[str]],
    level_of: dict[int, int],
    parent_of: dict[int, int | None],
) -> dict[int, list[str]]:
    """The relationships with both ends in each community, sorted by id. An entity's
    communities form a chain (its finest one, then one parent per level up to level 0), so a
    relationship is in the level-L community of its ends when both ends have the same one: one
    vectorised comparison per level over all relationships, instead of a walk per relationship."""
    if not relationships:
        return {}
    finest = _finest_clusters(members, level_of)
    clusters = sorted(members)
    index = {cluster: i for i, cluster in enumerate(clusters)}
    depth = max(level_of.values()) + 1
    # ancestor[L, i]: the level-L community on cluster i's chain (-1 below its own level).
    ancestor = np.full((depth, len(clusters)), -1, dtype=np.int64)
    for i, cluster in enumerate(clusters):
        current: int | None = cluster
        while current is not None:
            ancestor[level_of[current], i] = index[current]
            current = parent_of[current]
    finest_index = {entity: index[cluster] for entity, cluster in finest.items()}
    rel_ids, sources, targets = zip(*relationships, strict=True)
    source = np.fromiter(map(finest_index.get, sources, repeat(-1)), np.int64, len(sources))
    target = np.fromiter(map(finest_index.get, targets, repeat(-1)), np.int64, len(targets))
    # Each relationship's rank in id order (the input is usually sorted already: a linear pass).
    by_id = sorted(range(len(rel_ids)), key=rel_ids.__getitem__)
    id_rank = np.empty(len(rel_ids), dtype=np.int64)
    id_rank[by_id] = np.arange(len(rel_ids))
    known = (source >= 0) & (target >= 0)
    held_by: list[np.ndarray] = []
    held: list[np.ndarray] = []
    for level in range(depth):
        a = np.where(known, ancestor[level, np.maximum(source, 0)], -1)
        b = np.where(known, ancestor[level, np.maximum(target, 0)], -1)
        rows = np.flatnonzero((a >= 0) & (a == b))
        held_by.append(a[rows])
        held.append(rows)
    owner, position = np.concatenate(held_by), np.concatenate(held)
    order = np.lexsort((id_rank[position], owner))
    owner, ordered = owner[order], np.asarray(rel_ids, dtype=object)[position[order]].tolist()
    starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]]) if len(owner) else np.empty(0, dtype=np.int64)
    ends = np.r_[starts[1:], len(owner)]
    return {
        clusters[owner[start]]: ordered[start:end] for start, end in zip(starts.tolist(), ends.tolist(), strict=True)
    }


def _chunks_by_community(
    members: dict[int, set[str]],
    level_of: dict[int, int],
    parent_of: dict[int, int | None],
    chunks_of: dict[str, list[str]],
) -> dict[int, set[str]]:
    """Each community's chunks (those of its members), bottom-up: a community's set is the union of
    its children's and of the chunks of any member no child holds, so each level is not a new pass
    over every member's chunk list."""
    children: dict[int, list[int]] = defaultdict(list)
    for cluster, parent in parent_of.items():
        if parent is not None:
            children[parent].append(cluster)
    chunks: dict[int, set[str]] = {}
    for cluster in sorted(members, key=level_of.__getitem__, reverse=True):
        kids = children.get(cluster, ())
        covered = set().union(*(members[kid] for kid in kids))
        own = members[cluster] - covered if kids else members[cluster]
        chunks[cluster] = set().union(*(chunks[kid] for kid in kids), *(chunks_of.get(e, ()) for e in own))
    return chunks


def _split_oversized(
    edges: list[tuple[str, str, float]],
    members: dict[int, set[str]],
    level_of: dict[int, int],
    parent_of: dict[int, int | None],
    max_cluster_size: int,
    seed: int,
    resolution: float,
) -> int:
    """Split leaves larger than `max_cluster_size` into children, raising the resolution until they
    split; returns how many communities were split."""
    has_children = {p for p in parent_of.values() if p is not None}
    queue = deque(sorted(c for c in members if c not in has_children and len(members[c]) > max_cluster_size))
    if not queue:
        return 0
    split = 0
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
        split += 1
        for part_nodes in sorted(parts.values(), key=sorted):
            members[next_cluster] = part_nodes
            level_of[next_cluster] = level_of[cluster] + 1
            parent_of[next_cluster] = cluster
            if len(part_nodes) > max_cluster_size:
                queue.append(next_cluster)
            next_cluster += 1
    return split


def community_id(level: int, least_member: str) -> str:
    """A community's id: its level and a digest of its least member's id (module docstring)."""
    return f"community-{level}-{stable_hash(least_member, length=16)}"


def finest_community_by_entity(communities: Sequence[Community]) -> dict[str, str]:
    """Each entity's finest community: the deepest one that lists it (entities link to it)."""
    finest: dict[str, Community] = {}
    for community in communities:
        for entity_id in community.entity_ids:
            current = finest.get(entity_id)
            if current is None or community.level > current.level:
                finest[entity_id] = community
    return {entity_id: community.id for entity_id, community in sorted(finest.items())}
