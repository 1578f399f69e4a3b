"""Query-time reads of the basic, local and entity searches and of DRIFT.

Validity: a chunk is searchable unless it is disabled (`enabled = false`; a missing flag counts as
enabled). An entity is valid while at least one enabled chunk MENTIONS it, a relationship while at
least one of its `source_chunk_ids` is an enabled chunk of the kb. Vector hits arrive as ids from
`QUERY_VECTOR_INDEX`; the statements below keep the valid ones and read what the context shows.

A statement that can return many rows returns them as one record instead, `rows`, a list of maps in the
statement's order (`Neo4jStore.read_value`): the driver decodes one list in one call, where each record
costs its own message and conversion (on 200 small rows, about 21 ms of client CPU against 1.6 ms).
"""

# --- details of vector hits ---------------------------------------------------------------------------

MATCH_ENABLED_CHUNKS = """
UNWIND $ids AS id
MATCH (c:__Chunk__ {kb: $kb, id: id})
WHERE coalesce(c.enabled, true)
OPTIONAL MATCH (c)-[:PART_OF]->(d:__Document__)
RETURN collect({id: c.id, text: c.text, title: coalesce(d.title, ''), pages: c.pages, ocr_pages: c.ocr_pages,
                sections: c.sections, section_titles: c.section_titles, section_kind: c.section_kind}) AS rows
"""

MATCH_VALID_ENTITIES = """
UNWIND $ids AS id
MATCH (e:__Entity__ {kb: $kb, id: id})
WHERE EXISTS { MATCH (c:__Chunk__)-[:MENTIONS]->(e) WHERE c.kb = $kb AND coalesce(c.enabled, true) }
RETURN collect({id: e.id, name: e.name, type: coalesce(e.type, ''),
                description: coalesce(e.summary, e.description, '')}) AS rows
"""

MATCH_RATED_COMMUNITIES = """
UNWIND $ids AS id
MATCH (c:__Community__ {kb: $kb, id: id})
WHERE c.full_content IS NOT NULL AND c.rating > $min_rating
RETURN collect({id: c.id, title: c.title, summary: coalesce(c.summary, ''), full_content: c.full_content,
                rating: c.rating, level: c.level, size: coalesce(c.size, 0)}) AS rows
"""

# Ties: the larger community, then the smaller id, so the choice never depends on storage order.
# The best-rated few by their small properties first (a report's text is read for those only);
# MATCH_TOP_RATED_COMMUNITY, the whole read, is the fallback when none of them has a report.
# Ordered seeks on `driftrag_community_rating_order` (kb, rating, size): the first $limit entries by
# rating and size, best first (`ORDER BY` on all three, descending, so the planner takes the index
# order: kb is fixed), end at an edge; the answer is among the entries above the edge and those equal
# to it (the ties left for the id to break). Ratings are often whole numbers, so thousands of a large
# kb's communities share the best one: PROFILE on 100,000 communities, about 150 db hits, against
# 300,000 for sorting them all and a few thousand for a seek on the rating alone.
MATCH_TOP_RATED_CANDIDATES = """
MATCH (top:__Community__)
WHERE top.kb = $kb AND top.rating IS NOT NULL AND top.size IS NOT NULL
WITH top.rating AS rating, top.size AS size
ORDER BY top.kb DESC, top.rating DESC, top.size DESC
LIMIT $limit
WITH collect([rating, size])[-1] AS edge
CALL (edge) {
  MATCH (c:__Community__) USING INDEX c:__Community__(kb, rating, size)
  WHERE c.kb = $kb AND c.rating > edge[0] AND c.size IS NOT NULL
  RETURN c
  UNION
  MATCH (c:__Community__) USING INDEX c:__Community__(kb, rating, size)
  WHERE c.kb = $kb AND c.rating = edge[0] AND c.size >= edge[1]
  RETURN c
}
WITH c
WHERE c.id IS NOT NULL
WITH c
ORDER BY c.rating DESC, c.size DESC, c.id ASC
LIMIT $limit
RETURN c.id AS id, c.title AS title, coalesce(c.summary, '') AS summary, c.full_content AS full_content,
       c.rating AS rating, c.level AS level, c.size AS size
ORDER BY rating DESC, size DESC, id ASC
"""

