"""Schema statements: constraints, indexes, server checks."""

from driftrag.models.vector_spaces import VectorKind, checked_name
from driftrag.store.cypher.jobs import CREATE_INGEST_JOB_CONSTRAINT, CREATE_INGEST_JOB_STATE_INDEX
from driftrag.store.cypher.locks import CREATE_KB_LOCK_CONSTRAINT

# The node label of each kind of vector.
LABELS: dict[VectorKind, str] = {"chunk": "__Chunk__", "entity": "__Entity__", "community": "__Community__"}

CHUNK_TEXT_INDEX = "driftrag_chunk_text"
RELATED_KEY = "driftrag_related_key"
# The plain (kb, id) index on relationships that servers of earlier versions have instead of the key.
RELATED_KB_ID_INDEX = "driftrag_related_kb_id"
CREATE_RELATED_KB_ID_INDEX = "CREATE INDEX driftrag_related_kb_id IF NOT EXISTS FOR ()-[r:RELATED]-() ON (r.kb, r.id)"

# (kb, id) is the key of every node kind; Community edition supports composite uniqueness.
CREATE_CONSTRAINTS = (
    "CREATE CONSTRAINT driftrag_kb_key IF NOT EXISTS FOR (n:__KnowledgeBase__) REQUIRE n.kb IS UNIQUE",
    "CREATE CONSTRAINT driftrag_document_key IF NOT EXISTS FOR (n:__Document__) REQUIRE (n.kb, n.id) IS UNIQUE",
    "CREATE CONSTRAINT driftrag_chunk_key IF NOT EXISTS FOR (n:__Chunk__) REQUIRE (n.kb, n.id) IS UNIQUE",
    "CREATE CONSTRAINT driftrag_entity_key IF NOT EXISTS FOR (n:__Entity__) REQUIRE (n.kb, n.id) IS UNIQUE",
    "CREATE CONSTRAINT driftrag_community_key IF NOT EXISTS FOR (n:__Community__) REQUIRE (n.kb, n.id) IS UNIQUE",
    # Relationship ids are unique per kb too (Community edition checks relationship uniqueness since 5.7);
    # its index serves the paged reads of one kb's relationships in id order (community detection).
    "CREATE CONSTRAINT driftrag_related_key IF NOT EXISTS FOR ()-[r:RELATED]-() REQUIRE (r.kb, r.id) IS UNIQUE",
    CREATE_KB_LOCK_CONSTRAINT,
    CREATE_INGEST_JOB_CONSTRAINT,
)

CREATE_LOOKUP_INDEXES = (
    CREATE_INGEST_JOB_STATE_INDEX,
    "CREATE INDEX driftrag_entity_kb_name IF NOT EXISTS FOR (n:__Entity__) ON (n.kb, n.name)",
    "CREATE INDEX driftrag_chunk_kb_document IF NOT EXISTS FOR (n:__Chunk__) ON (n.kb, n.document_id)",
    "CREATE INDEX driftrag_community_kb_level IF NOT EXISTS FOR (n:__Community__) ON (n.kb, n.level)",
    # DRIFT's HyDE template is the kb's top-rated report (ties: the larger): an ordered seek instead
    # of sorting every community of the kb (104,166 on a 1M-relationship kb).
    "CREATE INDEX driftrag_community_rating_order IF NOT EXISTS FOR (n:__Community__) ON (n.kb, n.rating, n.size)",
    "CREATE INDEX driftrag_related_id IF NOT EXISTS FOR ()-[r:RELATED]-() ON (r.id)",
    # Relationship summaries the model failed on (set only while true), counted by `stats` with a seek.
    "CREATE INDEX driftrag_related_summary_failed IF NOT EXISTS FOR ()-[r:RELATED]-() ON (r.summary_failed)",
    # Name substrings (graph search, entity search): a trigram text index answers `name CONTAINS $q`
    # with the matching entities, where the (kb, name) range index is scanned name by name.
    "CREATE TEXT INDEX driftrag_entity_name_text IF NOT EXISTS FOR (n:__Entity__) ON (n.name)",
    # The question's words over every chunk (Lucene BM25): the lexical half of the question's own chunk
    # search. The kb is indexed too, so a query keeps to its kb's chunks inside Lucene; the analyzer keeps
    # stop words because it knows no language but English (BM25's idf weighs them down anyway).
    "CREATE FULLTEXT INDEX driftrag_chunk_text IF NOT EXISTS FOR (n:__Chunk__) ON EACH [n.text, n.kb] "
    "OPTIONS {indexConfig: {`fulltext.analyzer`: 'standard-no-stop-words'}}",
    # Entity names by words, for other tools' hybrid retrievers (neo4j-graphrag's HybridRetriever, Bloom).
    "CREATE FULLTEXT INDEX driftrag_entity_name IF NOT EXISTS FOR (n:__Entity__) ON EACH [n.name, n.kb]",
    # Graph search reads seeds and rows in their ranked order and stops at the caps (markers.py):
    # a kb's valid entities shortest name first, then by name and id; and per entity its valid
    # relationships, heaviest first then by id, one index per direction.
    "CREATE INDEX driftrag_entity_seed_order IF NOT EXISTS FOR (n:__Entity__) "
    "ON (n.kb, n.valid, n.name_len, n.name, n.id)",
    "CREATE INDEX driftrag_related_out_order IF NOT EXISTS FOR ()-[r:RELATED]-() "
    "ON (r.kb, r.valid, r.out_id, r.rank_weight, r.id)",
    "CREATE INDEX driftrag_related_in_order IF NOT EXISTS FOR ()-[r:RELATED]-() "
    "ON (r.kb, r.valid, r.in_id, r.rank_weight, r.id)",
)


