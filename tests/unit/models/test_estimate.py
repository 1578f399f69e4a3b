"""The extraction estimate: exact chunk counts, model calls by the extractor's rule, a duration only
from a measured rate, and a warning with the ways to limit a large run."""

from __future__ import annotations

from driftrag.models.estimate import LARGE_RUN_CHUNKS, ExtractionEstimate


def test_with_a_model_each_chunk_costs_its_answer_and_its_gleaning_rounds() -> None:
    estimate = ExtractionEstimate.before(chunks=1200, mode="openai", gleanings=2, first_measure_s=30)
    assert estimate.model_calls == 3600 and estimate.seconds_left is None and not estimate.large
    line = estimate.describe()
    assert line.startswith("estimate: 1,200 chunks to extract, about 4,200–6,000 model calls: extraction 3,600–3,600")
    assert "(extraction: 1 answer + 2 gleaning round(s) per chunk" in line
    assert "duration not known yet (measured once extraction has run 30 s)" in line
    assert estimate.warning() is None


def test_the_range_counts_every_model_call_of_the_run_with_its_basis() -> None:
    """Extraction with its re-asks, then summaries and reports: the sample corpus's 20 chunks took 65 calls
    with a 0.5B model and 116 with a 135M one whose answers were asked again; the range holds both."""
    estimate = ExtractionEstimate.before(chunks=20, mode="openai", gleanings=1, attempts=2, first_measure_s=30)
    assert (estimate.model_calls, estimate.model_calls_max) == (40, 80)
    assert (estimate.later_calls_min, estimate.later_calls_max) == (10, 40)
    line = estimate.describe()
    assert line.startswith(
        "estimate: 20 chunks to extract, about 50–120 model calls: extraction 40–80, summaries and reports 10–40"
    )
    assert all(measured in range(50, 121) for measured in (65, 116))
    for basis in ("up to 2 answer(s) each when one is unusable", "one summary per entity or relationship", "report"):
        assert basis in line


def test_offline_there_are_no_model_calls_and_the_basis_says_what_runs_instead() -> None:
    estimate = ExtractionEstimate.before(chunks=5, mode="offline", gleanings=1, first_measure_s=30)
    assert estimate.model_calls == 0
    assert "5 chunks to extract, no model calls (the offline extractive mode: local NLP" in estimate.describe()


def test_a_measured_rate_gives_the_time_left_and_its_basis() -> None:
    estimate = ExtractionEstimate.before(chunks=46_628, mode="offline", gleanings=1, first_measure_s=30)
    measured = estimate.measured(done=628, elapsed_s=60.0)
    assert measured.seconds_left == (46_628 - 628) * 60.0 / 628  # 4,395 s
    assert measured.describe() == (
        "estimate: about 1 h 13 min left for 46,000 of 46,628 chunks to extract, at the rate measured in this "
        "run: 628 chunks in 1 min 0 s"
    )
    assert estimate.measured(done=0, elapsed_s=60.0) is estimate, "no rate from no chunk"


def test_a_large_run_is_flagged_with_the_ways_to_limit_it() -> None:
    with_model = ExtractionEstimate.before(chunks=LARGE_RUN_CHUNKS, mode="openai", gleanings=1, first_measure_s=30)
    warning = with_model.warning()
    assert with_model.large and warning is not None
    assert warning.startswith(f"a large run: {LARGE_RUN_CHUNKS:,} chunks will take long to extract. To limit it:")
    for way in ("DRIFTRAG_CHUNK_SIZE", "DRIFTRAG_MAX_GLEANINGS=0", "DRIFTRAG_GRAPH_EXTRACTION=false", "resumes"):
        assert way in warning
    offline = ExtractionEstimate.before(chunks=LARGE_RUN_CHUNKS, mode="offline", gleanings=1, first_measure_s=30)
    assert "MAX_GLEANINGS" not in (offline.warning() or ""), "gleaning rounds are model calls"
    smaller = ExtractionEstimate.before(chunks=LARGE_RUN_CHUNKS - 1, mode="openai", gleanings=1, first_measure_s=30)
    assert smaller.warning() is None
