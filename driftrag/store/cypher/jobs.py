"""HTTP ingestion jobs: one `__IngestJob__` node per job, keyed by (kb, id), beside the kb's graph.

Properties: `state`; `record`, the job as its GET returns it (JSON); `texts`, the submitted
`{title: text}` (JSON), kept until the job ends so that another server can resume it (`has_texts`
while it is there); `owner`, the server process running it, and `heartbeat_at`, its last sign of life
on the server's clock (ms; 0 once handed back at a shutdown); `created_at`, `finished_at` (ms), for the
listing and the retention.
"""

from __future__ import annotations

CREATE_INGEST_JOB_CONSTRAINT = (
    "CREATE CONSTRAINT driftrag_ingest_job_key IF NOT EXISTS FOR (n:__IngestJob__) REQUIRE (n.kb, n.id) IS UNIQUE"
)
# The orphan scan of every server reads the unfinished jobs of all kbs.
CREATE_INGEST_JOB_STATE_INDEX = (
    "CREATE INDEX driftrag_ingest_job_state IF NOT EXISTS FOR (n:__IngestJob__) ON (n.state)"
)

UNFINISHED = "['queued', 'running']"

CREATE_JOB = """
CREATE (j:__IngestJob__ {kb: $kb, id: $id})
SET j.state = $state, j.record = $record, j.texts = $texts, j.has_texts = true, j.owner = $owner,
    j.created_at = timestamp(), j.heartbeat_at = timestamp()
"""

# MERGE, not MATCH: a kb deleted while the job waited for its turn took the record along, and the job
# still runs. Only the owner writes: a server that lost the job to another (it stopped renewing it)
# learns so here. `$release` hands the job back (a shutdown): no owner, and stale for every server.
# `has_texts` says whether `texts` is there without reading it: texts can be megabytes, and a save
# that read or rewrote them took seconds where it takes milliseconds.
SAVE_JOB = (
    """
MERGE (j:__IngestJob__ {kb: $kb, id: $id})
ON CREATE SET j.owner = $owner, j.created_at = timestamp()
WITH j, j.owner = $owner AS owned
CALL (j, owned) {
  WITH j WHERE owned
  SET j.state = $state, j.record = $record,
      j.heartbeat_at = CASE WHEN $release THEN 0 ELSE timestamp() END,
      j.owner = CASE WHEN $release THEN null ELSE $owner END,
      j.finished_at = CASE WHEN $state IN """
    + UNFINISHED
    + """ THEN null ELSE timestamp() END
}
CALL (j, owned) {
  WITH j WHERE owned AND NOT $state IN """
    + UNFINISHED
    + """
  REMOVE j.texts, j.has_texts
}
RETURN owned, j.has_texts IS NULL AS texts_missing
"""
)

KEEP_JOB_TEXTS = """
MATCH (j:__IngestJob__ {kb: $kb, id: $id}) WHERE j.owner = $owner
SET j.texts = $texts, j.has_texts = true
"""

# The heartbeat of the jobs this server runs; returns who owns each record found (another server that
# took one over after a long silence of this one, or this one).
RENEW_JOBS = """
UNWIND $jobs AS job
MATCH (j:__IngestJob__ {kb: job.kb, id: job.id})
CALL (j) {
  WITH j WHERE j.owner = $owner
  SET j.heartbeat_at = timestamp()
}
RETURN j.kb AS kb, j.id AS id, j.owner AS owner
"""

# Unfinished jobs whose server has been silent for `$stale_ms` (it died, or handed them back), oldest
# first. The first SET takes each node's write lock, so of two servers claiming at once the second
# waits, then sees the first's heartbeat in the repeated check and leaves the job to it.
CLAIM_ORPHANED_JOBS = (
    """
MATCH (j:__IngestJob__)
WHERE j.state IN """
    + UNFINISHED
    + """ AND j.heartbeat_at < timestamp() - $stale_ms
WITH j ORDER BY j.created_at, j.id LIMIT $limit
SET j.claimed_at = timestamp()
WITH j WHERE j.state IN """
    + UNFINISHED
    + """ AND j.heartbeat_at < timestamp() - $stale_ms
SET j.owner = $owner, j.heartbeat_at = timestamp()
RETURN j.kb AS kb, j.id AS id, j.record AS record, j.texts AS texts
ORDER BY j.created_at, j.id
"""
)

MATCH_JOB = "MATCH (j:__IngestJob__ {kb: $kb, id: $id}) RETURN j.record AS record"

MATCH_JOBS = """
MATCH (j:__IngestJob__ {kb: $kb}) WHERE j.id IS NOT NULL
RETURN j.record AS record
ORDER BY j.created_at DESC, j.id DESC
LIMIT $limit
"""

# Finished jobs past the newest `$keep` of the kb go.
PRUNE_FINISHED_JOBS = """
MATCH (j:__IngestJob__ {kb: $kb}) WHERE j.id IS NOT NULL AND j.finished_at IS NOT NULL
WITH j ORDER BY j.finished_at DESC, j.id DESC SKIP $keep
DELETE j
"""

# With the kb (see `graph.DELETE_KB_NODES`); a record holds the texts of its job, so a few at a time.
DELETE_KB_JOBS = "MATCH (n:__IngestJob__ {kb: $kb}) CALL (n) { DELETE n } IN TRANSACTIONS OF 100 ROWS"
