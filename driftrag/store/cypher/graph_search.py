"""The bounded one-hop graph search (read-only) and its admin switches.

A chunk is a valid source when it exists in the kb and is not disabled (a missing `enabled` counts as
enabled). Which entities and relationships have one is persisted as search markers (markers.py); the
source id lists shown are checked with `EXISTS`-style lookups on the (kb, id) uniqueness index.
"""

# `deleting`: a delete of the kb has started (graph.SET_KB_DELETING); readers refuse the kb.
MATCH_KB_GRAPH_STATUS = """
MATCH (k:__KnowledgeBase__ {kb: $kb})
RETURN coalesce(k.graph_enabled, true) AS graph_enabled, coalesce(k.search_markers, 0) AS search_markers,
       coalesce(k.graph_stale, false) AS stale, coalesce(k.deleting, false) AS deleting
"""

# One statement, so seeds, rows and counts come from one snapshot of the graph. It reads the search
# markers (markers.py), not the chunks, to know what is valid, and reads everything in ranked order
# from an index, stopping at the caps. Counts are exact up to their limit and marked as lower bounds
# beyond it (`$candidate_limit`, `$row_limit`).
#
# 1. Seeds, two ways to find them (the statements below):
#    - MATCH_ONE_HOP_BY_TEXT: the text index finds the valid entities whose name contains $needle (at
#      most $candidate_limit + 1, so the count stops there). Up to the limit they are all ranked here;
#      beyond it the match is dense, so the ranked seed-order scan finds $max_seeds of them quickly.
#    - MATCH_ONE_HOP_BY_SCAN (needles too short for trigrams): the seed-order scan alone, counting up
#      to the limit as it goes.
#    The seed order is (name length, name, id): an exact match has the shortest name that can
#    contain the needle, so it comes first.
# 2. Per seed, its rows are counted up to the limit on the two seed-order relationship indexes (no
#    relationship is read); a seed without any is one row of its own. Rows are kept in seed-rank
#    order until $max_rows; `offsets` are the rows before each seed.
# 3. Only the kept seeds are expanded: each direction's index yields its heaviest valid relationships
#    first, at most $max_rows of them, and the two lists are merged.
# Source id lists of kept rows are checked lazily, in stored order, only until `$list_cap` valid ids
# are found (the response shows at most `$list_cap - 1`): a hub listed by tens of thousands of chunks
# costs `$list_cap` lookups. `stored_chunk_ids` is the list's stored length.
_SEED_ORDER_SCAN = """
  MATCH (e:__Entity__)
  WHERE e.kb = $kb AND e.valid = true AND e.name_len >= size($needle) AND e.name CONTAINS $needle
    AND e.id IS NOT NULL
  WITH e ORDER BY e.kb, e.valid, e.name_len, e.name, e.id
"""

_SEEDS_BY_TEXT = (
    """
CALL () {
  MATCH (e:__Entity__) USING TEXT INDEX e:__Entity__(name)
  WHERE e.name CONTAINS $needle
  WITH e WHERE e.kb = $kb AND e.valid = true
  WITH e LIMIT $candidate_limit + 1
  RETURN collect(e) AS sample
}
CALL (sample) {
  WITH sample WHERE size(sample) <= $candidate_limit
  UNWIND sample AS e
  WITH e ORDER BY e.name_len, e.name, e.id LIMIT $max_seeds
  RETURN collect(e) AS few
}
CALL (sample) {
  WITH sample WHERE size(sample) > $candidate_limit
"""
    + _SEED_ORDER_SCAN
    + """
  LIMIT $max_seeds
  RETURN collect(e) AS many
}
WITH size(sample) AS matched, few + many AS seeds
"""
)

_SEEDS_BY_SCAN = (
    """
CALL () {
"""
    + _SEED_ORDER_SCAN
    + """
  LIMIT $candidate_limit + 1
  RETURN collect(e) AS sample
}
WITH size(sample) AS matched, sample[0..$max_seeds] AS seeds
"""
)

# A node's or relationship's source ids: the first `$list_cap` valid ones in stored order. When every
# listed chunk is valid (`sources_all_valid`, markers.py) they are the list's first ids, read from its
# stored head (`source_head`), so a hub listed by tens of thousands of chunks is not read whole and no
# chunk is looked up. Otherwise the head is checked first, and the whole list only when the head has too
# few valid ids. The checks are subquery expressions inside CASE, which Neo4j evaluates only on their
# branch: a clean row (nearly all of them) is one projection, with no subquery call of its own.
_VALID_IDS_OF = (
    "COLLECT {{ UNWIND {ids} AS cid MATCH (c:__Chunk__ {{kb: $kb, id: cid}}) WHERE coalesce(c.enabled, true) "
    "RETURN cid LIMIT $list_cap }}"
)
_SOURCES = f"""
  WITH x, coalesce(x.source_head, x.source_chunk_ids, []) AS head_ids,
       coalesce(x.source_count, size(coalesce(x.source_chunk_ids, []))) AS stored,
       coalesce(x.sources_all_valid, false) AS clean
  WITH x, stored,
       CASE WHEN clean AND (size(head_ids) >= $list_cap OR stored <= size(head_ids)) THEN head_ids[0..$list_cap]
            WHEN clean THEN coalesce(x.source_chunk_ids, [])[0..$list_cap]
            ELSE [head IN [{_VALID_IDS_OF.format(ids="head_ids")}] |
                  CASE WHEN size(head) >= $list_cap OR stored <= size(head_ids) THEN head
                       ELSE {_VALID_IDS_OF.format(ids="coalesce(x.source_chunk_ids, [])")} END][0] END AS sources
"""

