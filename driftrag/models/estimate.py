"""What an extraction step is about to cost, said before it starts: `ExtractionEstimate`.

    estimate = ExtractionEstimate.before(chunks=20, mode="openai", gleanings=1, attempts=2, first_measure_s=30)
    estimate.describe()         # "estimate: 20 chunks to extract, about 50–120 model calls: extraction 40–80 (…); …"
    estimate.warning()          # "a large run: …, how to limit it" (None below LARGE_RUN_CHUNKS)
    estimate.measured(done=1_200, elapsed_s=30.0).describe()   # "…: about 19 h 22 min left …"

The chunk counts are exact (the chunks are stored before extraction starts). The model calls are a
range with its basis: extraction's by the extractor's rule (every answer usable, up to every answer asked
again), then the summaries and community reports, which depend on the graph extraction finds and are
only counted once it is done: their range is the per-chunk rate of measured runs. A duration is only
given from a rate measured in this run, never guessed.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field

# From this many chunks a run takes hours with a model (two calls a chunk) and long offline: it is
# flagged with a warning and the ways to make it smaller.
LARGE_RUN_CHUNKS = 5_000
# Summaries and community reports per extracted chunk, as measured on the sample corpus with small and
# large models (1.25 and 1.8 with 0.5B and 135M local models; fewer on corpora that repeat few names).
LATER_CALLS_PER_CHUNK = (0.5, 2.0)


class ExtractionEstimate(BaseModel):
    """The work of one extraction step (an ingestion's new chunks, or the failed chunks asked again):
    an estimate, with its basis."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    chunks: int = Field(description="Chunks this step extracts (counted when they were stored).")
    done: int = Field(default=0, description="Of them, extracted when this estimate was made.")
    model_calls: int = Field(
        description="Extraction's model calls if every first answer is usable: chunks x (1 + gleaning rounds) "
        "with a model, 0 in the offline extractive mode."
    )
    model_calls_max: int = Field(
        default=0, description="Extraction's model calls when every answer is asked again (`extraction_attempts`)."
    )
    later_calls_min: int = Field(default=0, description="Summary and report calls after extraction, low end.")
    later_calls_max: int = Field(default=0, description="Summary and report calls after extraction, high end.")
    calls_basis: str = Field(description="How the model calls are counted, in words.")
    seconds_left: float | None = Field(
        default=None, description="Time left at the rate measured in this run; None until one is measured."
    )
    duration_basis: str = Field(description="Where `seconds_left` comes from, or when it will be known.")
    large: bool = Field(description=f"At least {LARGE_RUN_CHUNKS:,} chunks: a run that takes long.")

    @classmethod
    def before(
        cls, *, chunks: int, mode: str, gleanings: int, first_measure_s: float, attempts: int = 1
    ) -> ExtractionEstimate:
        """Before the first chunk: `mode` is the kb profile's (`offline`, else a model's), `attempts` the
        answers asked per chunk before it fails; a rate is measured after `first_measure_s` seconds."""
        duration = f"not known yet (measured once extraction has run {first_measure_s:g} s)"
        large = chunks >= LARGE_RUN_CHUNKS
        if mode == "offline":
            basis = "the offline extractive mode: local NLP on this machine's cores"
            return cls(chunks=chunks, model_calls=0, calls_basis=basis, duration_basis=duration, large=large)
        calls = chunks * (1 + gleanings)
        low, high = LATER_CALLS_PER_CHUNK
        basis = (
            f"extraction: 1 answer + {gleanings} gleaning round(s) per chunk, up to {attempts} answer(s) each "
            "when one is unusable, fewer when a round adds nothing or an answer is cached; then one summary per "
            "entity or relationship described more than once and one report per community, about "
            f"{low:g}–{high:g} a chunk in measured runs (counted when extraction ends)"
        )
        return cls(
            chunks=chunks,
            model_calls=calls,
            model_calls_max=calls * attempts,
            later_calls_min=math.ceil(chunks * low),
            later_calls_max=math.ceil(chunks * high),
            calls_basis=basis,
            duration_basis=duration,
            large=large,
        )

    def measured(self, *, done: int, elapsed_s: float) -> ExtractionEstimate:
        """The time left at this run's rate so far: `done` chunks extracted in `elapsed_s` seconds."""
        if done <= 0 or elapsed_s <= 0:
            return self
        return self.model_copy(
            update={
                "done": done,
                "seconds_left": (self.chunks - done) * elapsed_s / done,
                "duration_basis": f"the rate measured in this run: {done:,} chunks in {_duration(elapsed_s)}",
            }
        )

    def describe(self) -> str:
        """One line: what is left, the model calls and their basis, the duration and its basis."""
        if self.seconds_left is not None:
            return (
                f"estimate: about {_duration(self.seconds_left)} left for {self.chunks - self.done:,} of "
                f"{self.chunks:,} chunks to extract, at {self.duration_basis}"
            )
        if not self.model_calls:
            calls = "no model calls"
        else:
            low = self.model_calls + self.later_calls_min
            high = max(self.model_calls, self.model_calls_max) + self.later_calls_max
            calls = (
                f"about {low:,}–{high:,} model calls: extraction {self.model_calls:,}–"
                f"{max(self.model_calls, self.model_calls_max):,}, summaries and reports "
                f"{self.later_calls_min:,}–{self.later_calls_max:,}"
            )
        return (
            f"estimate: {self.chunks:,} chunks to extract, {calls} ({self.calls_basis}); duration {self.duration_basis}"
        )

    def warning(self) -> str | None:
        """For a large run: that it takes long, and the ways to make it smaller."""
        if not self.large or self.seconds_left is not None:
            return None
        ways = [
            "ingest a part of the input (a document is the unit; a kb takes more documents later)",
            "longer chunks (DRIFTRAG_CHUNK_SIZE, capped by DRIFTRAG_OFFLINE_CHUNK_SIZE with the offline embedder)",
        ]
        if self.model_calls > self.chunks:
            ways.append("DRIFTRAG_MAX_GLEANINGS=0 (one model call a chunk)")
        ways.append("DRIFTRAG_GRAPH_EXTRACTION=false (chunks and vectors only, extracted by a later run)")
        return (
            f"a large run: {self.chunks:,} chunks will take long to extract. To limit it: {'; '.join(ways)}. "
            "A stopped run resumes from the chunks already extracted."
        )


def _duration(seconds: float) -> str:
    """`42 s`, `7 min 5 s`, `3 h 12 min`, `2 d 4 h`: two units at most."""
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minutes} min"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h"