MATCH_TOP_RATED_COMMUNITY = """
MATCH (c:__Community__ {kb: $kb})
WHERE c.full_content IS NOT NULL AND c.rating IS NOT NULL
RETURN c.id AS id, c.title AS title, coalesce(c.summary, '') AS summary, c.full_content AS full_content,
       c.rating AS rating, c.level AS level, coalesce(c.size, 0) AS size
ORDER BY c.rating DESC, size DESC, c.id ASC
LIMIT 1
"""

# --- local context --------------------------------------------------------------------------------------

# Enabled chunks mentioning the given entities (ranked list), with the entities each mentions and the
# best rank among them. Bounded per entity: at most $scan of an entity's mentioning chunks are read (the
# first the store yields: the planner stops there), so a hub mentioned by tens of thousands of chunks
# costs $scan reads, not all of them. The best $pool chunks by those counts get their mentions of the
# given entities counted exactly (a chunk's own few MENTIONS), and are ranked again on them.
_CHUNKS_OF_ENTITIES = """
UNWIND range(0, size($ids) - 1) AS rank
MATCH (e:__Entity__ {kb: $kb, id: $ids[rank]})
WITH collect({node: e, rank: rank}) AS seeds
UNWIND seeds AS seed
CALL (seed) {
  WITH seed.node AS e
  MATCH (e)<-[:MENTIONS]-(c:__Chunk__)
  WHERE c.kb = $kb AND coalesce(c.enabled, true)
  RETURN c LIMIT $scan
}
WITH seeds, c, count(*) AS seen, min(seed.rank) AS seen_rank
"""

_CHUNKS_COUNTED = """
WITH c, [seed IN seeds WHERE EXISTS { MATCH (c)-[:MENTIONS]->(x) WHERE x = seed.node }] AS mentioned
WITH c, [seed IN mentioned | seed.node.id] AS entity_ids,
     reduce(best = size($ids), seed IN mentioned | CASE WHEN seed.rank < best THEN seed.rank ELSE best END) AS best_rank
"""

MATCH_CHUNKS_BY_MENTIONS = (
    _CHUNKS_OF_ENTITIES
    + """ORDER BY seen DESC, seen_rank ASC, c.id ASC
LIMIT $pool
"""
    + _CHUNKS_COUNTED
    + """ORDER BY size(entity_ids) DESC, best_rank ASC, c.id ASC
LIMIT $limit
OPTIONAL MATCH (c)-[:PART_OF]->(d:__Document__)
WITH c, d, entity_ids, best_rank
ORDER BY size(entity_ids) DESC, best_rank ASC, c.id ASC
RETURN collect({id: c.id, text: c.text, title: coalesce(d.title, ''), pages: c.pages, ocr_pages: c.ocr_pages,
                sections: c.sections, section_titles: c.section_titles, section_kind: c.section_kind,
                entity_ids: entity_ids, best_rank: best_rank}) AS rows
"""
)

# The same rows, ranked by the best-ranked entity first (entity search: matched names before neighbours).
MATCH_CHUNKS_BY_ENTITY_RANK = (
    _CHUNKS_OF_ENTITIES
    + """ORDER BY seen_rank ASC, seen DESC, c.id ASC
LIMIT $pool
"""
    + _CHUNKS_COUNTED
    + """ORDER BY best_rank ASC, size(entity_ids) DESC, c.id ASC
LIMIT $limit
OPTIONAL MATCH (c)-[:PART_OF]->(d:__Document__)
WITH c, d, entity_ids, best_rank
ORDER BY best_rank ASC, size(entity_ids) DESC, c.id ASC
RETURN collect({id: c.id, text: c.text, title: coalesce(d.title, ''), pages: c.pages, ocr_pages: c.ocr_pages,
                sections: c.sections, section_titles: c.section_titles, section_kind: c.section_kind,
                entity_ids: entity_ids, best_rank: best_rank}) AS rows
"""
)

