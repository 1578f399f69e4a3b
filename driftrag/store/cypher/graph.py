"""Extraction checkpoints, the entity/relationship layer, communities, deletes and counts.

A new kb has every search marker from its first write (markers.py), so the kb statements set
`k.search_markers` to `SEARCH_MARKERS_VERSION` on create (a unit test keeps the two in step).
"""

from driftrag.store.cypher.jobs import DELETE_KB_JOBS
from driftrag.store.cypher.markers import ENTITY_MARKERS_SET, RELATIONSHIP_MARKERS_SET

# --- knowledge base and documents -------------------------------------------------------------------

SET_KB_EXTRACT_CONFIG = """
MERGE (k:__KnowledgeBase__ {kb: $kb})
ON CREATE SET k.created_at = datetime(), k.graph_enabled = true, k.search_markers = 4
SET k.extract_config = $extract_config
"""

REMOVE_KB_EXTRACT_CONFIG = """
MATCH (k:__KnowledgeBase__ {kb: $kb})
REMOVE k.extract_config
"""

# PMIs are not stored: each is read from the `source_count` markers of the relationship and its ends
# (markers.py) and the kb's `pmi_chunks`, the N of the entity layer last written. So a change of N
# (every delete) rewrites no relationship. A graph written before N was kept (no `pmi_chunks`) shows
# the PMI stored on its relationships until its entity layer is written again. Needs `k`, `s`, `r`, `t`.
PMI_EXPRESSION = """CASE WHEN k.pmi_chunks > 0 AND r.source_count > 0 AND s.source_count > 0 AND t.source_count > 0
  THEN log(toFloat(r.source_count) * k.pmi_chunks / (toFloat(s.source_count) * t.source_count)) / log(2)
  ELSE r.pmi END"""

SET_KB_PMI_CHUNKS = """
MATCH (k:__KnowledgeBase__ {kb: $kb})
SET k.pmi_chunks = $total_chunks
"""

MATCH_KB = """
MATCH (k:__KnowledgeBase__ {kb: $kb})
RETURN k.extract_config AS extract_config, k.graph_enabled AS graph_enabled, k.graph_stale AS graph_stale,
       coalesce(k.entity_layer_stale, k.graph_stale) AS entity_layer_stale, coalesce(k.deleting, false) AS deleting
"""

# The first write of a kb's delete (the batched deletes follow): readers refuse a marked kb.
SET_KB_DELETING = """
OPTIONAL MATCH (k:__KnowledgeBase__ {kb: $kb})
FOREACH (_ IN CASE WHEN k IS NULL THEN [] ELSE [1] END | SET k.deleting = true, k.deleting_since = datetime())
RETURN k IS NOT NULL AS marked
"""

# A kb is stale from the moment its chunks change until a rebuild of the derived layers completes,
# so a run that crashed in between rebuilds on the next start even if no document changed.
SET_KB_STALE = """
MERGE (k:__KnowledgeBase__ {kb: $kb})
ON CREATE SET k.created_at = datetime(), k.graph_enabled = true, k.search_markers = 4
SET k.graph_stale = $stale, k.entity_layer_stale = $stale
"""

# The entity layer matches the checkpoints again (an incremental update wrote it) while communities,
# reports or vectors are still to be refreshed: a delete after a crash here needs no full rebuild.
SET_KB_ENTITY_LAYER_CURRENT = """
MATCH (k:__KnowledgeBase__ {kb: $kb})
SET k.entity_layer_stale = false
"""

# What `kb list` shows of how a kb was ingested; written by every ingestion run.
SET_KB_PROFILE = """
MERGE (k:__KnowledgeBase__ {kb: $kb})
ON CREATE SET k.created_at = datetime(), k.graph_enabled = true, k.search_markers = 4
SET k.mode = $mode, k.embedder = $embedder, k.embedding_dimension = $embedding_dimension
"""

MATCH_DOCUMENTS_BY_SOURCE = """
MATCH (d:__Document__ {kb: $kb}) WHERE d.path = $source OR (d.path IS NULL AND d.title = $source)
RETURN d.id AS id, d.content_hash AS content_hash
"""

