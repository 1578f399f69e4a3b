"""Reads behind the Microsoft GraphRAG interchange (`driftrag.interop.graphrag`).

An import writes through the ingestion's own statements (documents.py, graph.py); only the check that
a kb id is free and the reads of an export are here. Each export read returns a kb's whole layer as
rows in id order: the interchange tables are written in one piece, so a kb is read once per layer.
`$vectors` false leaves the embeddings out (an export without them reads a tenth of the bytes);
`$vector_property` is the property of the kb's vector space (`driftrag.models.vector_spaces`).
"""

KB_EXISTS = """
OPTIONAL MATCH (k:__KnowledgeBase__ {kb: $kb})
RETURN k IS NOT NULL AS exists
"""

EXPORT_DOCUMENTS = """
MATCH (d:__Document__ {kb: $kb})
RETURN d.id AS id, d.title AS title, d.path AS path,
       CASE WHEN d.updated_at IS NULL THEN null ELSE toString(d.updated_at) END AS updated_at
ORDER BY d.id
"""

EXPORT_CHUNKS = """
MATCH (c:__Chunk__ {kb: $kb})
RETURN c.id AS id, c.document_id AS document_id, c.index AS index, c.text AS text,
       coalesce(c.n_tokens, 0) AS n_tokens,
       CASE WHEN $vectors THEN c[$vector_property] ELSE null END AS embedding
ORDER BY c.document_id, c.index, c.id
"""

# Degrees count both directions, as GraphRAG's `degree` does (its graph is undirected).
EXPORT_ENTITIES = """
MATCH (e:__Entity__ {kb: $kb})
RETURN e.id AS id, e.name AS name, coalesce(e.type, 'UNKNOWN') AS type,
       coalesce(e.summary, e.description, '') AS description, coalesce(e.source_chunk_ids, []) AS source_chunk_ids,
       COUNT { (e)-[:RELATED]-(:__Entity__) } AS degree,
       CASE WHEN $vectors THEN e[$vector_property] ELSE null END AS embedding
ORDER BY e.id
"""

EXPORT_RELATIONSHIPS = """
MATCH (s:__Entity__ {kb: $kb})-[r:RELATED]->(t:__Entity__)
RETURN r.id AS id, s.id AS source_id, t.id AS target_id, coalesce(r.type, 'RELATED_TO') AS type,
       coalesce(r.summary, r.description, '') AS description, coalesce(r.weight, 0.0) AS weight,
       coalesce(r.source_chunk_ids, []) AS source_chunk_ids
ORDER BY r.id
"""

EXPORT_COMMUNITIES = """
MATCH (c:__Community__ {kb: $kb})
RETURN c.id AS id, c.level AS level, c.parent_id AS parent_id, coalesce(c.child_ids, []) AS child_ids,
       coalesce(c.entity_ids, []) AS entity_ids, coalesce(c.relationship_ids, []) AS relationship_ids,
       coalesce(c.chunk_ids, []) AS chunk_ids, c.title AS title, c.summary AS summary, c.rating AS rating,
       c.rating_explanation AS rating_explanation, c.findings AS findings, c.full_content AS full_content,
       CASE WHEN $vectors THEN c[$vector_property] ELSE null END AS embedding
ORDER BY c.level, c.id
"""