# Rows are lists, not maps: a hub's answer holds 4,000 of them, and keys repeated in each cost a fifth of its
# bytes and decoding. An entity's are in the field order of `OneHopEntity` (driftrag.models.search); a
# relationship's lack its endpoints, which its pair gives (its seed, and the neighbour's id).
_ENTITY = (
    "CALL (x) {"
    + _SOURCES
    + """
  RETURN [x.id, x.name, x.type, coalesce(x.description, x.summary, ''), coalesce(x.descriptions, []), sources,
          stored] AS projected
}
"""
)

_RELATIONSHIP = (
    "CALL (x) {"
    + _SOURCES
    + """
  RETURN [x.id, x.type, coalesce(x.description, x.summary, ''), coalesce(x.weight, 0.0), sources, stored]
         AS projected
}
"""
)

# The kept rows as the caller reads them, streamed in parts of at most `$part_rows` pairs, one record per
# part, so the caller shapes each part while the next is projected (a hub's 2,000 rows are 1.8 MB: read
# as one record, Neo4j's projection and the caller's decoding and shaping ran one after the other).
# - `flat`: every kept pair `[seed index, relationship, neighbour, outgoing]`, in seed-rank order then
#   heaviest first; `outgoing`: the seed is the relationship's start.
# - `firsts`: each distinct neighbour once, with the part of its first pair: a neighbour is projected once
#   (a hub next to many seeds too), in the part that first needs it. A relationship's endpoints are its
#   seed and its neighbour: only the neighbour's id is read, from the relationship's endpoint marker (the
#   same the expansion seeks on), and no name again (the caller has them). RELATED only joins entities,
#   so the rows are not checked for the label.
# - Each part: its pairs `[seed index, outgoing, neighbour id, relationship]` in order, its new neighbours, and in
#   the first part (the only one when nothing matched) every kept seed in rank order. `parts` is their
#   number, so the caller knows the answer whole.
_PROJECT = (
    """
CALL (kept_groups) {
  UNWIND range(0, size(kept_groups) - 1) AS i
  UNWIND range(0, size(kept_groups[i].pairs) - 1) AS j
  WITH i, j, kept_groups[i].pairs[j] AS p ORDER BY i, j
  RETURN collect([i, p.r, p.n, p.outgoing]) AS flat
}
CALL (flat) {
  UNWIND range(0, size(flat) - 1) AS k
  WITH flat[k][2] AS n, min(k) AS first
  RETURN collect([first / $part_rows, n]) AS firsts
}
WITH candidates_matched, candidates_matched_is_lower_bound, rows_total, rows_total_is_lower_bound, kept_groups,
     flat, firsts, CASE WHEN size(flat) = 0 THEN 1 ELSE (size(flat) + $part_rows - 1) / $part_rows END AS parts
UNWIND range(0, parts - 1) AS part
CALL (part, kept_groups) {
  WITH part, kept_groups WHERE part = 0
  UNWIND range(0, size(kept_groups) - 1) AS i
  WITH i, kept_groups[i].s AS x
"""
    + _ENTITY
    + """
  WITH i, projected ORDER BY i
  RETURN collect(projected) AS seeds
}
CALL (part, flat) {
  UNWIND range(part * $part_rows, part * $part_rows + $part_rows - 1) AS k
  WITH k, flat[k] AS f WHERE f IS NOT NULL
  WITH k, f[0] AS seed_index, f[1] AS x, f[3] AS outgoing
  WITH k, seed_index, x, outgoing, CASE WHEN outgoing THEN x.in_id ELSE x.out_id END AS neighbour_id
"""
    + _RELATIONSHIP
    + """
  WITH k, seed_index, outgoing, neighbour_id, projected ORDER BY k
  RETURN collect([seed_index, outgoing, neighbour_id, projected]) AS pairs
}
CALL (part, firsts) {
  UNWIND [f IN firsts WHERE f[0] = part | f[1]] AS x
"""
    + _ENTITY
    + """
  RETURN collect(projected) AS neighbours
}
RETURN candidates_matched, candidates_matched_is_lower_bound, rows_total, rows_total_is_lower_bound,
       parts, part, seeds, pairs, neighbours
"""
)