MATCH_DOCUMENTS = """
MATCH (d:__Document__ {kb: $kb})
RETURN d.id AS id, d.title AS title, d.path AS path, d.n_chunks AS n_chunks
ORDER BY d.id
"""

# --- extraction checkpoints on chunks ------------------------------------------------------------------

MATCH_CHUNKS_TO_EXTRACT = """
MATCH (c:__Chunk__ {kb: $kb, document_id: $document_id})
WHERE c.extractable AND c.extraction_status IS NULL
RETURN c.id AS id, c.document_id AS document_id, c.index AS index, c.text AS text, c.n_tokens AS n_tokens
ORDER BY c.index
"""

# The kb's chunks whose extraction failed (the model failed after its retries), retried by the kb-wide
# half of an ingestion (`driftrag.ingestion.indexing.retry_failed_chunks`).
MATCH_FAILED_CHUNKS_TO_EXTRACT = """
MATCH (c:__Chunk__ {kb: $kb})
WHERE c.extraction_status = 'failed' AND c.extractable AND c.id IS NOT NULL
RETURN c.id AS id, c.document_id AS document_id, c.index AS index, c.text AS text, c.n_tokens AS n_tokens
ORDER BY c.document_id, c.index
"""

SET_CHUNK_EXTRACTIONS = """
UNWIND $rows AS row
MATCH (c:__Chunk__ {kb: $kb, id: row.id})
SET c.extraction = row.extraction, c.extraction_status = row.status, c.extraction_error = row.error,
    c.extraction_origin = row.origin, c.extraction_empty = row.empty
"""

MATCH_KB_EXTRACTIONS = """
MATCH (c:__Chunk__ {kb: $kb})
WHERE c.extraction_status = 'ok'
RETURN c.id AS id, c.extraction AS extraction
ORDER BY c.id
"""

MATCH_FAILED_CHUNKS = """
MATCH (c:__Chunk__ {kb: $kb})
WHERE c.extraction_status = 'failed'
RETURN c.id AS id, c.document_id AS document_id, c.index AS index, c.extraction_error AS error
ORDER BY c.document_id, c.index
"""

MATCH_CHUNK_TEXTS = """
UNWIND $ids AS id
MATCH (c:__Chunk__ {kb: $kb, id: id})
RETURN c.id AS id, c.text AS text
"""

# --- entities and relationships ---------------------------------------------------------------------

# A summary the model failed on (`summary_failed`: its descriptions stand in) is read as no summary by the
# state reads, so a rebuild asks for it again instead of reusing it.
_REUSABLE_SUMMARY = "CASE WHEN {x}.summary_failed THEN null ELSE {x}.summary END"

MATCH_ENTITY_STATE = (
    """
MATCH (e:__Entity__ {kb: $kb})
RETURN e.id AS id, e.descriptions_hash AS descriptions_hash, """
    + _REUSABLE_SUMMARY.format(x="e")
    + """ AS summary,
       e.embedding_hash AS embedding_hash, e[$vector_property] IS NOT NULL AS embedded
"""
)

UPSERT_ENTITIES = (
    """
UNWIND $rows AS row
MERGE (e:__Entity__ {kb: $kb, id: row.id})
WITH e, row, e.valid AS was_valid, e.type AS was_type
// The type is a label too, for tools that read labels (it matches TYPE_PATTERN: upper-case letters,
// digits and _), and the old type's label goes when the type changes.
CALL (e, row, was_type) { WITH * WHERE was_type IS NOT NULL AND was_type <> row.type REMOVE e:$(was_type) }
SET e:$(row.type)
SET e.name = row.name, e.normalised_name = row.normalised_name, e.type = row.type,
    e.descriptions = row.descriptions, e.descriptions_hash = row.descriptions_hash,
    e.summary = row.summary, e.description = row.description, e.source_chunk_ids = row.source_chunk_ids,
    e.aliases = row.aliases, e.summary_failed = CASE WHEN row.summary_failed THEN true END
SET """
    + ENTITY_MARKERS_SET
    + """
WITH e, was_valid WHERE was_valid IS NOT NULL AND was_valid <> e.valid
RETURN collect(e.id) AS changed
"""
)

DELETE_STALE_ENTITIES = """
MATCH (e:__Entity__ {kb: $kb}) WHERE NOT e.id IN $keep
CALL (e) { DETACH DELETE e } IN TRANSACTIONS OF 1000 ROWS
"""

