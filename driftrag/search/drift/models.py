"""Typed state and result of a DRIFT query: intermediate answers, the follow-up tree, usage per phase."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from driftrag.models.search import Source
from driftrag.search.models import QueryResult, ResultExtras

FollowUpStatus = Literal["searched", "duplicate", "over_cap", "over_budget", "over_time", "failed"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class IntermediateAnswer(_Model):
    """The primer's answer (depth 0) or one follow-up local search's answer (depth >= 1)."""

    id: str = Field(description="`primer` or `d<depth>-<n>`.")
    depth: int = Field(ge=0)
    query: str
    answer: str
    score: int = Field(ge=0, le=100)
    follow_up_queries: list[str] = Field(default_factory=list, description="As proposed, before ranking.")
    source_ids: list[str] = Field(default_factory=list)
    parent_id: str | None = None
    unknown_citations: int = Field(default=0, description="Citations to handles or ids not shown (dropped).")


class FollowUp(_Model):
    """A node of the follow-up tree: every proposed query, and what became of it."""

    id: str
    query: str
    depth: int = Field(ge=1, description="The round it was proposed for.")
    parent_id: str = Field(description="The intermediate answer that proposed it.")
    relevance: float = Field(description="Cosine similarity of the query to the question.")
    status: FollowUpStatus
    duplicate_of: str | None = Field(default=None, description="The earlier query it nearly repeats.")
    answer_id: str | None = None


class DriftResult(QueryResult):
    mode: Literal["drift"] = "drift"
    sources: list[Source] = Field(default_factory=list, description="Every source any step used, once each.")
    ranking: list[str] = Field(
        default_factory=list,
        description="Source ids for the final context, by fused relevance to the question (citations count).",
    )
    hyde: str = ""
    communities: list[Source] = Field(default_factory=list, description="The reports that primed the search.")
    intermediate: list[IntermediateAnswer] = Field(default_factory=list)
    reduced_from: list[str] = Field(default_factory=list, description="Intermediate answers given to the reduce.")
    follow_ups: list[FollowUp] = Field(default_factory=list)
    budget_exhausted: bool = False
    notes: list[str] = Field(default_factory=list, description="What was skipped or cut, and why.")
    seconds_by_phase: dict[str, float] = Field(default_factory=dict)

    def retrieved_sources(self) -> list[Source]:
        """DRIFT's own ranking (`ranking`: the rank fusion of the question's searches, the follow-ups'
        searches and the answer's citations, `driftrag.search.ranking`). A result
        without it (built by hand) falls back to: cited first, then by the best score of the
        intermediate answers that cite them, then by id."""
        by_id = {source.id: source for source in self.sources}
        if self.ranking:
            ordered = [by_id[source_id] for source_id in self.ranking if source_id in by_id]
            return ordered + [s for s in by_id.values() if s.id not in set(self.ranking)]
        cited = set(self.source_ids)
        best: dict[str, int] = {}
        for answer in self.intermediate:
            for source_id in answer.source_ids:
                best[source_id] = max(best.get(source_id, -1), answer.score)
        unique = {source.id: source for source in reversed(self.sources)}
        return sorted(unique.values(), key=lambda s: (s.id not in cited, -best.get(s.id, -1), s.id))

    def extras(self) -> ResultExtras:
        return ResultExtras(intermediate_answers=self.intermediate, follow_ups=self.follow_ups, notes=self.notes)

    def markdown(self, *, with_answer: bool = True) -> str:
        from driftrag.search.markdown import drift_result_markdown

        return drift_result_markdown(self, with_answer=with_answer)


DriftPhase = Literal["hyde", "communities", "primer", "local_search", "depth", "reduce"]


class DriftProgress(_Model):
    """One streamed step of a DRIFT query, in the order the phases happen."""

    phase: DriftPhase
    message: str
    depth: int = 0
    done: int = 0
    total: int = 0
    answer_id: str | None = None
    score: int | None = None
