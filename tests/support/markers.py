"""The check that a kb's stored search markers are true: equal to what a from-scratch check of its chunks
gives, after any write that changes which chunks are valid sources."""

from __future__ import annotations

from driftrag.store import Neo4jStore

# The definition of the markers, recomputed from the chunks: rows where the stored marker disagrees.
_WRONG_ENTITY_MARKERS = """
MATCH (e:__Entity__ {kb: $kb})
WITH e, any(cid IN coalesce(e.source_chunk_ids, [])
            WHERE EXISTS { MATCH (c:__Chunk__ {kb: $kb, id: cid}) WHERE coalesce(c.enabled, true) }) AS valid,
     size(e.source_chunk_ids) > 0 AND all(cid IN e.source_chunk_ids
            WHERE EXISTS { MATCH (c:__Chunk__ {kb: $kb, id: cid}) WHERE coalesce(c.enabled, true) }) AS clean
WHERE e.valid IS NULL OR e.valid <> valid OR e.sources_all_valid <> clean OR e.name_len <> size(e.name)
   OR e.source_count <> size(e.source_chunk_ids) OR e.source_head <> e.source_chunk_ids[0..64]
RETURN e.name AS name
"""

_WRONG_RELATIONSHIP_MARKERS = """
MATCH (s:__Entity__ {kb: $kb})-[r:RELATED]->(t:__Entity__)
WITH s, r, t, any(cid IN coalesce(r.source_chunk_ids, [])
                  WHERE EXISTS { MATCH (c:__Chunk__ {kb: $kb, id: cid}) WHERE coalesce(c.enabled, true) }) AS sourced,
     size(r.source_chunk_ids) > 0 AND all(cid IN r.source_chunk_ids
            WHERE EXISTS { MATCH (c:__Chunk__ {kb: $kb, id: cid}) WHERE coalesce(c.enabled, true) }) AS clean
WITH s, r, t, sourced, clean, sourced AND s.valid AND t.valid AS valid
WHERE r.valid IS NULL OR r.valid <> valid OR r.sourced <> sourced OR r.sources_all_valid <> clean
   OR r.out_id <> s.id OR r.in_id <> t.id
   OR r.rank_weight <> -r.weight OR r.source_count <> size(r.source_chunk_ids)
RETURN r.id AS id
"""


async def assert_markers_true(store: Neo4jStore, kb: str) -> None:
    assert await store.read(_WRONG_ENTITY_MARKERS, kb=kb) == []
    assert await store.read(_WRONG_RELATIONSHIP_MARKERS, kb=kb) == []
