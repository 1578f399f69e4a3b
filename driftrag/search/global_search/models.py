"""Typed payloads, state and result of a global search: key points, report batches, the level chosen."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from driftrag.models.bounds import Cap
from driftrag.models.search import Source
from driftrag.search.models import Citations, DegradedReason, QueryResult, ResultExtras, SearchContext


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class KeyPoint(_Model):
    """One key point of a map answer, as the model writes it (citations: report handles, then ids)."""

    description: Annotated[str, Cap(800)] = Field(description="One point that helps answer the question, in Markdown.")
    score: int = Field(ge=0, le=100, description="How important the point is to the answer, 0-100.")
    citations: Citations = Field(description="Handles of the reports the point comes from.")


class MapPayload(_Model):
    """The JSON protocol of a global-search map call. Every field is required."""

    points: Annotated[list[KeyPoint], Cap(10)]
    # Set by the parser, never asked of the model: cited handles or ids the batch did not show, and
    # what it tolerated (`DegradedReason` values).
    unknown_citations: SkipJsonSchema[int | None] = None
    tolerated: SkipJsonSchema[list[DegradedReason] | None] = None


class ReportBatch(_Model):
    """The reports of one map call: consecutive in the level's order (nearest to the question first), so
    the i-th report of the batch is the `first_rank + i`-th of the level."""

    index: int = Field(ge=0)
    first_rank: int = Field(ge=0)
    context: SearchContext


class GlobalPoint(_Model):
    """A key point of one batch, with the reports (ids) it cites."""

    id: str = Field(description="`b<batch>-p<n>`, 1-based.")
    batch: int = Field(ge=0)
    description: str
    score: int = Field(ge=0, le=100)
    report_ids: list[str] = Field(default_factory=list)


LevelReason = Literal["budget", "setting", "query"]


class LevelChoice(_Model):
    """The level mapped over, why, and what the budget allowed of it."""

    level: int = Field(ge=0)
    reason: LevelReason = Field(description="budget = the finest that fits; setting or query = asked for.")
    levels: list[int] = Field(description="Every level of the kb's hierarchy.")
    n_reports: int = Field(ge=0, description="Reports of the level (its communities and coarser leaves).")
    n_mapped: int = Field(ge=0, description="Reports sent to the map (all of them when the level fits).")
    n_batches: int = Field(ge=0)
    fits: bool = Field(description="Every report of the level fits the map budget.")


class GlobalResult(QueryResult):
    mode: Literal["global"] = "global"
    level: LevelChoice | None = None
    reports: list[Source] = Field(default_factory=list, description="The reports mapped, nearest first.")
    points: list[GlobalPoint] = Field(default_factory=list, description="Every key point of the map, by batch.")
    reduced_from: list[str] = Field(default_factory=list, description="Key points given to the reduce, best first.")
    sources: list[Source] = Field(default_factory=list, description="Reports and the chunks behind the key points.")
    ranking: list[str] = Field(default_factory=list, description="Source ids for the final context, best first.")
    budget_exhausted: bool = False
    notes: list[str] = Field(default_factory=list, description="What was skipped or cut, and why.")
    seconds_by_phase: dict[str, float] = Field(default_factory=dict)

    def retrieved_sources(self) -> list[Source]:
        """The chunks behind the reduced key points (`ranking`, `driftrag.search.global_search.sources`),
        then the reports."""
        by_id = {source.id: source for source in self.sources}
        ordered = [by_id[source_id] for source_id in self.ranking if source_id in by_id]
        ranked = set(self.ranking)
        return ordered + [source for source in self.sources if source.id not in ranked]

    def extras(self) -> ResultExtras:
        return ResultExtras(notes=self.notes, community_level=self.level.level if self.level else None)

    def markdown(self, *, with_answer: bool = True) -> str:
        from driftrag.search.markdown import global_result_markdown

        return global_result_markdown(self, with_answer=with_answer)


GlobalPhase = Literal["reports", "map", "reduce"]


class GlobalProgress(_Model):
    """One streamed step of a global search: the level chosen, each map call, the reduce."""

    phase: GlobalPhase
    message: str
    done: int = 0
    total: int = 0