def create_vector_index(kind: VectorKind, index: str, vector_property: str) -> str:
    """The statement creating one vector space's index of one node kind: the label, the index name and
    the property cannot be parameters, so they are written in, each checked against a strict pattern."""
    return (
        f"CREATE VECTOR INDEX {checked_name(index)} IF NOT EXISTS FOR (n:{LABELS[kind]}) "
        f"ON n.{checked_name(vector_property)} "
        "OPTIONS {indexConfig: {`vector.dimensions`: $dimensions, `vector.similarity_function`: 'cosine'}}"
    )


SHOW_VECTOR_INDEXES = """
SHOW VECTOR INDEXES YIELD name, state, labelsOrTypes, properties, options
WHERE name STARTS WITH 'driftrag_'
RETURN name, state, labelsOrTypes AS labels, properties,
       options.indexConfig.`vector.dimensions` AS dimensions,
       toLower(options.indexConfig.`vector.similarity_function`) AS similarity
"""

DROP_VECTOR_INDEX = "DROP INDEX $name IF EXISTS"
DROP_INDEX = DROP_VECTOR_INDEX

# Whether any kb holds two relationships with one id (then their (kb, id) key cannot be created).
RELATED_IDS_REPEAT = """
MATCH ()-[r:RELATED]->()
WITH r.kb AS kb, r.id AS id, count(*) AS n WHERE n > 1
RETURN count(*) > 0 AS repeat
"""

# One kb's vectors of its space (`$cleared` maps the property to null, which removes it).
REMOVE_KB_EMBEDDINGS = """
MATCH (n) WHERE (n:__Chunk__ OR n:__Entity__ OR n:__Community__) AND n.kb = $kb AND n[$vector_property] IS NOT NULL
CALL (n) { SET n += $cleared } IN TRANSACTIONS OF 1000 ROWS
"""

# Whether a kb holds any vector in `$vector_property` (a kb of earlier versions: in the shared one).
KB_HAS_VECTORS = """
CALL () {
  MATCH (n:__Chunk__ {kb: $kb}) WHERE n[$vector_property] IS NOT NULL RETURN n LIMIT 1
  UNION
  MATCH (n:__Entity__ {kb: $kb}) WHERE n[$vector_property] IS NOT NULL RETURN n LIMIT 1
  UNION
  MATCH (n:__Community__ {kb: $kb}) WHERE n[$vector_property] IS NOT NULL RETURN n LIMIT 1
}
RETURN count(n) > 0 AS found
"""

# The vector space a kb's embeddings live in (`driftrag.models.vector_spaces`), with the embedder its
# profile names; no row for an unknown kb, a null key for a kb written before spaces existed.
MATCH_KB_VECTOR_SPACE = """
MATCH (k:__KnowledgeBase__ {kb: $kb})
RETURN k.vector_space AS key, k.vector_property AS property,
       CASE WHEN k.vector_space IS NULL THEN k.embedder ELSE k.vector_embedder END AS embedder,
       CASE WHEN k.vector_space IS NULL THEN k.embedding_dimension ELSE k.vector_dimension END AS dimension
"""

SET_KB_VECTOR_SPACE = """
MERGE (k:__KnowledgeBase__ {kb: $kb})
ON CREATE SET k.created_at = datetime(), k.graph_enabled = true, k.search_markers = 4
SET k.vector_space = $key, k.vector_property = $property, k.vector_embedder = $embedder,
    k.vector_dimension = $dimension
"""