MERGE_MENTIONS = """
UNWIND $rows AS row
MATCH (c:__Chunk__ {kb: $kb, id: row.chunk_id})
MATCH (e:__Entity__ {kb: $kb, id: row.entity_id})
MERGE (c)-[:MENTIONS]->(e)
"""

DELETE_STALE_MENTIONS = """
MATCH (c:__Chunk__ {kb: $kb})-[m:MENTIONS]->(e:__Entity__)
WHERE NOT c.id IN e.source_chunk_ids
DELETE m
"""

MATCH_RELATIONSHIP_STATE = (
    """
MATCH (:__Entity__ {kb: $kb})-[r:RELATED]->(:__Entity__)
RETURN r.id AS id, r.descriptions_hash AS descriptions_hash, """
    + _REUSABLE_SUMMARY.format(x="r")
    + """ AS summary
"""
)

UPSERT_RELATIONSHIPS = (
    """
UNWIND $rows AS row
MATCH (s:__Entity__ {kb: $kb, id: row.source_id})
MATCH (t:__Entity__ {kb: $kb, id: row.target_id})
MERGE (s)-[r:RELATED {id: row.id}]->(t)
SET r.kb = $kb, r.type = row.type, r.original_types = row.original_types, r.descriptions = row.descriptions,
    r.descriptions_hash = row.descriptions_hash, r.summary = row.summary, r.description = row.description,
    r.weight = row.weight, r.source_chunk_ids = row.source_chunk_ids,
    r.summary_failed = CASE WHEN row.summary_failed THEN true END
REMOVE r.pmi
SET """
    + RELATIONSHIP_MARKERS_SET
    + """
SET r.valid = r.sourced AND coalesce(s.valid, false) AND coalesce(t.valid, false)
"""
)

# The relationships of entities whose validity an upsert changed (their `valid` includes the endpoints').
REFRESH_ENDPOINT_RELATIONSHIPS = """
UNWIND $ids AS id
MATCH (:__Entity__ {kb: $kb, id: id})-[r:RELATED]-(:__Entity__)
WITH DISTINCT r
WITH r, coalesce(r.sourced, false) AND coalesce(startNode(r).valid, false)
        AND coalesce(endNode(r).valid, false) AS valid
WHERE r.valid IS NULL OR r.valid <> valid
SET r.valid = valid
"""

# The deletes of whole layers run in batches: one transaction over a large kb's stale nodes (104,000
# communities with their reports and vectors) passed Neo4j's transaction memory limit.
DELETE_STALE_RELATIONSHIPS = """
MATCH (:__Entity__ {kb: $kb})-[r:RELATED]->(:__Entity__) WHERE NOT r.id IN $keep
CALL (r) { DELETE r } IN TRANSACTIONS OF 10000 ROWS
"""

# --- communities ------------------------------------------------------------------------------------

MATCH_COMMUNITY_STATE = """
MATCH (c:__Community__ {kb: $kb})
RETURN c.id AS id, c.context_hash AS context_hash, c.report AS report,
       c.embedding_hash AS embedding_hash, c[$vector_property] IS NOT NULL AS embedded
"""

UPSERT_COMMUNITIES = """
UNWIND $rows AS row
MERGE (c:__Community__ {kb: $kb, id: row.id})
SET c.level = row.level, c.parent_id = row.parent_id, c.child_ids = row.child_ids,
    c.entity_ids = row.entity_ids, c.relationship_ids = row.relationship_ids, c.chunk_ids = row.chunk_ids,
    c.size = size(row.entity_ids), c.title = row.title, c.summary = row.summary, c.rating = row.rating,
    c.rating_explanation = row.rating_explanation, c.findings = row.findings, c.report = row.report,
    c.full_content = row.full_content, c.context_hash = row.context_hash, c.structure_hash = row.structure_hash,
    c.report_failed = CASE WHEN row.report_failed THEN true END
"""

# What the incremental refresh of communities compares (reports are read only where needed).
MATCH_COMMUNITY_STRUCTURE = """
MATCH (c:__Community__ {kb: $kb})
RETURN c.id AS id, c.structure_hash AS structure_hash
"""

