"""How long a query may run: `query_timeout_s` when it is set, else long enough for its model.

A query makes some model calls one after another (DRIFT: HyDE, the primer, each round's follow-ups in
waves of as many as the workers and the model's concurrency allow, the reduce; global search: the map's
waves, the reduce; each mode says its own, `Mode.sequential_calls`). A fixed query time-out shorter than
those calls at their own time-out (`driftrag.providers.limits`: 600 s for the local provider) stops a
query whose every call is still within its time-out, as it stopped a slow local model's DRIFT at 300 s.
So, unless `query_timeout_s` is set, a query may take those calls × the call time-out + `QUERY_WORK_S` for
its retrieval, and never less than `query_timeout_s`'s default (300 s: a model API's 60 s calls keep it
for every mode but DRIFT, which gets 5 × 60 + 60 s). A call the client retries after a time-out is not
counted again: a server that let one attempt time out rarely answers the next one in time.

Before a DRIFT round, the time left is compared with the round's waves and the reduce at the pace of the
query's slowest call so far: follow-ups that would not end in time are not started (`over_time` in the
follow-up tree, degraded `time_limit`), and the query reduces what it found instead of being stopped. A
query still running at its time-out is stopped (`QueryTimeoutError`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from driftrag.providers.limits import CallLimits
from driftrag.search.modes import Mode
from driftrag.settings import Settings

TIMEOUT_SETTING = "DRIFTRAG_QUERY_TIMEOUT_S"
# The query's own work besides its model calls (retrieval, embeddings: seconds), on top of the calls.
QUERY_WORK_S = 60.0


@dataclass(frozen=True)
class QueryDeadline:
    """One query's time-out, where it came from, and the model calls' limits it was derived from."""

    timeout_s: float
    source: str
    calls: CallLimits | None = None
    started: float = field(default_factory=time.monotonic)

    def left_s(self) -> float:
        return self.started + self.timeout_s - time.monotonic()

    def waves_that_fit(self, call_s: float) -> int | None:
        """How many waves of calls of `call_s` seconds each fit in the time left; None when no call was
        measured (all answered from the cache so far)."""
        if call_s <= 0:
            return None
        return max(0, math.floor(self.left_s() / call_s))


def query_deadline(settings: Settings, mode: Mode, calls: CallLimits | None) -> QueryDeadline:
    """The deadline of a query in `mode` whose model calls have `calls` limits (None: no model)."""
    if "query_timeout_s" in settings.model_fields_set:
        return QueryDeadline(settings.query_timeout_s, TIMEOUT_SETTING, calls)
    default = QueryDeadline(settings.query_timeout_s, f"the {TIMEOUT_SETTING} default", calls)
    if calls is None or calls.timeout_s is None:
        return default
    sequential = mode.sequential_model_calls(settings, calls.concurrency)
    derived = sequential * calls.timeout_s + QUERY_WORK_S
    if derived <= settings.query_timeout_s:
        return default
    return QueryDeadline(
        derived,
        f"{sequential} model call{'s' if sequential != 1 else ''} in a row × {calls.timeout_s:g} s "
        f"({calls.timeout_source}) + {QUERY_WORK_S:g} s",
        calls,
    )
