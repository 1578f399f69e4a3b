"""What a graph view shows: the entities and relationships of a kb or of one community, optionally capped.

`GraphViewStore.read_view` returns a `GraphView`; the renderers in `driftrag.views` (Mermaid, HTML,
GraphML) turn it into pictures and files without touching Neo4j.

- Sources follow the graph-search contract: only chunks that exist and are enabled count, and an
  entity or relationship without any such chunk is left out. `mentions` and `source_chunks` count
  the valid chunks.
- A community view holds the community's members (its `entity_ids`, descendants included) and the
  relationships between two members.
- `degree` is the number of shown-scope relationships touching the entity (the kb, or the community),
  counted before any cap, so a capped view still ranks entities by their real connectivity.
- `max_nodes` keeps the highest-degree entities (ties: more mentions, then name, then id) and the
  relationships between kept entities; `truncated` and the `*_total` counts say what was cut.
- `pmi` is the relationship's PMI as the entity layer was written (read from its stored chunk counts
  and the kb's N, `cypher.graph.PMI_EXPRESSION`); on graphs that keep none (written before PMIs or
  their N were kept), it is computed here from chunk counts: log2(n_ab · N / (n_a · n_b)), n_ab = the
  relationship's valid source chunks, n_a and n_b = the endpoints' `mentions`, N = the kb's enabled
  chunks that could be extracted (`pmi_estimated` is then true).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from driftrag.errors import CommunityNotFoundError, InvalidIdentifierError, KnowledgeBaseNotFoundError
from driftrag.models.graph import pmi
from driftrag.models.identifiers import validate_kb_id, validate_node_id
from driftrag.models.views import GraphView, ViewEntity, ViewRelationship
from driftrag.store.cypher import views as cy
from driftrag.store.neo4j_store import Neo4jStore


def _validate_community_id(community_id: str) -> str:
    validate_node_id(community_id)
    if not community_id.startswith("community-"):
        raise InvalidIdentifierError(f"not a community id: {community_id!r}")
    return community_id


class GraphViewStore:
    """Read-only access to what the graph views show."""

    def __init__(self, store: Neo4jStore) -> None:
        self._store = store

    async def read_view(self, kb: str, *, community_id: str | None = None, max_nodes: int | None = None) -> GraphView:
        """The view of a kb, or of one of its communities, with at most `max_nodes` entities.

        Raises InvalidIdentifierError (bad kb or community id), ValueError (max_nodes < 1),
        KnowledgeBaseNotFoundError, CommunityNotFoundError or BackendUnavailableError.
        """
        validate_kb_id(kb)
        if community_id is not None:
            _validate_community_id(community_id)
        if max_nodes is not None and max_nodes < 1:
            raise ValueError("max_nodes must be at least 1 (or None for no cap)")
        kb_rows = await self._store.read(cy.MATCH_VIEW_KB, kb=kb)
        if not kb_rows:
            raise KnowledgeBaseNotFoundError(f"knowledge base {kb!r} does not exist")
        chunks = kb_rows[0]["chunks"]

        community: dict[str, Any] = {}
        if community_id is None:
            entity_rows = await self._store.read(cy.MATCH_VIEW_ENTITIES, kb=kb)
            relationship_rows = await self._store.read(cy.MATCH_VIEW_RELATIONSHIPS, kb=kb)
        else:
            rows = await self._store.read(cy.MATCH_VIEW_COMMUNITY, kb=kb, community_id=community_id)
            if not rows:
                raise CommunityNotFoundError(f"community {community_id!r} does not exist in knowledge base {kb!r}")
            community = rows[0]
            members = sorted(set(community["entity_ids"]))
            entity_rows = await self._store.read(cy.MATCH_VIEW_ENTITIES_BY_ID, kb=kb, ids=members)
            relationship_rows = await self._store.read(cy.MATCH_VIEW_RELATIONSHIPS_FROM, kb=kb, ids=members)

        mentions = {row["id"]: row["mentions"] for row in entity_rows}
        # Both ends must be valid entities in scope (a community's relationships stay inside it).
        relationship_rows = [
            row for row in relationship_rows if row["source_id"] in mentions and row["target_id"] in mentions
        ]
        degree: Counter[str] = Counter()
        for row in relationship_rows:
            degree[row["source_id"]] += 1
            degree[row["target_id"]] += 1
        entities = [
            ViewEntity(
                id=row["id"],
                name=row["name"] or "",
                type=row["type"],
                aliases=row["aliases"],
                degree=degree[row["id"]],
                mentions=row["mentions"],
            )
            for row in entity_rows
        ]
        relationships = [self._relationship(row, mentions, chunks) for row in relationship_rows]

        truncated = max_nodes is not None and len(entities) > max_nodes
        if truncated:
            ranked = sorted(entities, key=lambda e: (-e.degree, -e.mentions, e.name, e.id))
            kept = {e.id for e in ranked[:max_nodes]}
            shown_entities = [e for e in entities if e.id in kept]
            shown_relationships = [r for r in relationships if r.source_id in kept and r.target_id in kept]
        else:
            shown_entities, shown_relationships = entities, relationships
        return GraphView(
            kb=kb,
            community_id=community_id,
            community_level=community.get("level"),
            community_title=community.get("title"),
            entities=sorted(shown_entities, key=lambda e: e.id),
            relationships=sorted(shown_relationships, key=lambda r: r.id),
            entities_total=len(entities),
            relationships_total=len(relationships),
            max_nodes=max_nodes,
            truncated=truncated,
        )

    @staticmethod
    def _relationship(row: dict[str, Any], mentions: dict[str, int], chunks: int) -> ViewRelationship:
        stored = row["pmi"]
        # A pair with a zero count has no PMI: 0.0 (independence) is shown instead.
        value = (
            float(stored)
            if stored is not None
            else pmi(row["source_chunks"], mentions[row["source_id"]], mentions[row["target_id"]], chunks) or 0.0
        )
        return ViewRelationship(
            id=row["id"],
            source_id=row["source_id"],
            target_id=row["target_id"],
            type=row["type"],
            weight=float(row["weight"]),
            pmi=value,
            pmi_estimated=stored is None,
            source_chunks=row["source_chunks"],
            listed_source_chunks=row["listed_source_chunks"],
        )