MATCH_COMMUNITY_STATE_OF = """
UNWIND $ids AS id
MATCH (c:__Community__ {kb: $kb, id: id})
RETURN c.id AS id, c.context_hash AS context_hash, c.report AS report,
       c.embedding_hash AS embedding_hash, c[$vector_property] IS NOT NULL AS embedded
"""

DELETE_STALE_COMMUNITIES = """
MATCH (c:__Community__ {kb: $kb}) WHERE NOT c.id IN $keep
CALL (c) { DETACH DELETE c } IN TRANSACTIONS OF 1000 ROWS
"""

DELETE_COMMUNITY_MEMBERSHIPS = """
MATCH (:__Entity__ {kb: $kb})-[m:IN_COMMUNITY]->(:__Community__)
CALL (m) { DELETE m } IN TRANSACTIONS OF 10000 ROWS
"""

DELETE_COMMUNITY_HIERARCHY = """
MATCH (:__Community__ {kb: $kb})-[m:IN_COMMUNITY]->(:__Community__)
CALL (m) { DELETE m } IN TRANSACTIONS OF 10000 ROWS
"""

MERGE_ENTITY_MEMBERSHIPS = """
UNWIND $rows AS row
MATCH (e:__Entity__ {kb: $kb, id: row.entity_id})
MATCH (c:__Community__ {kb: $kb, id: row.community_id})
MERGE (e)-[:IN_COMMUNITY]->(c)
"""

MERGE_COMMUNITY_PARENTS = """
UNWIND $rows AS row
MATCH (child:__Community__ {kb: $kb, id: row.child_id})
MATCH (parent:__Community__ {kb: $kb, id: row.parent_id})
MERGE (child)-[:IN_COMMUNITY]->(parent)
"""

# Keyset pages of the kb's graph for community detection: a million relationships are read as pages
# ordered by id (the `driftrag_related_key` constraint's (kb, id) index serves the order, so a page is
# an index seek with no sort: `ORDER BY n.kb, n.id` spells the index order out for the planner), never
# as one result. `$after` is the last id of the previous page ('' for the first). A page is one record
# holding one list per column: the driver decodes a flat list of integers or floats many times faster
# than a list of [id, …] rows, and a relationship's ends travel as the nodes' internal ids (integers,
# mapped to entity ids once from the entity pages; stable while the kb lock is held) instead of two
# strings per relationship.
MATCH_RELATIONSHIP_EDGES_PAGE = """
MATCH (s:__Entity__)-[r:RELATED]->(t:__Entity__)
WHERE r.id > $after AND r.kb = $kb
WITH r, s, t ORDER BY r.kb, r.id LIMIT $limit
RETURN [collect(r.id), collect(id(s)), collect(id(t)), collect(coalesce(r.weight, 0.0))] AS columns
"""

MATCH_ENTITY_CHUNKS_PAGE = """
MATCH (e:__Entity__ {kb: $kb})
WHERE e.id > $after
WITH e ORDER BY e.kb, e.id LIMIT $limit
RETURN [collect(e.id), collect(id(e)), collect(coalesce(e.source_chunk_ids, []))] AS columns
"""

# --- incremental update of the entity layer (see ingestion.incremental) ------------------------------

MATCH_DOCUMENT_EXTRACTIONS = """
MATCH (c:__Chunk__ {kb: $kb, document_id: $document_id})
WHERE c.extraction_status = 'ok'
RETURN c.extraction AS extraction
ORDER BY c.id
"""

MATCH_CHUNK_EXTRACTIONS = """
UNWIND $ids AS id
MATCH (c:__Chunk__ {kb: $kb, id: id})
WHERE c.extraction_status = 'ok'
RETURN c.id AS id, c.extraction AS extraction
ORDER BY c.id
"""

# N of the PMI: checkpoints that are neither failed nor skipped. `save_extractions` stores the outcome
# as pydantic's compact JSON, which always holds the field; inside a string a quote is escaped, so the
# marker cannot match text.
COUNT_EXTRACTED_CHUNKS = """
MATCH (c:__Chunk__ {kb: $kb})
WHERE c.extraction_status = 'ok' AND c.extraction CONTAINS $not_skipped
RETURN count(c) AS n
"""