# Every community the entities belong to: their finest community and its ancestors.
MATCH_COMMUNITIES_OF_ENTITIES = """
UNWIND $ids AS id
MATCH (e:__Entity__ {kb: $kb, id: id})-[:IN_COMMUNITY]->(:__Community__)-[:IN_COMMUNITY*0..]->(c:__Community__)
WHERE c.full_content IS NOT NULL
WITH c, count(DISTINCT e) AS n_entities
ORDER BY coalesce(c.rating, 0.0) DESC, n_entities DESC, c.id ASC
LIMIT $limit
RETURN collect({id: c.id, title: c.title, summary: coalesce(c.summary, ''), full_content: c.full_content,
                rating: c.rating, level: c.level, size: coalesce(c.size, 0), n_entities: n_entities}) AS rows
"""

# The members of the given communities (ranked list; an entity links to its finest community, which links
# to its ancestors), mentioned by an enabled chunk: those of the best-ranked community first, then the
# most connected (their number of relationships, read from the node's degree: a hub's count costs one
# read, not a validity check of each relationship), then by name.
MATCH_ENTITIES_OF_COMMUNITIES = """
UNWIND range(0, size($ids) - 1) AS rank
MATCH (top:__Community__ {kb: $kb, id: $ids[rank]})
MATCH (e:__Entity__ {kb: $kb})-[:IN_COMMUNITY]->(:__Community__)-[:IN_COMMUNITY*0..]->(top)
WHERE EXISTS { MATCH (c:__Chunk__)-[:MENTIONS]->(e) WHERE c.kb = $kb AND coalesce(c.enabled, true) }
WITH e, min(rank) AS via_rank
WITH e, via_rank, COUNT { (e)-[:RELATED]-() } AS degree
ORDER BY via_rank ASC, degree DESC, e.name ASC, e.id ASC
LIMIT $limit
RETURN collect({id: e.id, name: e.name, type: coalesce(e.type, ''),
                description: coalesce(e.summary, e.description, ''), via_rank: via_rank,
                weight: toFloat(degree)}) AS rows
"""

# Relationships with both ends among the given entities. A pair with an end of at most $pair_scan
# relationships is checked whole from that end (`Expand(Into)` walks the smaller degree's chain, no
# properties read); between two bigger entities, the relationships within the first $scan of either (a
# full walk of two hubs' chains costs ~165k steps for 5 hubs). Ranked by weight then id, sources checked
# until $limit pass.
MATCH_RELATIONSHIPS_AMONG_ENTITIES = """
UNWIND $ids AS id
MATCH (e:__Entity__ {kb: $kb, id: id})
WITH collect(DISTINCT e) AS seeds
CALL (seeds) {
  UNWIND range(0, size(seeds) - 1) AS i
  UNWIND range(i, size(seeds) - 1) AS j
  WITH seeds[i] AS a, seeds[j] AS b
  WHERE COUNT { (a)-[:RELATED]-() } <= $pair_scan OR COUNT { (b)-[:RELATED]-() } <= $pair_scan
  MATCH (a)-[r:RELATED]-(b)
  RETURN r
  UNION
  UNWIND seeds AS e
  WITH seeds, e WHERE COUNT { (e)-[:RELATED]-() } > $pair_scan
  CALL (e) {
    MATCH (e)-[r:RELATED]-(other:__Entity__)
    RETURN r, other LIMIT $scan
  }
  WITH r WHERE other IN seeds
  RETURN r
}
WITH DISTINCT r
ORDER BY coalesce(r.weight, 0.0) DESC, r.id ASC
WITH r
WHERE any(cid IN coalesce(r.source_chunk_ids, [])
          WHERE EXISTS { MATCH (c:__Chunk__ {kb: $kb, id: cid}) WHERE coalesce(c.enabled, true) })
WITH r LIMIT $limit
WITH r, startNode(r) AS s, endNode(r) AS t
ORDER BY coalesce(r.weight, 0.0) DESC, r.id ASC
RETURN collect({id: r.id, source_id: s.id, source: s.name, target_id: t.id, target: t.name,
                type: coalesce(r.type, ''), description: coalesce(r.summary, r.description, ''),
                weight: coalesce(r.weight, 0.0)}) AS rows
"""