_EXPAND = (
    """
WITH CASE WHEN matched > $candidate_limit THEN $candidate_limit ELSE matched END AS candidates_matched,
     matched > $candidate_limit AS candidates_matched_is_lower_bound, seeds
CALL (seeds) {
  UNWIND range(0, size(seeds) - 1) AS rank
  WITH rank, seeds[rank] AS s
  CALL (s) {
    MATCH ()-[r:RELATED]->()
    WHERE r.kb = $kb AND r.valid = true AND r.out_id = s.id AND r.rank_weight IS NOT NULL AND r.id IS NOT NULL
    WITH r LIMIT $row_limit + 1
    RETURN count(r) AS outgoing
  }
  CALL (s) {
    MATCH ()-[r:RELATED]->()
    WHERE r.kb = $kb AND r.valid = true AND r.in_id = s.id AND r.rank_weight IS NOT NULL AND r.id IS NOT NULL
    WITH r LIMIT $row_limit + 1
    RETURN count(r) AS incoming
  }
  WITH rank, s, outgoing + incoming AS degree ORDER BY rank
  RETURN collect({s: s, rows: CASE WHEN degree = 0 THEN 1 WHEN degree > $row_limit THEN $row_limit + 1
                                    ELSE degree END}) AS counted
}
WITH candidates_matched, candidates_matched_is_lower_bound, counted,
     reduce(acc = [0], g IN counted | acc + (last(acc) + g.rows)) AS offsets
WITH candidates_matched, candidates_matched_is_lower_bound,
     CASE WHEN last(offsets) > $row_limit THEN $row_limit ELSE last(offsets) END AS rows_total,
     last(offsets) > $row_limit AS rows_total_is_lower_bound,
     [i IN range(0, size(counted) - 1) WHERE offsets[i] < $max_rows
      | {s: counted[i].s, room: $max_rows - offsets[i]}] AS kept
CALL (kept) {
  UNWIND range(0, size(kept) - 1) AS i
  WITH i, kept[i].s AS s, kept[i].room AS room
  CALL (s) {
    CALL (s) {
      MATCH ()-[r:RELATED]->(n)
      WHERE r.kb = $kb AND r.valid = true AND r.out_id = s.id AND r.rank_weight IS NOT NULL AND r.id IS NOT NULL
      WITH r, n ORDER BY r.kb, r.valid, r.out_id, r.rank_weight, r.id LIMIT $max_rows
      RETURN r, n, r.rank_weight AS w, r.id AS rid, true AS outgoing
      UNION ALL
      MATCH (n)-[r:RELATED]->()
      WHERE r.kb = $kb AND r.valid = true AND r.in_id = s.id AND r.rank_weight IS NOT NULL AND r.id IS NOT NULL
      WITH r, n ORDER BY r.kb, r.valid, r.in_id, r.rank_weight, r.id LIMIT $max_rows
      RETURN r, n, r.rank_weight AS w, r.id AS rid, false AS outgoing
    }
    WITH r, n, outgoing ORDER BY w, rid LIMIT $max_rows
    RETURN collect({r: r, n: n, outgoing: outgoing}) AS pairs
  }
  WITH i, s, pairs[0..room] AS pairs ORDER BY i
  RETURN collect({s: s, pairs: pairs}) AS kept_groups
}
WITH candidates_matched, candidates_matched_is_lower_bound, rows_total, rows_total_is_lower_bound, kept_groups
"""
    + _PROJECT
)

# The kb's switches are read by the same statement: a graph search is one round trip (a separate status
# read was a third of an exact-name search's time). No record: no such kb. A disabled graph, or search
# markers older than `$markers_version`, return one record of the switches alone (the search's columns
# null); else every part's record holds them.
_KB_STATUS = """
MATCH (k:__KnowledgeBase__ {kb: $kb})
WITH coalesce(k.graph_enabled, true) AS graph_enabled, coalesce(k.search_markers, 0) AS search_markers,
     coalesce(k.deleting, false) AS deleting
OPTIONAL CALL (graph_enabled, search_markers, deleting) {
  WITH graph_enabled, search_markers WHERE graph_enabled AND search_markers >= $markers_version AND NOT deleting
"""
_WITH_STATUS = """}
RETURN graph_enabled, search_markers, deleting, candidates_matched, candidates_matched_is_lower_bound, rows_total,
       rows_total_is_lower_bound, parts, part, seeds, pairs, neighbours
"""

MATCH_ONE_HOP_BY_TEXT = _KB_STATUS + _SEEDS_BY_TEXT + _EXPAND + _WITH_STATUS
MATCH_ONE_HOP_BY_SCAN = _KB_STATUS + _SEEDS_BY_SCAN + _EXPAND + _WITH_STATUS

# --- admin switches -------------------------------------------------------------------------------------

SET_CHUNKS_ENABLED = """
UNWIND $ids AS id
MATCH (c:__Chunk__ {kb: $kb, id: id})
SET c.enabled = $enabled
RETURN count(c) AS matched
"""

SET_GRAPH_ENABLED = """
MATCH (k:__KnowledgeBase__ {kb: $kb})
SET k.graph_enabled = $enabled
RETURN count(k) AS matched
"""
