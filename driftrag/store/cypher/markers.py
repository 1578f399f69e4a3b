"""Search markers: what graph search reads instead of checking every listed source chunk per request.

A chunk is a valid source when it exists in the kb and is not disabled (a missing `enabled` counts as
enabled). The markers persist that check:

- entity: `valid` (at least one listed chunk is a valid source) and `name_len` (`size(name)`), keys of
  the `driftrag_entity_seed_order` index, which lists a kb's valid entities shortest name first;
- both: `sources_all_valid` (every listed chunk is a valid source, so the ids shown need no lookup),
  `source_count` (stored length of `source_chunk_ids`) and `source_head` (its first 64 ids), so
  showing a few valid source ids of a hub listed by tens of thousands of chunks does not read the list;
- relationship: `sourced` (at least one listed chunk is a valid source), `valid` (`sourced` and both
  endpoints valid: a row graph search may return), and the keys of the two seed-order indexes,
  `out_id` (start node id), `in_id` (end node id; none for a loop, so it is listed once) and
  `rank_weight` (`-weight`, so an ascending index scan is "heaviest first, then id").

Every write that changes what is valid keeps them true: the entity-layer upserts compute them, and a
chunk toggle or a chunk delete refreshes the kb (`REFRESH_*`, in batches). A kb written before the
markers existed gets them from the schema setup (`MATCH_KBS_WITHOUT_MARKERS`), once.
"""

# Bumped when the markers' meaning changes, so the schema setup recomputes them for every kb.
SEARCH_MARKERS_VERSION = 4

_VALID_SOURCE = "EXISTS { MATCH (c:__Chunk__ {kb: $kb, id: cid}) WHERE coalesce(c.enabled, true) }"

MATCH_KBS_WITHOUT_MARKERS = """
MATCH (k:__KnowledgeBase__)
WHERE coalesce(k.search_markers, 0) < $version
RETURN k.kb AS kb
ORDER BY kb
"""

SET_KB_MARKERS_VERSION = """
MATCH (k:__KnowledgeBase__ {kb: $kb})
SET k.search_markers = $version
"""

# `$chunks` is a map whose keys are the changed chunk ids (a map lookup per listed id, not a list
# scan), or null to recompute everything. Only changed markers are written.
REFRESH_ENTITY_MARKERS = (
    """
MATCH (e:__Entity__ {kb: $kb}) WHERE e.id IS NOT NULL
CALL (e) {
  WITH e WHERE $chunks IS NULL OR e.valid IS NULL OR e.name_len IS NULL OR e.sources_all_valid IS NULL
            OR any(cid IN coalesce(e.source_chunk_ids, []) WHERE $chunks[cid] IS NOT NULL)
  WITH e, coalesce(e.source_chunk_ids, []) AS ids
  WITH e, ids, any(cid IN ids WHERE """
    + _VALID_SOURCE
    + """) AS valid
  WITH e, ids, valid, valid AND all(cid IN ids WHERE """
    + _VALID_SOURCE
    + """) AS clean
  WITH e, ids, valid, clean
  WHERE e.valid IS NULL OR e.valid <> valid OR e.sources_all_valid IS NULL OR e.sources_all_valid <> clean
     OR e.name_len IS NULL OR e.name_len <> size(e.name) OR e.source_count IS NULL OR e.source_count <> size(ids)
  SET e.valid = valid, e.sources_all_valid = clean, e.name_len = size(e.name), e.source_count = size(ids),
      e.source_head = ids[0..64]
} IN TRANSACTIONS OF 10000 ROWS
"""
)

