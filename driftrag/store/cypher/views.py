"""Reads behind the graph views (Mermaid, HTML, GraphML): a kb's or a community's entities and relationships.

Sources follow the graph-search contract: a chunk vouches for an entity or a relationship only if it
exists in the kb and is not disabled (a missing `enabled` counts as enabled); items left without any
valid source are not returned. Each check is one lookup on the (kb, id) uniqueness index. Endpoint
and scope filtering (both ends shown, both in the community) happens in Python on id sets, which
keeps these statements linear in the size of what they read.
"""

from driftrag.store.cypher.graph import PMI_EXPRESSION

# The kb must exist; `chunks` (valid chunks that could mention entities) is the N of the fallback PMI.
MATCH_VIEW_KB = """
MATCH (k:__KnowledgeBase__ {kb: $kb})
CALL () {
  MATCH (c:__Chunk__ {kb: $kb})
  WHERE coalesce(c.enabled, true) AND coalesce(c.extractable, true)
  RETURN count(c) AS chunks
}
RETURN chunks
"""

MATCH_VIEW_COMMUNITY = """
MATCH (c:__Community__ {kb: $kb, id: $community_id})
RETURN c.id AS id, c.level AS level, c.title AS title, coalesce(c.entity_ids, []) AS entity_ids
"""

MATCH_VIEW_ENTITIES = """
MATCH (e:__Entity__ {kb: $kb})
WITH e, size([cid IN coalesce(e.source_chunk_ids, [])
              WHERE EXISTS { MATCH (c:__Chunk__ {kb: $kb, id: cid}) WHERE coalesce(c.enabled, true) }]) AS mentions
WHERE mentions > 0
RETURN e.id AS id, e.name AS name, e.type AS type, coalesce(e.aliases, []) AS aliases, mentions
ORDER BY id
"""

MATCH_VIEW_ENTITIES_BY_ID = """
UNWIND $ids AS entity_id
MATCH (e:__Entity__ {kb: $kb, id: entity_id})
WITH DISTINCT e
WITH e, size([cid IN coalesce(e.source_chunk_ids, [])
              WHERE EXISTS { MATCH (c:__Chunk__ {kb: $kb, id: cid}) WHERE coalesce(c.enabled, true) }]) AS mentions
WHERE mentions > 0
RETURN e.id AS id, e.name AS name, e.type AS type, coalesce(e.aliases, []) AS aliases, mentions
ORDER BY id
"""

# `pmi` is null on graphs that keep none (written before PMIs or their N were kept); the caller falls back.
MATCH_VIEW_RELATIONSHIPS = (
    """
OPTIONAL MATCH (k:__KnowledgeBase__ {kb: $kb})
MATCH (s:__Entity__ {kb: $kb})-[r:RELATED]->(t:__Entity__ {kb: $kb})
WITH k, s, r, t, size([cid IN coalesce(r.source_chunk_ids, [])
                    WHERE EXISTS { MATCH (c:__Chunk__ {kb: $kb, id: cid}) WHERE coalesce(c.enabled, true) }]) AS sources
WHERE sources > 0
RETURN r.id AS id, s.id AS source_id, t.id AS target_id, r.type AS type, coalesce(r.weight, 0.0) AS weight,
       """
    + PMI_EXPRESSION
    + """ AS pmi, sources AS source_chunks, size(coalesce(r.source_chunk_ids, [])) AS listed_source_chunks
ORDER BY id
"""
)

# Outgoing relationships of the listed entities; the caller keeps those whose target is listed too.
MATCH_VIEW_RELATIONSHIPS_FROM = (
    """
OPTIONAL MATCH (k:__KnowledgeBase__ {kb: $kb})
UNWIND $ids AS entity_id
MATCH (s:__Entity__ {kb: $kb, id: entity_id})-[r:RELATED]->(t:__Entity__ {kb: $kb})
WITH DISTINCT k, s, r, t
WITH k, s, r, t, size([cid IN coalesce(r.source_chunk_ids, [])
                    WHERE EXISTS { MATCH (c:__Chunk__ {kb: $kb, id: cid}) WHERE coalesce(c.enabled, true) }]) AS sources
WHERE sources > 0
RETURN r.id AS id, s.id AS source_id, t.id AS target_id, r.type AS type, coalesce(r.weight, 0.0) AS weight,
       """
    + PMI_EXPRESSION
    + """ AS pmi, sources AS source_chunks, size(coalesce(r.source_chunk_ids, [])) AS listed_source_chunks
ORDER BY id
"""
)
