"""One global search as plain async phases; `driftrag.workflows.global_search` runs them as steps.

Phases: plan (the guard, the question's embedding, every report with its similarity to it, the level and
its batches, `levels`; beside them the question's own chunk search, `question_chunks`) → map (one call
per batch, `global_num_workers` at once: key points scored 0-100) → reduce (the best points within
`local_context_tokens`, one call) → the sources: the chunks behind the points and the question's own
chunks, ranked together (`sources`).

Budget, as in every mode (`QueryRun`): one call and the reduce's share of prompt tokens are held back
from the start, so the reduce can always run; the map gets what is left, and the level is chosen to
fit it. Batches past the calls or tokens left are not sent (noted), a batch whose answer stays unusable
after its retries is skipped (noted), and a lost Neo4j ends the query.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from driftrag.errors import BackendUnavailableError, ModelError
from driftrag.models.search import Source
from driftrag.providers.tokens import get_encoding
from driftrag.search.budget import BudgetExhausted
from driftrag.search.deps import QueryDeps
from driftrag.search.global_search.levels import MapBudget, choose_level
from driftrag.search.global_search.models import (
    GlobalPoint,
    GlobalProgress,
    GlobalResult,
    LevelChoice,
    LevelReason,
    ReportBatch,
)
from driftrag.search.global_search.sources import CHUNKS_PER_REPORT, rank_sources
from driftrag.search.modes import start_run
from driftrag.search.question_chunks import QuestionChunks, search_question_chunks
from driftrag.search.streaming import AnswerStream
from driftrag.settings import Settings

T = TypeVar("T")
ProgressSink = Callable[[GlobalProgress], Awaitable[None]]
# Key points one map call may return: enough for a batch's themes, bounded like every model output.
POINTS_PER_BATCH = 10
# Prompt tokens of one map call besides its reports and of the reduce besides its points, with room
# for an overriding template (the packaged ones are about 390 and 260, `benchmarks/prompt_tokens.py`);
# the question is counted on top.
MAP_PROMPT_OVERHEAD_TOKENS = 600
REDUCE_PROMPT_OVERHEAD_TOKENS = 600
# The reduce may hold at most this share of the query's prompt tokens.
_REDUCE_TOKEN_SHARE = 4
NO_REPORTS = "The knowledge base has no community reports to search."
NOTHING_FOUND = "The community reports hold nothing that answers this question."


def sequential_calls(settings: Settings, concurrency: int) -> int:
    """Model calls a global query makes one after another (its time-out follows them,
    `driftrag.search.deadline`): the map's batches, at most the call budget less the reduce, in waves of as
    many as run at once, then the reduce."""
    at_once = max(1, min(settings.global_num_workers, concurrency))
    return math.ceil((settings.query_max_llm_calls - 1) / at_once) + 1


async def _ignore(_: GlobalProgress) -> None:
    return None


class GlobalSearch:
    """The state of one global query. Constructing it does no I/O; run the phases in order."""

    def __init__(
        self,
        deps: QueryDeps,
        kb: str,
        question: str,
        *,
        community_level: int | None = None,
        emit: ProgressSink = _ignore,
        stream: AnswerStream | None = None,
    ) -> None:
        self.run = start_run(deps, "global", kb, question, stream=stream)
        self.deps = deps
        self.settings = deps.settings
        self.kb = self.run.kb
        self.question = question
        self.emit = emit
        self.budget = self.run.budget
        self.tasks = self.run.tasks
        self.requested, self.reason = self._requested_level(community_level)
        self.question_vector: list[float] = []
        self.question_chunks = QuestionChunks((), ())
        self.level: LevelChoice | None = None
        self.batches: list[ReportBatch] = []
        self.points: list[GlobalPoint] = []
        self.notes: list[str] = []
        self.seconds_by_phase: dict[str, float] = {}
        self.unknown_citations = 0
        question_tokens = len(get_encoding().encode(question, disallowed_special=()))
        self._map_overhead = MAP_PROMPT_OVERHEAD_TOKENS + question_tokens
        reserve = self.settings.local_context_tokens + REDUCE_PROMPT_OVERHEAD_TOKENS + question_tokens
        self.budget.hold(calls=1, tokens=min(reserve, self.settings.query_max_prompt_tokens // _REDUCE_TOKEN_SHARE))

    def _requested_level(self, community_level: int | None) -> tuple[int | None, LevelReason]:
        if community_level is not None:
            return community_level, "query"
        if self.settings.global_community_level is not None:
            return self.settings.global_community_level, "setting"
        return None, "budget"

    def map_budget(self) -> MapBudget:
        """What the map may spend: the calls and tokens left once the reduce's share is held back."""
        return MapBudget(
            calls=max(self.budget.remaining_calls, 0),
            tokens=max(self.budget.remaining_tokens, 0),
            batch_tokens=self.settings.global_map_context_tokens,
            overhead_tokens=self._map_overhead,
        )

    # --- phases ------------------------------------------------------------------------------------

    async def plan(self) -> None:
        started = time.monotonic()
        await self._retrying(self.run.ensure_available)
        self.question_vector = await self.deps.embedder.aget_query_embedding(self.question)
        store = self.deps.stores.search
        reports, self.question_chunks = await asyncio.gather(
            self._retrying(lambda: store.community_reports(self.kb, self.question_vector)),
            self._retrying(
                lambda: search_question_chunks(store, self.kb, self.question, self.question_vector, self.settings)
            ),
        )
        reports = [r for r in reports if not r.failed]
        chosen = choose_level(reports, self.map_budget(), self.requested, self.reason)
        if chosen is None:
            self.notes.append("no community reports in this knowledge base: nothing to map")
            message = "no community reports"
        else:
            self.level, self.batches = chosen
            level = self.level
            if not level.fits:
                self.notes.append(
                    f"the {level.n_reports} reports of level {level.level} do not fit the map budget: mapped the "
                    f"{level.n_mapped} nearest to the question"
                )
            message = (
                f"level {level.level} ({level.reason}) of levels {level.levels}: {level.n_mapped}/{level.n_reports} "
                f"reports in {level.n_batches} batches"
            )
        self._time("reports", started)
        await self.emit(GlobalProgress(phase="reports", message=message, total=len(self.batches)))

    async def map(self) -> None:
        started = time.monotonic()
        limit = asyncio.Semaphore(self.settings.global_num_workers)
        done = 0

        async def one(batch: ReportBatch) -> list[GlobalPoint]:
            nonlocal done
            async with limit:
                points = await self._map_batch(batch)
            done += 1
            await self.emit(
                GlobalProgress(
                    phase="map",
                    message=f"batch {batch.index + 1}: {len(batch.context.sources)} reports, {len(points)} key points",
                    done=done,
                    total=len(self.batches),
                )
            )
            return points

        found = await asyncio.gather(*(one(batch) for batch in self.batches))
        self.points = [point for points in found for point in points]
        self._time("map", started)

    async def reduce(self) -> GlobalResult:
        started = time.monotonic()
        self.budget.release()
        chosen = self._best_points()
        answer, citations = await self._reduce(chosen)
        self._time("reduce", started)
        await self.emit(GlobalProgress(phase="reduce", message=f"reduced {len(chosen)} key points"))
        reports = [source for batch in self.batches for source in batch.context.sources]
        behind = list(dict.fromkeys(report_id for point in chosen for report_id in point.report_ids))
        chunks_of = await self._retrying(
            lambda: self.deps.stores.search.community_chunks(self.kb, behind, self.question_vector, CHUNKS_PER_REPORT)
        )
        by_report = {r.id: r for r in reports}
        ordered_reports = [by_report[i] for i in behind if i in by_report]
        ordered_reports += [r for r in reports if r.id not in set(behind)]
        ranking, support = rank_sources(self.question, chosen, chunks_of, ordered_reports, self.question_chunks)
        chunks = {c.id: c for cs in [*chunks_of.values(), self.question_chunks.sources] for c in cs}
        sources: list[Source] = list(chunks.values()) + ordered_reports
        cited_reports = [i for i in dict.fromkeys(citations) if i in by_report]
        # A cited report also cites the chunk that best supports each key point drawn from it.
        cited_chunks = [support[p.id] for p in chosen if p.id in support and set(p.report_ids) & set(cited_reports)]
        return GlobalResult(
            kb=self.kb,
            question=self.question,
            answer=answer,
            source_ids=list(dict.fromkeys(cited_reports + cited_chunks)),
            unknown_citations=self.unknown_citations,
            level=self.level,
            reports=reports,
            points=self.points,
            reduced_from=[p.id for p in chosen],
            sources=sources,
            ranking=ranking,
            budget_exhausted=self.budget.refused > 0,
            notes=self.notes,
            seconds_by_phase=dict(self.seconds_by_phase),
            **self.run.accounting(
                answer=answer,
                step="global reduce",
                cited=cited_reports,
                unknown_citations=self.unknown_citations,
                sources=sources,
            ),
        )

    # --- helpers -------------------------------------------------------------------------------------

    async def _map_batch(self, batch: ReportBatch) -> list[GlobalPoint]:
        try:
            payload = await self._retrying(
                lambda: self.tasks.global_mapper.map(self.question, batch, max_points=POINTS_PER_BATCH)
            )
        except BudgetExhausted:
            self.notes.append(f"budget exhausted: batch {batch.index + 1} was not mapped")
            return []
        except BackendUnavailableError:
            raise
        except ModelError as exc:
            self.notes.append(f"batch {batch.index + 1} failed: {exc}")
            return []
        self.unknown_citations += payload.unknown_citations or 0
        shown = batch.context.ids()
        return [
            GlobalPoint(
                id=f"b{batch.index + 1}-p{n}",
                batch=batch.index,
                description=point.description,
                score=point.score,
                report_ids=[i for i in dict.fromkeys(point.citations) if i in shown],
            )
            for n, point in enumerate(payload.points, start=1)
        ]

    def _best_points(self) -> list[GlobalPoint]:
        """Points scored above 0, best first (ties: batch, then position), within `local_context_tokens`."""
        encoding = get_encoding()
        ranked = sorted(
            (p for p in self.points if p.score > 0 and p.description.strip()),
            key=lambda p: (-p.score, p.batch, int(p.id.rsplit("p", 1)[1])),
        )
        chosen: list[GlobalPoint] = []
        used = 0
        for point in ranked:
            size = len(encoding.encode(point.description, disallowed_special=())) + 16  # its id, score, sources
            if used + size > self.settings.local_context_tokens:
                self.notes.append(
                    f"the reduce kept the {len(chosen)} best of {len(ranked)} key points "
                    f"(local_context_tokens={self.settings.local_context_tokens})"
                )
                break
            chosen.append(point)
            used += size
        return chosen

    async def _reduce(self, chosen: list[GlobalPoint]) -> tuple[str, list[str]]:
        if not chosen and not self.tasks.extractive:
            return (NO_REPORTS if self.level is None else NOTHING_FOUND), []
        if not chosen:
            # The extractive reducer costs nothing and says that its answer is extractive.
            reduced = await self.tasks.global_reducer.reduce(self.question, [], stream=self.run.stream)
            return reduced.answer, []
        # Drop the weakest points until the reduce fits the prompt tokens that are left.
        for keep in range(len(chosen), 0, -1):
            try:
                reduced = await self._retrying(
                    lambda k=keep: self.tasks.global_reducer.reduce(self.question, chosen[:k], stream=self.run.stream)
                )
            except BudgetExhausted:
                continue
            if keep < len(chosen):
                self.notes.append(f"the reduce kept the {keep} best key points of {len(chosen)} to stay in budget")
            self.unknown_citations += reduced.unknown_citations or 0
            return reduced.answer, reduced.citations
        self.notes.append("budget exhausted before the reduce: the best key points are returned as they are")
        return "\n".join(f"- {p.description}" for p in chosen), [i for p in chosen for i in p.report_ids]

    def _time(self, phase: str, started: float) -> None:
        self.seconds_by_phase[phase] = round(time.monotonic() - started, 3)

    async def _retrying(self, call: Callable[[], Awaitable[T]]) -> T:
        return await self.run.retrying(call)