# Relationships are walked in the kb's (kb, id) index order; the chunk check runs only for those that
# list a changed chunk (or have no marker yet), the endpoint check for all (an endpoint may have
# changed).
REFRESH_RELATIONSHIP_MARKERS = (
    """
MATCH (s:__Entity__)-[r:RELATED]->(t:__Entity__) WHERE r.kb = $kb AND r.id IS NOT NULL
CALL (s, r, t) {
  WITH s, r, t, coalesce(r.source_chunk_ids, []) AS ids,
       $chunks IS NULL OR r.sourced IS NULL OR r.sources_all_valid IS NULL
       OR any(cid IN coalesce(r.source_chunk_ids, []) WHERE $chunks[cid] IS NOT NULL) AS affected
  WITH s, r, t, ids, affected,
       CASE WHEN affected THEN any(cid IN ids WHERE """
    + _VALID_SOURCE
    + """) ELSE r.sourced END AS sourced
  WITH s, r, t, ids, sourced,
       CASE WHEN affected THEN sourced AND all(cid IN ids WHERE """
    + _VALID_SOURCE
    + """) ELSE r.sources_all_valid END AS clean
  WITH s, r, t, ids, sourced, clean, sourced AND coalesce(s.valid, false) AND coalesce(t.valid, false) AS valid
  WHERE r.valid IS NULL OR r.valid <> valid OR r.sourced IS NULL OR r.sourced <> sourced
     OR r.sources_all_valid IS NULL OR r.sources_all_valid <> clean
     OR r.out_id IS NULL OR r.rank_weight IS NULL OR r.rank_weight <> -coalesce(r.weight, 0.0)
     OR r.source_count IS NULL OR r.source_count <> size(ids)
  SET r.sourced = sourced, r.sources_all_valid = clean, r.valid = valid, r.out_id = s.id,
      r.in_id = CASE WHEN s <> t THEN t.id END, r.rank_weight = -coalesce(r.weight, 0.0),
      r.source_count = size(ids), r.source_head = ids[0..64]
} IN TRANSACTIONS OF 10000 ROWS
"""
)

# The same refresh for given entities and relationships only (a delete knows which list its chunks):
# entities first; the relationships of entities whose `valid` changed follow
# (`graph.REFRESH_ENDPOINT_RELATIONSHIPS`).
REFRESH_ENTITY_MARKERS_OF = (
    """
UNWIND $ids AS id
MATCH (e:__Entity__ {kb: $kb, id: id})
WITH e, e.valid AS was_valid, coalesce(e.source_chunk_ids, []) AS ids
WITH e, was_valid, ids, any(cid IN ids WHERE """
    + _VALID_SOURCE
    + """) AS valid
WITH e, was_valid, ids, valid, valid AND all(cid IN ids WHERE """
    + _VALID_SOURCE
    + """) AS clean
SET e.valid = valid, e.sources_all_valid = clean, e.name_len = size(e.name), e.source_count = size(ids),
    e.source_head = ids[0..64]
WITH e, was_valid WHERE was_valid IS NULL OR was_valid <> e.valid
RETURN collect(e.id) AS changed
"""
)

REFRESH_RELATIONSHIP_MARKERS_OF = (
    """
UNWIND $ids AS id
MATCH (s:__Entity__)-[r:RELATED]->(t:__Entity__)
WHERE r.kb = $kb AND r.id = id
WITH s, r, t, coalesce(r.source_chunk_ids, []) AS ids
WITH s, r, t, ids, any(cid IN ids WHERE """
    + _VALID_SOURCE
    + """) AS sourced
WITH s, r, t, ids, sourced, sourced AND all(cid IN ids WHERE """
    + _VALID_SOURCE
    + """) AS clean
SET r.sourced = sourced, r.sources_all_valid = clean,
    r.valid = sourced AND coalesce(s.valid, false) AND coalesce(t.valid, false),
    r.source_count = size(ids), r.source_head = ids[0..64]
"""
)

# The chunks of one document, read before they are deleted (their ids are what the refresh checks).
MATCH_DOCUMENT_CHUNK_IDS = """
MATCH (c:__Chunk__ {kb: $kb, document_id: $document_id})
RETURN collect(c.id) AS ids
"""

# Parts of the entity-layer upserts (graph.py): the markers computed as the rows are written.
ENTITY_MARKERS_SET = (
    "e.valid = any(cid IN coalesce(row.source_chunk_ids, []) WHERE "
    + _VALID_SOURCE
    + "), e.sources_all_valid = size(coalesce(row.source_chunk_ids, [])) > 0 "
    "AND all(cid IN coalesce(row.source_chunk_ids, []) WHERE "
    + _VALID_SOURCE
    + "), e.name_len = size(row.name), e.source_count = size(coalesce(row.source_chunk_ids, [])), "
    "e.source_head = coalesce(row.source_chunk_ids, [])[0..64]"
)
RELATIONSHIP_MARKERS_SET = (
    "r.sourced = any(cid IN coalesce(row.source_chunk_ids, []) WHERE "
    + _VALID_SOURCE
    + "), r.sources_all_valid = size(coalesce(row.source_chunk_ids, [])) > 0 "
    "AND all(cid IN coalesce(row.source_chunk_ids, []) WHERE "
    + _VALID_SOURCE
    + "), r.out_id = s.id, r.in_id = CASE WHEN s <> t THEN t.id END, r.rank_weight = -coalesce(row.weight, 0.0), "
    "r.source_count = size(coalesce(row.source_chunk_ids, [])), "
    "r.source_head = coalesce(row.source_chunk_ids, [])[0..64]"
)
