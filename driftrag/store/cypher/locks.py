"""The per-kb write lock: one `__KbLock__` node per kb, holding its owner and an expiry on the server's clock."""

from __future__ import annotations

CREATE_KB_LOCK_CONSTRAINT = (
    "CREATE CONSTRAINT driftrag_kb_lock_key IF NOT EXISTS FOR (n:__KbLock__) REQUIRE n.kb IS UNIQUE"
)

# MERGE on the unique key, then a write (`l.claimed_at`) takes the node's write lock before its owner is
# read, so two contenders are serialised: the second sees the first's owner and expiry. An expired lock
# (its holder died without releasing it) is taken over.
ACQUIRE_KB_LOCK = """
MERGE (l:__KbLock__ {kb: $kb})
ON CREATE SET l.owner = $owner, l.expires_at = timestamp() + $ttl_ms
SET l.claimed_at = timestamp()
WITH l, l.owner = $owner OR l.expires_at < timestamp() AS free
FOREACH (_ IN CASE WHEN free THEN [1] ELSE [] END | SET l.owner = $owner, l.expires_at = timestamp() + $ttl_ms)
RETURN l.owner = $owner AS acquired, l.owner AS owner, l.expires_at - timestamp() AS expires_in_ms
"""

RENEW_KB_LOCK = """
MATCH (l:__KbLock__ {kb: $kb, owner: $owner})
SET l.expires_at = timestamp() + $ttl_ms
RETURN count(l) AS renewed
"""

RELEASE_KB_LOCK = """
MATCH (l:__KbLock__ {kb: $kb, owner: $owner})
DELETE l
"""
