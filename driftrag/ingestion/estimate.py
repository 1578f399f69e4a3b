"""The extraction step's estimate on its progress events: before the first chunk, then from the measured rate.

`announced(progress, chunks=n, mode=…, gleanings=…, attempts=…)` reports `Progress(stage="extract", done=0, total=n,
estimate=…)` and returns the callback the extractor reports through (`EstimatingProgress`), which puts a
measured estimate on one of its events after `FIRST_MEASURE_S` seconds, then every `MEASURE_EVERY_S`.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from driftrag.ingestion.requests import Progress, ProgressCallback
from driftrag.models.estimate import ExtractionEstimate

# The first measured estimate after this much extraction (a rate over fewer seconds says little), then
# one at most this often: a line in a terminal or a log now and then, not a stream.
FIRST_MEASURE_S = 30.0
MEASURE_EVERY_S = 300.0


class EstimatingProgress:
    """A `ProgressCallback` that puts the estimate on the first extraction event and a measured one on
    the first event after `first_s` seconds, then every `every_s`."""

    def __init__(
        self,
        estimate: ExtractionEstimate,
        progress: ProgressCallback,
        *,
        first_s: float = FIRST_MEASURE_S,
        every_s: float = MEASURE_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.estimate, self._progress, self._clock = estimate, progress, clock
        self._first_s, self._every_s = first_s, every_s
        self._started = self._next_at = clock()

    async def start(self) -> None:
        """The first event, before any chunk; the rate is measured from here."""
        self._started = self._clock()
        self._next_at = self._started + self._first_s
        estimate = self.estimate
        await self._progress(
            Progress(stage="extract", done=0, total=estimate.chunks, message=estimate.describe(), estimate=estimate)
        )

    async def __call__(self, progress: Progress) -> None:
        now = self._clock()
        if progress.stage == "extract" and 0 < progress.done < progress.total and now >= self._next_at:
            self._next_at = now + self._every_s
            self.estimate = self.estimate.measured(done=progress.done, elapsed_s=now - self._started)
            progress = progress.model_copy(update={"estimate": self.estimate})
        await self._progress(progress)


async def announced(
    progress: ProgressCallback, *, chunks: int, mode: str, gleanings: int, attempts: int = 1
) -> ProgressCallback:
    """Report the estimate of extracting `chunks` chunks (nothing for none) and return the callback the
    extraction reports through: `EstimatingProgress` over `progress`."""
    if chunks <= 0:
        return progress
    estimate = ExtractionEstimate.before(
        chunks=chunks, mode=mode, gleanings=gleanings, attempts=attempts, first_measure_s=FIRST_MEASURE_S
    )
    estimating = EstimatingProgress(estimate, progress)
    await estimating.start()
    return estimating
