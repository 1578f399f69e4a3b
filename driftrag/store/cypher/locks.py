"""The per-kb write lock: one `__KbLock__` node per kb, holding its owner and an expiry on the server's clock."""

from __future__ import annotations

CREATE_KB_LOCK_CONSTRAINT = (
    "CREATE CONSTRAINT driftrag_kb_lock_key IF NOT EXISTS FOR (n:__KbLock__) REQUIRE n.kb IS UNIQUE"
)

# Two modes. Exclusive (`__KbLock__.owner`): deletes and the kb-wide rebuild of the derived layers.
# Shared (one `__KbLease__` per holder): the per-document part of ingestion, which many processes may
# run at once on different documents. Exclusive excludes everything else; shared excludes exclusive.
# Every acquisition first MERGEs the kb's `__KbLock__` node and writes it (`l.claimed_at`), which takes
# the node's write lock until commit, so acquisitions of one kb are serialised and each sees the
# committed state of the others (owner, expiries, leases). Expired holders (dead processes) are ignored.
# Writer preference: an exclusive acquisition that has to wait leaves a `__KbWaiter__` node (its own
# expiry, renewed by each retry), and no new shared lease is granted while one is live. Without it a
# steady stream of ingestion workers, each starting before the last ends, could starve the kb-wide step.
ACQUIRE_KB_LOCK = """
MERGE (l:__KbLock__ {kb: $kb})
ON CREATE SET l.expires_at = 0
SET l.claimed_at = timestamp()
WITH l
OPTIONAL MATCH (s:__KbLease__ {kb: $kb}) WHERE s.expires_at >= timestamp() AND s.owner <> $owner
WITH l, collect(s.owner) AS sharers, max(s.expires_at) AS shared_until
WITH l, sharers, shared_until,
     size(sharers) = 0 AND (l.owner IS NULL OR l.owner = $owner OR l.expires_at < timestamp()) AS free
FOREACH (_ IN CASE WHEN free THEN [1] ELSE [] END | SET l.owner = $owner, l.expires_at = timestamp() + $ttl_ms)
WITH l, sharers, shared_until, free
CALL (free) {
  WITH free WHERE NOT free
  MERGE (w:__KbWaiter__ {kb: $kb, owner: $owner})
  SET w.expires_at = timestamp() + $ttl_ms
}
CALL (free) {
  WITH free WHERE free
  OPTIONAL MATCH (w:__KbWaiter__ {kb: $kb})
  WHERE w.owner = $owner OR w.expires_at < timestamp() - 3600000
  DELETE w
}
RETURN free AS acquired,
       CASE WHEN size(sharers) > 0 AND NOT (l.owner IS NOT NULL AND l.expires_at >= timestamp())
            THEN size(sharers) + ' ingestion worker(s), e.g. ' + sharers[0] ELSE l.owner END AS owner,
       CASE WHEN size(sharers) > 0 AND NOT (l.owner IS NOT NULL AND l.expires_at >= timestamp())
            THEN shared_until - timestamp() ELSE l.expires_at - timestamp() END AS expires_in_ms
"""

ACQUIRE_KB_LEASE = """
MERGE (l:__KbLock__ {kb: $kb})
ON CREATE SET l.expires_at = 0
SET l.claimed_at = timestamp()
WITH l, l.owner IS NULL OR l.owner = $owner OR l.expires_at < timestamp() AS unlocked
OPTIONAL MATCH (w:__KbWaiter__ {kb: $kb}) WHERE w.expires_at >= timestamp()
WITH l, unlocked, collect(w.owner) AS waiters, max(w.expires_at) AS waiting_until
WITH l, unlocked, waiters, waiting_until, unlocked AND size(waiters) = 0 AS free
CALL (l, free) {
  WITH l WHERE free
  MERGE (s:__KbLease__ {kb: $kb, owner: $owner})
  SET s.expires_at = timestamp() + $ttl_ms
}
RETURN free AS acquired,
       CASE WHEN unlocked AND size(waiters) > 0 THEN 'a kb-wide step waiting to start (' + waiters[0] + ')'
            ELSE l.owner END AS owner,
       CASE WHEN unlocked AND size(waiters) > 0 THEN waiting_until - timestamp()
            ELSE l.expires_at - timestamp() END AS expires_in_ms
"""

RENEW_KB_LOCK = """
MATCH (l:__KbLock__ {kb: $kb, owner: $owner})
SET l.expires_at = timestamp() + $ttl_ms
RETURN count(l) AS renewed
"""

RENEW_KB_LEASE = """
MATCH (s:__KbLease__ {kb: $kb, owner: $owner})
SET s.expires_at = timestamp() + $ttl_ms
RETURN count(s) AS renewed
"""

# The node stays (owner cleared) rather than being deleted: shared holders MERGE it too.
RELEASE_KB_LOCK = """
MATCH (l:__KbLock__ {kb: $kb, owner: $owner})
SET l.owner = null, l.expires_at = 0
"""

# Also drops leases of this kb that expired long ago (their holders died), so they do not pile up.
RELEASE_KB_LEASE = """
MATCH (s:__KbLease__ {kb: $kb})
WHERE s.owner = $owner OR s.expires_at < timestamp() - 3600000
DELETE s
"""

# An exclusive acquisition that stops waiting (cancelled, interrupted) withdraws its claim at once
# rather than blocking new shared leases until the claim expires.
WITHDRAW_KB_WAITER = """
MATCH (w:__KbWaiter__ {kb: $kb, owner: $owner})
DELETE w
"""

# A deleted kb's lock node goes once nobody holds or waits for it (a later writer MERGEs it again). The
# node is written first (`l.claimed_at`), as an acquisition does: that takes its write lock, so the
# checks below see the committed state of every acquisition, and none can slip in between.
_DISCARD_KB_LOCK = """
MATCH (l:__KbLock__ {kb: $kb})
SET l.claimed_at = timestamp()
WITH l
WHERE (l.owner IS NULL OR l.expires_at < timestamp())
  AND NOT EXISTS { MATCH (s:__KbLease__ {kb: $kb}) WHERE s.expires_at >= timestamp() }
  AND NOT EXISTS { MATCH (w:__KbWaiter__ {kb: $kb}) WHERE w.expires_at >= timestamp() }
"""
_DELETE_WITH_LEASES = """
OPTIONAL MATCH (stale) WHERE (stale:__KbLease__ OR stale:__KbWaiter__) AND stale.kb = $kb
DETACH DELETE l, stale
"""
DISCARD_KB_LOCK = _DISCARD_KB_LOCK + _DELETE_WITH_LEASES

# The same on every release, for a kb that does not exist: a refused ingestion (a bad file, another
# embedder's kb) or a deleted kb leaves no lock or lease behind.
DISCARD_ORPHAN_KB_LOCK = (
    _DISCARD_KB_LOCK + "  AND NOT EXISTS { MATCH (:__KnowledgeBase__ {kb: $kb}) }\n" + _DELETE_WITH_LEASES
)