MATCH_ENTITY_KEYS_PAGE = """
MATCH (e:__Entity__ {kb: $kb})
WHERE e.id > $after
WITH e ORDER BY e.kb, e.id LIMIT $limit
RETURN [collect(e.id), collect(e.normalised_name), collect(e.name), collect(coalesce(e.aliases, []))] AS columns
"""

MATCH_RELATIONSHIPS_OF_ENTITIES = """
UNWIND $ids AS id
MATCH (:__Entity__ {kb: $kb, id: id})-[r:RELATED]-(:__Entity__)
RETURN collect(DISTINCT r.id) AS ids
"""

MATCH_RELATIONSHIP_STATE_OF = (
    """
UNWIND $ids AS id
MATCH (:__Entity__ {kb: $kb})-[r:RELATED {id: id}]->(:__Entity__)
RETURN r.id AS id, r.descriptions_hash AS descriptions_hash, """
    + _REUSABLE_SUMMARY.format(x="r")
    + """ AS summary
"""
)

DELETE_ENTITIES_BY_ID = """
UNWIND $rows AS row
MATCH (e:__Entity__ {kb: $kb, id: row.id})
DETACH DELETE e
"""

DELETE_STALE_MENTIONS_OF = """
UNWIND $rows AS row
MATCH (c:__Chunk__)-[m:MENTIONS]->(e:__Entity__ {kb: $kb, id: row.id})
WHERE NOT c.id IN e.source_chunk_ids
DELETE m
"""

DELETE_MENTIONS_BY_PAIR = """
UNWIND $rows AS row
MATCH (c:__Chunk__ {kb: $kb, id: row.chunk_id})-[m:MENTIONS]->(e:__Entity__ {kb: $kb, id: row.entity_id})
DELETE m
"""

DELETE_RELATIONSHIPS_BY_ID = """
UNWIND $rows AS row
MATCH (:__Entity__ {kb: $kb})-[r:RELATED {id: row.id}]->(:__Entity__)
DELETE r
"""

MATCH_ENTITIES_PAGE = """
MATCH (e:__Entity__ {kb: $kb})
WHERE e.id > $after
WITH e ORDER BY e.kb, e.id LIMIT $limit
RETURN collect([e.id, e.name, e.normalised_name, e.type, e.descriptions, e.summary,
                coalesce(e.source_chunk_ids, []), coalesce(e.aliases, [])]) AS rows
"""

# Stored entities and relationships by id, as the pages below read them; `$sources` false leaves their
# source chunk lists out (a report context shows none, and a hub's list is tens of thousands of ids).
MATCH_ENTITIES_BY_ID = """
UNWIND $ids AS id
MATCH (e:__Entity__ {kb: $kb, id: id})
RETURN [e.id, e.name, e.normalised_name, e.type, e.descriptions, e.summary,
        CASE WHEN $sources THEN coalesce(e.source_chunk_ids, []) ELSE [] END, coalesce(e.aliases, [])] AS row
"""

MATCH_ENTITY_STATE_OF = (
    """
UNWIND $ids AS id
MATCH (e:__Entity__ {kb: $kb, id: id})
RETURN e.id AS id, e.descriptions_hash AS descriptions_hash, """
    + _REUSABLE_SUMMARY.format(x="e")
    + """ AS summary,
       e.embedding_hash AS embedding_hash, e[$vector_property] IS NOT NULL AS embedded
"""
)

# `r.kb` and `r.id` seek the (kb, id) index of RELATED.
MATCH_RELATIONSHIPS_BY_ID = (
    """
OPTIONAL MATCH (k:__KnowledgeBase__ {kb: $kb})
UNWIND $ids AS id
MATCH (s:__Entity__)-[r:RELATED]->(t:__Entity__)
WHERE r.kb = $kb AND r.id = id
RETURN [r.id, s.id, t.id, r.type, coalesce(r.original_types, []), r.descriptions, r.weight,
        CASE WHEN $sources THEN coalesce(r.source_chunk_ids, []) ELSE [] END, r.summary, """
    + PMI_EXPRESSION
    + """] AS row
"""
)

