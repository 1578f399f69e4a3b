"""The bounded one-hop graph search (read-only) and its admin switches.

A chunk is a valid source when it exists in the kb and is not disabled (a missing `enabled` counts as
enabled). Validity is checked with `EXISTS { MATCH (c:__Chunk__ {kb: $kb, id: cid}) … }`, which uses
the (kb, id) uniqueness index, so the cost is one index lookup per listed source id.
"""

MATCH_KB_GRAPH_STATUS = """
MATCH (k:__KnowledgeBase__ {kb: $kb})
RETURN coalesce(k.graph_enabled, true) AS graph_enabled
"""

# One statement, so seeds, rows and counts come from one snapshot of the graph.
# 1. Seeds: valid entities whose name contains $needle (case-sensitive), exact match first, then
#    shorter names, then alphabetical, then id; all are counted, the first $max_seeds are expanded.
# 2. Per seed: its valid RELATED relationships (either direction) to valid neighbours, heaviest
#    first. A seed without any is one row of its own, so it is still returned.
# 3. Rows are kept in seed-rank order until $max_rows; `offsets` are the rows before each seed.
# `any(…)` filters short-circuit. Source id lists of kept rows are checked lazily, in stored order, only
# until `$list_cap` valid ids are found (the response shows at most `$list_cap - 1`): a hub listed by
# tens of thousands of chunks costs `$list_cap` lookups, not one per chunk, each time it is a neighbour.
# `stored_chunk_ids` is the list's stored length, reported as the original length of a cut list.
MATCH_ONE_HOP = """
CALL () {
  MATCH (e:__Entity__ {kb: $kb})
  WHERE e.name CONTAINS $needle
    AND any(cid IN coalesce(e.source_chunk_ids, [])
            WHERE EXISTS { MATCH (c:__Chunk__ {kb: $kb, id: cid}) WHERE coalesce(c.enabled, true) })
  WITH e ORDER BY CASE WHEN e.name = $needle THEN 0 ELSE 1 END, size(e.name), e.name, e.id
  RETURN collect(e) AS matches
}
WITH size(matches) AS candidates_matched, matches[0..$max_seeds] AS seeds
CALL (seeds) {
  UNWIND range(0, size(seeds) - 1) AS rank
  WITH rank, seeds[rank] AS s
  CALL (s) {
    MATCH (s)-[r:RELATED]-(n:__Entity__ {kb: $kb})
    WITH DISTINCT r, n
    WHERE any(cid IN coalesce(r.source_chunk_ids, [])
              WHERE EXISTS { MATCH (c:__Chunk__ {kb: $kb, id: cid}) WHERE coalesce(c.enabled, true) })
      AND any(cid IN coalesce(n.source_chunk_ids, [])
              WHERE EXISTS { MATCH (c:__Chunk__ {kb: $kb, id: cid}) WHERE coalesce(c.enabled, true) })
    WITH r, n ORDER BY coalesce(r.weight, 0.0) DESC, r.id
    RETURN count(*) AS degree, collect({r: r, n: n})[0..$max_rows] AS pairs
  }
  WITH rank, s, degree, pairs ORDER BY rank
  RETURN collect({s: s, rows: CASE WHEN degree = 0 THEN 1 ELSE degree END, pairs: pairs}) AS groups
}
WITH candidates_matched, groups, reduce(acc = [0], g IN groups | acc + (last(acc) + g.rows)) AS offsets
WITH candidates_matched, last(offsets) AS rows_total,
     [i IN range(0, size(groups) - 1) WHERE offsets[i] < $max_rows
      | {s: groups[i].s, pairs: groups[i].pairs[0..($max_rows - offsets[i])]}] AS kept
RETURN candidates_matched, rows_total, [g IN kept | {
  seed: {
    id: g.s.id, name: g.s.name, type: g.s.type, description: coalesce(g.s.description, g.s.summary, ''),
    attributes: coalesce(g.s.descriptions, []),
    source_chunk_ids: COLLECT {
      UNWIND coalesce(g.s.source_chunk_ids, []) AS cid
      MATCH (c:__Chunk__ {kb: $kb, id: cid}) WHERE coalesce(c.enabled, true)
      RETURN cid LIMIT $list_cap
    },
    stored_chunk_ids: size(coalesce(g.s.source_chunk_ids, []))
  },
  pairs: [p IN g.pairs | {
    relationship: {
      id: p.r.id, source_id: startNode(p.r).id, source_name: startNode(p.r).name,
      target_id: endNode(p.r).id, target_name: endNode(p.r).name, type: p.r.type,
      description: coalesce(p.r.description, p.r.summary, ''), weight: coalesce(p.r.weight, 0.0),
      source_chunk_ids: COLLECT {
        UNWIND coalesce(p.r.source_chunk_ids, []) AS cid
        MATCH (c:__Chunk__ {kb: $kb, id: cid}) WHERE coalesce(c.enabled, true)
        RETURN cid LIMIT $list_cap
      },
      stored_chunk_ids: size(coalesce(p.r.source_chunk_ids, []))
    },
    neighbour: {
      id: p.n.id, name: p.n.name, type: p.n.type, description: coalesce(p.n.description, p.n.summary, ''),
      attributes: coalesce(p.n.descriptions, []),
      source_chunk_ids: COLLECT {
        UNWIND coalesce(p.n.source_chunk_ids, []) AS cid
        MATCH (c:__Chunk__ {kb: $kb, id: cid}) WHERE coalesce(c.enabled, true)
        RETURN cid LIMIT $list_cap
      },
      stored_chunk_ids: size(coalesce(p.n.source_chunk_ids, []))
    }
  }]
}] AS groups
"""

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
