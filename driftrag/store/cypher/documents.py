"""Documents, chunks and embeddings."""

UPSERT_KNOWLEDGE_BASE = """
MERGE (k:__KnowledgeBase__ {kb: $kb})
ON CREATE SET k.created_at = datetime(), k.graph_enabled = true, k.search_markers = 4
"""

# With its kb. `n_chunks` null keeps what the node has: the chunks are written as they are cut, and their
# count with the last batch.
UPSERT_DOCUMENT = (
    UPSERT_KNOWLEDGE_BASE
    + """MERGE (d:__Document__ {kb: $kb, id: $document.id})
SET d.title = $document.title, d.path = $document.path, d.content_hash = $document.content_hash,
    d.n_chunks = coalesce($document.n_chunks, d.n_chunks), d.updated_at = datetime()
"""
)

# `n_chunks`: the document's chunk count, given with its last batch (null keeps what the node has); set
# before the rows are unwound, so a last batch without chunks sets it too.
UPSERT_CHUNKS = """
MATCH (d:__Document__ {kb: $kb, id: $document_id})
SET d.n_chunks = coalesce($n_chunks, d.n_chunks)
WITH d
UNWIND $chunks AS row
MERGE (c:__Chunk__ {kb: $kb, id: row.id})
ON CREATE SET c.enabled = true
SET c.document_id = $document_id, c.index = row.index, c.text = row.text, c.n_tokens = row.n_tokens,
    c.extractable = row.extractable, c.skip_reason = row.skip_reason, c.pages = row.pages,
    c.ocr_pages = row.ocr_pages, c.sections = row.sections, c.section_titles = row.section_titles,
    c.section_kind = row.section_kind
MERGE (c)-[:PART_OF]->(d)
"""

# Labels cannot be parameters, so each node kind has its own statement; the property is the kb's
# vector space's (`driftrag.models.vector_spaces`). An entity's or community's vector goes with the hash of
# the text it embeds (`row.hash`; none keeps the stored one), so a vector never outlives its hash's write.
SET_CHUNK_EMBEDDINGS = """
UNWIND $rows AS row
MATCH (n:__Chunk__ {kb: $kb, id: row.id})
CALL db.create.setNodeVectorProperty(n, $vector_property, row.embedding)
"""

SET_ENTITY_EMBEDDINGS = """
UNWIND $rows AS row
MATCH (n:__Entity__ {kb: $kb, id: row.id})
CALL db.create.setNodeVectorProperty(n, $vector_property, row.embedding)
SET n.embedding_hash = coalesce(row.hash, n.embedding_hash)
"""

SET_COMMUNITY_EMBEDDINGS = """
UNWIND $rows AS row
MATCH (n:__Community__ {kb: $kb, id: row.id})
CALL db.create.setNodeVectorProperty(n, $vector_property, row.embedding)
SET n.embedding_hash = coalesce(row.hash, n.embedding_hash)
"""
