"""Task interfaces of the query modes, so the LLM and the offline extractive implementations interchange.

Each answer-producing task returns the same typed payloads whichever implementation runs, and may cite
only ids present in what it was given; callers drop any other id. The tasks that can give a query's
final answer (the answerer, the reducer) write its text to `stream` as they produce it, when given one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from driftrag.models.search import Source
from driftrag.search.drift.models import IntermediateAnswer
from driftrag.search.global_search.models import GlobalPoint, MapPayload, ReportBatch
from driftrag.search.models import AnswerPayload, DegradedLog, ReducedAnswer, SearchContext
from driftrag.search.streaming import AnswerStream


@runtime_checkable
class QueryEntityNamer(Protocol):
    async def entity_names(self, question: str) -> list[str]:
        """Names of entities the question mentions, as they would be written in the text."""
        ...


@runtime_checkable
class ContextAnswerer(Protocol):
    async def answer(
        self,
        question: str,
        context: SearchContext,
        *,
        max_follow_ups: int = 0,
        user_question: str | None = None,
        stream: AnswerStream | None = None,
    ) -> AnswerPayload:
        """An answer from the context only, with a 0-100 score and up to `max_follow_ups` follow-up queries.

        `user_question` is the question the user asked when `question` is a step towards it (a DRIFT
        follow-up): the score and the follow-ups are then relative to the user's question."""
        ...


@runtime_checkable
class HydeWriter(Protocol):
    async def hypothetical_report(self, question: str, template: str) -> str:
        """A hypothetical answer to the question shaped like `template` (a community report)."""
        ...


@runtime_checkable
class DriftPrimer(Protocol):
    async def prime(
        self, question: str, reports: SearchContext, *, max_follow_ups: int, entities: Sequence[Source] = ()
    ) -> AnswerPayload:
        """The intermediate answer from the top community reports, its score and follow-up queries.

        `entities` is the question's graph neighbourhood (the entities of the question and of the top
        communities, then their neighbours, best first): material for follow-ups that reach past the
        reports. An implementation may leave it unused."""
        ...


@runtime_checkable
class DriftReducer(Protocol):
    async def reduce(
        self, question: str, answers: Sequence[IntermediateAnswer], *, stream: AnswerStream | None = None
    ) -> ReducedAnswer:
        """One final answer from the intermediate answers (already filtered/ordered by score)."""
        ...


@runtime_checkable
class GlobalMapper(Protocol):
    async def map(self, question: str, batch: ReportBatch, *, max_points: int) -> MapPayload:
        """At most `max_points` key points of the batch's reports that bear on the question, each scored
        0-100 (0 = no bearing) and citing the ids of the reports it comes from."""
        ...


@runtime_checkable
class GlobalReducer(Protocol):
    async def reduce(
        self, question: str, points: Sequence[GlobalPoint], *, stream: AnswerStream | None = None
    ) -> ReducedAnswer:
        """One final answer from the key points (best first), citing the reports they cite."""
        ...


@dataclass(frozen=True)
class QueryTasks:
    """The model tasks of the query modes; `extractive` marks the offline implementations. `degraded`
    is where the tasks of one query record what they tolerated or replaced (`Degradation`)."""

    namer: QueryEntityNamer
    answerer: ContextAnswerer
    hyde: HydeWriter
    primer: DriftPrimer
    reducer: DriftReducer
    global_mapper: GlobalMapper
    global_reducer: GlobalReducer
    extractive: bool = False
    degraded: DegradedLog = field(default_factory=DegradedLog)
