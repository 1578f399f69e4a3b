"""The extraction's progress carries its estimate: first before any chunk, then from the rate measured so far."""

from __future__ import annotations

from driftrag.ingestion.estimate import EstimatingProgress, announced
from driftrag.ingestion.requests import Progress
from driftrag.models.estimate import ExtractionEstimate


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_the_estimate_comes_first_then_a_measured_one_after_the_first_seconds_then_now_and_then() -> None:
    seen: list[Progress] = []

    async def record(progress: Progress) -> None:
        seen.append(progress)

    clock = _Clock()
    estimate = ExtractionEstimate.before(chunks=100, mode="openai", gleanings=1, first_measure_s=30)
    progress = EstimatingProgress(estimate, record, first_s=30, every_s=300, clock=clock)
    await progress.start()
    assert seen[0] == Progress(stage="extract", done=0, total=100, message=estimate.describe(), estimate=estimate)

    async def chunk(done: int, seconds: float) -> Progress:
        clock.now += seconds
        await progress(Progress(stage="extract", done=done, total=100, message=f"chunk-{done}"))
        return seen[-1]

    assert (await chunk(1, 10)).estimate is None, "no rate after 10 s"
    measured = (await chunk(10, 20)).estimate
    assert measured is not None and measured.done == 10 and measured.seconds_left == 90 * 30 / 10
    assert seen[-1].message == "chunk-10", "the event is the extractor's, with the estimate added"
    assert (await chunk(11, 100)).estimate is None, "the next one only after every_s"
    assert (await chunk(50, 200)).estimate is not None
    assert (await chunk(100, 400)).estimate is None, "none on the last event: nothing is left"
    await progress(Progress(stage="embed-chunk", done=1, total=2))
    assert seen[-1].estimate is None


async def test_nothing_to_extract_reports_nothing() -> None:
    seen: list[Progress] = []

    async def record(progress: Progress) -> None:
        seen.append(progress)

    assert await announced(record, chunks=0, mode="offline", gleanings=1) is record and seen == []
    await announced(record, chunks=3, mode="offline", gleanings=1)
    assert [p.estimate.chunks for p in seen if p.estimate is not None] == [3]