# Relationships from the given entities to entities outside them (exactly one end among them). Bounded
# per entity: at most $scan of its relationships are read (the first the store yields: the planner stops
# there), ranked by weight then id, and checked for a valid source one by one until $limit pass; the
# entities' candidates are then ranked together. A hub with tens of thousands of relationships costs
# $scan reads and a sort of their weights, not a read of every relationship.
MATCH_NEIGHBOUR_RELATIONSHIPS = """
UNWIND $ids AS id
MATCH (e:__Entity__ {kb: $kb, id: id})
WITH collect(e) AS seeds
UNWIND seeds AS e
CALL (e, seeds) {
  MATCH (e)-[r:RELATED]-(other:__Entity__)
  WITH r, other LIMIT $scan
  WITH r WHERE NOT other IN seeds
  ORDER BY coalesce(r.weight, 0.0) DESC, r.id ASC
  WITH r
  WHERE any(cid IN coalesce(r.source_chunk_ids, [])
            WHERE EXISTS { MATCH (c:__Chunk__ {kb: $kb, id: cid}) WHERE coalesce(c.enabled, true) })
  RETURN r LIMIT $limit
}
WITH DISTINCT r
WITH r, startNode(r) AS s, endNode(r) AS t
ORDER BY coalesce(r.weight, 0.0) DESC, r.id ASC
LIMIT $limit
RETURN collect({id: r.id, source_id: s.id, source: s.name, target_id: t.id, target: t.name,
                type: coalesce(r.type, ''), description: coalesce(r.summary, r.description, ''),
                weight: coalesce(r.weight, 0.0)}) AS rows
"""


def _limit_from(statement: str, parameter: str) -> str:
    """`statement` with its `$limit` read from `$<parameter>`, so that reads of different limits can
    share one statement."""
    return statement.replace("$limit", "$" + parameter)


# What local search reads around its entities, in one statement (one round trip instead of four): the
# chunks that mention them (by mentions), their reported communities, the relationships among them and
# those to their neighbours; each part as its own statement above returns it, with its own limit.
MATCH_ENTITY_SURROUNDINGS = (
    "CALL () {"
    + _limit_from(MATCH_CHUNKS_BY_MENTIONS, "chunk_limit")
    + "}\nWITH rows AS chunks\nCALL () {"
    + _limit_from(MATCH_COMMUNITIES_OF_ENTITIES, "community_limit")
    + "}\nWITH chunks, rows AS communities\nCALL () {"
    + _limit_from(MATCH_RELATIONSHIPS_AMONG_ENTITIES, "relationship_limit")
    + "}\nWITH chunks, communities, rows AS among\nCALL () {"
    + _limit_from(MATCH_NEIGHBOUR_RELATIONSHIPS, "relationship_limit")
    + "}\nRETURN chunks, communities, among, rows AS outside\n"
)

# --- entity search ----------------------------------------------------------------------------------------

# Case-sensitive substring match of any of the names; exact matches first, then shorter names.
MATCH_ENTITIES_BY_NAME = """
UNWIND $names AS needle
MATCH (e:__Entity__ {kb: $kb})
WHERE e.name CONTAINS needle
  AND EXISTS { MATCH (c:__Chunk__)-[:MENTIONS]->(e) WHERE c.kb = $kb AND coalesce(c.enabled, true) }
WITH e, max(CASE WHEN e.name = needle THEN 1 ELSE 0 END) AS exact
ORDER BY exact DESC, size(e.name) ASC, e.name ASC, e.id ASC
LIMIT $limit
RETURN collect({id: e.id, name: e.name, type: coalesce(e.type, ''),
                description: coalesce(e.summary, e.description, ''), exact: exact = 1}) AS rows
"""