MATCH_RELATIONSHIPS_PAGE = (
    """
MATCH (s:__Entity__)-[r:RELATED]->(t:__Entity__)
WHERE r.id > $after AND r.kb = $kb
WITH r, s, t ORDER BY r.kb, r.id LIMIT $limit
OPTIONAL MATCH (k:__KnowledgeBase__ {kb: $kb})
RETURN collect([r.id, s.id, t.id, r.type, coalesce(r.original_types, []), r.descriptions, r.weight,
                coalesce(r.source_chunk_ids, []), r.summary, """
    + PMI_EXPRESSION
    + """]) AS rows
"""
)

# --- embeddings bookkeeping -----------------------------------------------------------------------------

MATCH_CHUNKS_WITHOUT_EMBEDDING = """
MATCH (c:__Chunk__ {kb: $kb}) WHERE c[$vector_property] IS NULL
RETURN c.id AS id, c.text AS text
ORDER BY c.id
"""

# The same for some documents only: an ingestion worker embeds its own documents' chunks.
MATCH_DOCUMENT_CHUNKS_WITHOUT_EMBEDDING = """
UNWIND $document_ids AS document_id
MATCH (c:__Chunk__ {kb: $kb, document_id: document_id}) WHERE c[$vector_property] IS NULL
RETURN c.id AS id, c.text AS text
ORDER BY c.id
"""

SET_ENTITY_EMBEDDING_HASHES = """
UNWIND $rows AS row
MATCH (n:__Entity__ {kb: $kb, id: row.id})
SET n.embedding_hash = row.hash
"""

SET_COMMUNITY_EMBEDDING_HASHES = """
UNWIND $rows AS row
MATCH (n:__Community__ {kb: $kb, id: row.id})
SET n.embedding_hash = row.hash
"""

# --- deletes ------------------------------------------------------------------------------------------

DELETE_DOCUMENT_CHUNKS = """
MATCH (c:__Chunk__ {kb: $kb, document_id: $document_id})
CALL (c) { DETACH DELETE c } IN TRANSACTIONS OF 1000 ROWS
"""

DELETE_DOCUMENT = "MATCH (d:__Document__ {kb: $kb, id: $document_id}) DETACH DELETE d"

# One statement per label so that each uses the (kb, id) index; the kb's ingestion job records go too.
DELETE_KB_NODES = (
    "MATCH (n:__Community__ {kb: $kb}) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 1000 ROWS",
    "MATCH (n:__Entity__ {kb: $kb}) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 1000 ROWS",
    "MATCH (n:__Chunk__ {kb: $kb}) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 1000 ROWS",
    "MATCH (n:__Document__ {kb: $kb}) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 1000 ROWS",
    DELETE_KB_JOBS,
    "MATCH (n:__KnowledgeBase__ {kb: $kb}) DETACH DELETE n",
)

# --- reads of the derived layers (inspection, tests) -------------------------------------------------

MATCH_CHUNKS = """
MATCH (c:__Chunk__ {kb: $kb})
RETURN c.id AS id, c.document_id AS document_id, c.index AS index, c.text AS text, c.extractable AS extractable,
       c.extraction_status AS extraction_status, c[$vector_property] IS NOT NULL AS embedded
ORDER BY c.document_id, c.index
"""

MATCH_ENTITIES = """
MATCH (e:__Entity__ {kb: $kb})
RETURN e.id AS id, e.name AS name, e.type AS type, e.descriptions AS descriptions, e.summary AS summary,
       e.source_chunk_ids AS source_chunk_ids, coalesce(e.aliases, []) AS aliases,
       e[$vector_property] IS NOT NULL AS embedded
ORDER BY e.id
"""

MATCH_RELATIONSHIPS = (
    """
OPTIONAL MATCH (k:__KnowledgeBase__ {kb: $kb})
MATCH (s:__Entity__ {kb: $kb})-[r:RELATED]->(t:__Entity__)
RETURN r.id AS id, s.id AS source_id, t.id AS target_id, r.type AS type, r.descriptions AS descriptions,
       r.summary AS summary, r.source_chunk_ids AS source_chunk_ids, """
    + PMI_EXPRESSION
    + """ AS pmi
ORDER BY r.id
"""
)