CLEAR_KB_VECTOR_SPACE = """
MATCH (k:__KnowledgeBase__ {kb: $kb})
REMOVE k.vector_space, k.vector_property, k.vector_embedder, k.vector_dimension
"""

# Every kb with the space it uses (null: written before spaces existed, so the shared indexes).
MATCH_VECTOR_SPACES = """
MATCH (k:__KnowledgeBase__)
RETURN k.kb AS kb, k.vector_space AS key, k.vector_property AS property,
       CASE WHEN k.vector_space IS NULL THEN k.embedder ELSE k.vector_embedder END AS embedder,
       CASE WHEN k.vector_space IS NULL THEN k.embedding_dimension ELSE k.vector_dimension END AS dimension
ORDER BY k.kb
"""

AWAIT_INDEXES = "CALL db.awaitIndexes($timeout_s)"

SERVER_COMPONENTS = "CALL dbms.components() YIELD name, versions, edition RETURN name, versions, edition"
PING = "RETURN 1 AS ok"

# A vector index serves every kb of its space: fetch the nearest nodes overall, keep the kb's, and
# report how many were fetched so the caller can widen the search when too few remain.
QUERY_VECTOR_INDEX = """
CALL db.index.vector.queryNodes($index, $fetch, $vector) YIELD node, score
WITH collect({id: node.id, kb: node.kb, score: score}) AS hits
RETURN size(hits) AS fetched, [hit IN hits WHERE hit.kb = $kb | {id: hit.id, score: hit.score}][0..$k] AS rows
"""

# The full-text index is shared by all knowledge bases: `$words` names the kb (a Lucene clause, which
# may also match a kb whose id holds the same words) and the rows keep the kb's own chunks exactly.
QUERY_CHUNK_TEXT_INDEX = """
CALL db.index.fulltext.queryNodes($index, $words, {limit: $fetch}) YIELD node, score
WITH collect({id: node.id, kb: node.kb, score: score}) AS hits
RETURN size(hits) AS fetched, [hit IN hits WHERE hit.kb = $kb | {id: hit.id, score: hit.score}] AS rows
"""

# A kb with few nodes of a kind is searched exactly: its nodes read on the (kb, id) key index and each
# scored, the same (1 + cosine) / 2 the index gives. In an index shared with a large kb, a small kb's
# share of the nearest nodes is tiny, and the index lookup would fetch thousands of other kbs' nodes to
# find k of its own. More than `$exact_limit` nodes: no rows, and `total` says so.
_EXACT_VECTOR_SEARCH = """
CALL () {
  MATCH (n:%s) USING INDEX n:%s(kb, id)
  WHERE n.kb = $kb AND n.id IS NOT NULL AND n[$vector_property] IS NOT NULL
  WITH n LIMIT $exact_limit + 1
  RETURN collect(n) AS nodes
}
CALL (nodes) {
  WITH nodes WHERE size(nodes) <= $exact_limit
  UNWIND nodes AS n
  WITH n.id AS id, vector.similarity.cosine(n[$vector_property], $vector) AS score
  ORDER BY score DESC, id LIMIT $fetch
  RETURN collect({id: id, score: score}) AS rows
}
RETURN size(nodes) AS total, rows
"""
EXACT_VECTOR_SEARCH: dict[VectorKind, str] = {
    kind: _EXACT_VECTOR_SEARCH % (label, label) for kind, label in LABELS.items()
}

# Names and states of every driftrag schema object: what `ensure_schema` need not create again.
SHOW_DRIFTRAG_INDEX_STATES = """
SHOW INDEXES YIELD name, state WHERE name STARTS WITH 'driftrag_' RETURN name, state
"""
SHOW_DRIFTRAG_CONSTRAINT_NAMES = """
SHOW CONSTRAINTS YIELD name WHERE name STARTS WITH 'driftrag_' RETURN name
"""
SHOW_DRIFTRAG_CONSTRAINTS = """
SHOW CONSTRAINTS YIELD name, type, labelsOrTypes, properties
WHERE name STARTS WITH 'driftrag_'
RETURN name, 'constraint:' + type AS kind, labelsOrTypes AS labels, properties
"""

SHOW_DRIFTRAG_INDEXES = """
SHOW INDEXES YIELD name, type, labelsOrTypes, properties, owningConstraint
WHERE name STARTS WITH 'driftrag_' AND owningConstraint IS NULL
RETURN name, 'index:' + type AS kind, labelsOrTypes AS labels, properties
"""