# One-hop neighbours of the given entities (ranked list) through valid relationships, closest to the
# best-ranked entity first, then by the strongest relationship. Bounded per entity as the relationships
# above: of its first $scan relationships, the strongest are checked for a valid source until $limit
# pass, and their other ends are the entity's neighbours.
MATCH_ENTITY_NEIGHBOURS = """
UNWIND range(0, size($ids) - 1) AS rank
MATCH (e:__Entity__ {kb: $kb, id: $ids[rank]})
WITH collect({node: e, rank: rank}) AS seeds
WITH seeds, [seed IN seeds | seed.node] AS nodes
UNWIND seeds AS seed
CALL (seed, nodes) {
  WITH seed.node AS e
  MATCH (e)-[r:RELATED]-(n:__Entity__)
  WITH r, n LIMIT $scan
  WITH r, n WHERE NOT n IN nodes
  ORDER BY coalesce(r.weight, 0.0) DESC, r.id ASC
  WITH r, n
  WHERE any(cid IN coalesce(r.source_chunk_ids, [])
            WHERE EXISTS { MATCH (c:__Chunk__ {kb: $kb, id: cid}) WHERE coalesce(c.enabled, true) })
  RETURN n, coalesce(r.weight, 0.0) AS weight LIMIT $limit
}
WITH n, min(seed.rank) AS via_rank, max(weight) AS weight
ORDER BY via_rank ASC, weight DESC, n.name ASC, n.id ASC
LIMIT $limit
RETURN collect({id: n.id, name: n.name, type: coalesce(n.type, ''),
                description: coalesce(n.summary, n.description, ''), via_rank: via_rank, weight: weight}) AS rows
"""

# --- global search ----------------------------------------------------------------------------------------

# Every report of the kb with its place in the hierarchy (a leaf has no reported sub-community) and the
# cosine of its stored embedding to the question (null without one). Global search picks a level from these.
MATCH_COMMUNITY_REPORTS = """
MATCH (c:__Community__ {kb: $kb})
WHERE c.full_content IS NOT NULL
WITH c
ORDER BY c.level ASC, c.id ASC
RETURN collect({
         id: c.id, title: c.title, full_content: c.full_content, rating: c.rating, level: c.level,
         size: coalesce(c.size, 0), report: c.report,
         leaf: NOT EXISTS {
           MATCH (child:__Community__)-[:IN_COMMUNITY]->(c) WHERE child.kb = $kb AND child.full_content IS NOT NULL
         },
         similarity: CASE WHEN c[$vector_property] IS NULL THEN null
                          ELSE vector.similarity.cosine(c[$vector_property], $vector) END
       }) AS rows
"""

# The enabled chunks of each given community (its members' source chunks), nearest to the question first
# by their stored embeddings, at most $per_community each; rows in the order of $ids.
MATCH_COMMUNITY_CHUNKS = """
UNWIND range(0, size($ids) - 1) AS rank
MATCH (c:__Community__ {kb: $kb, id: $ids[rank]})
UNWIND coalesce(c.chunk_ids, []) AS chunk_id
MATCH (ch:__Chunk__ {kb: $kb, id: chunk_id})
WHERE coalesce(ch.enabled, true)
WITH rank, c, ch,
     CASE WHEN ch[$vector_property] IS NULL THEN 0.0
          ELSE vector.similarity.cosine(ch[$vector_property], $vector) END AS similarity
ORDER BY rank ASC, similarity DESC, ch.id ASC
WITH rank, c, collect({chunk: ch, similarity: similarity})[..$per_community] AS best
UNWIND best AS hit
WITH rank, c, hit.chunk AS ch, hit.similarity AS similarity
OPTIONAL MATCH (ch)-[:PART_OF]->(d:__Document__)
WITH rank, c, ch, d, similarity
ORDER BY rank ASC, similarity DESC, ch.id ASC
RETURN collect({community_id: c.id, id: ch.id, text: ch.text, title: coalesce(d.title, ''), pages: ch.pages,
                ocr_pages: ch.ocr_pages,
                sections: ch.sections, section_titles: ch.section_titles, section_kind: ch.section_kind,
                similarity: similarity}) AS rows
"""