MATCH_COMMUNITIES = """
MATCH (c:__Community__ {kb: $kb})
OPTIONAL MATCH (c)-[:IN_COMMUNITY]->(p:__Community__)
RETURN c.id AS id, c.level AS level, c.parent_id AS parent_id, p.id AS linked_parent_id, c.child_ids AS child_ids,
       c.entity_ids AS entity_ids, c.title AS title, c.summary AS summary, c.rating AS rating,
       c.rating_explanation AS rating_explanation, c.findings AS findings, c[$vector_property] IS NOT NULL AS embedded
ORDER BY c.id
"""

# --- counts ---------------------------------------------------------------------------------------------

# The counts of the kb named `kb_id`, as one set of subqueries that COUNT_KB and LIST_KBS share.
# Relationships are counted from each entity's degree (`COUNT { (e)-[:RELATED]->() }` reads the node's
# degree, no expansion), in the same pass over the kb's entities that counts them and their aliases:
# a million relationships cost one degree lookup per entity, not one expansion per relationship.
# `n.id IS NOT NULL` lets the planner seek the (kb, id) key index (a composite index serves a prefix
# only with a predicate on every property) instead of scanning the label across all kbs.
_KB_COUNTS = """
CALL (kb_id) { MATCH (d:__Document__ {kb: kb_id}) WHERE d.id IS NOT NULL RETURN count(d) AS documents }
CALL (kb_id) {
  MATCH (c:__Chunk__ {kb: kb_id}) WHERE c.id IS NOT NULL
  RETURN count(c) AS chunks, count(CASE WHEN c.extraction_origin = 'offline' THEN 1 END) AS offline_extracted_chunks,
         count(CASE WHEN c.extraction_status = 'failed' THEN 1 END) AS failed_chunks,
         count(CASE WHEN c.extraction_status = 'ok' AND c.extraction_empty THEN 1 END) AS model_empty_chunks
}
CALL (kb_id) {
  OPTIONAL MATCH (k:__KnowledgeBase__ {kb: kb_id})
  RETURN coalesce(k.mode, '') = 'offline' AS offline_kb
}
CALL (kb_id) {
  MATCH (e:__Entity__ {kb: kb_id}) WHERE e.id IS NOT NULL
  RETURN count(e) AS entities, coalesce(sum(size(coalesce(e.aliases, []))), 0) AS aliases,
         coalesce(sum(COUNT { (e)-[:RELATED]->() }), 0) AS relationships,
         count(CASE WHEN e.summary_failed THEN 1 END) AS placeholder_entity_summaries
}
CALL (kb_id) {
  MATCH ()-[r:RELATED]->() WHERE r.summary_failed = true AND r.kb = kb_id
  RETURN count(r) AS placeholder_relationship_summaries
}
CALL (kb_id) {
  MATCH (c:__Community__ {kb: kb_id}) WHERE c.id IS NOT NULL
  RETURN count(c) AS communities, count(c.summary) AS reports,
         count(CASE WHEN c.report_failed THEN 1 END) AS placeholder_reports
}
WITH *, placeholder_entity_summaries + placeholder_relationship_summaries AS placeholder_summaries,
     CASE WHEN offline_kb THEN 0 ELSE model_empty_chunks END AS empty_extracted_chunks
"""

COUNT_KB = (
    "WITH $kb AS kb_id"
    + _KB_COUNTS
    + """RETURN documents, chunks, entities, relationships, communities, reports, aliases, offline_extracted_chunks,
       empty_extracted_chunks, failed_chunks, placeholder_summaries, placeholder_reports
"""
)

# Every kb with its counts in one statement.
LIST_KBS = (
    """
MATCH (k:__KnowledgeBase__)
WITH k, k.kb AS kb_id"""
    + _KB_COUNTS
    + """RETURN k.kb AS kb, coalesce(k.graph_enabled, true) AS graph_enabled, coalesce(k.graph_stale, false) AS stale,
       coalesce(k.deleting, false) AS deleting,
       failed_chunks > 0 OR placeholder_summaries > 0 OR placeholder_reports > 0 AS incomplete,
       k.mode AS mode, k.embedder AS embedder, k.embedding_dimension AS embedding_dimension,
       documents, chunks, entities, relationships, communities, reports, aliases, offline_extracted_chunks,
       empty_extracted_chunks, failed_chunks, placeholder_summaries, placeholder_reports
ORDER BY kb
"""
)
