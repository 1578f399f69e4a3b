"""One DRIFT query as a sequence of plain async phases; the workflow in `driftrag.workflows.drift`
runs them as steps, and tests can drive them directly.

Phases: HyDE (a hypothetical answer shaped like the highest-rated report) → community-report vector
search → primer (intermediate answer, score, follow-ups) → rounds of follow-up local searches, in
parallel up to `drift_num_workers`, for up to `drift_max_depth` rounds → reduce over every round's
answers, weighted by score. The question's own chunk search (by meaning and by words,
`driftrag.search.question_chunks`) is in the pool from the start; the result's `ranking` fuses every
search's ranking with the answer's citations (`driftrag.search.ranking`). One call and a share of the
prompt tokens are held back from the start so the reduce can always run inside the query's hard budget.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from driftrag.errors import BackendUnavailableError, ModelError, PromptTooLongError
from driftrag.models.search import Source
from driftrag.models.seen_rows import SeenRows
from driftrag.providers.embeddings import aembed_queries
from driftrag.providers.tokens import count_tokens
from driftrag.search.budget import BudgetExhausted
from driftrag.search.context import entity_source, unique_sources
from driftrag.search.deps import QueryDeps
from driftrag.search.drift.followups import Asked, Proposal, query_targets, select_follow_ups
from driftrag.search.drift.models import DriftProgress, DriftResult, FollowUp, IntermediateAnswer
from driftrag.search.drift.reports import reports_context
from driftrag.search.local import build_local_context
from driftrag.search.models import AnswerPayload, SearchResult
from driftrag.search.modes import start_run
from driftrag.search.question_chunks import QuestionChunks, search_question_chunks
from driftrag.search.ranking import CITED_WEIGHT, FOLLOW_UP_WEIGHT, Ranking, relevance_order
from driftrag.search.streaming import AnswerStream
from driftrag.settings import Settings

T = TypeVar("T")
ProgressSink = Callable[[DriftProgress], Awaitable[None]]
# Entities read for the question's graph neighbourhood: the top communities' members, then their neighbours.
NEIGHBOURHOOD_ENTITIES = 20
# Share of the prompt-token budget the reduce may hold at most.
_REDUCE_TOKEN_SHARE = 4
_REDUCE_PROMPT_OVERHEAD_TOKENS = 1500


async def _ignore(_: DriftProgress) -> None:
    return None


def sequential_calls(settings: Settings, concurrency: int) -> int:
    """Model calls a DRIFT query makes one after another (its time-out follows them,
    `driftrag.search.deadline`): HyDE, the primer, each round's follow-ups in waves of as many as run at
    once, the reduce."""
    return 3 + settings.drift_max_depth * math.ceil(
        settings.drift_followups_per_round / _at_once(settings, concurrency)
    )


def _at_once(settings: Settings, concurrency: int) -> int:
    return max(1, min(settings.drift_num_workers, concurrency))


class DriftSearch:
    """The state of one DRIFT query. Constructing it does no I/O; run the phases in order."""

    def __init__(
        self,
        deps: QueryDeps,
        kb: str,
        question: str,
        emit: ProgressSink = _ignore,
        stream: AnswerStream | None = None,
    ) -> None:
        self.run = start_run(deps, "drift", kb, question, stream=stream)
        self.deps = deps
        self.settings = deps.settings
        self.kb = self.run.kb
        self.question = question
        self.emit = emit
        self.budget = self.run.budget
        self.tasks = self.run.tasks
        self.search_store = deps.stores.search
        self.hyde_text = ""
        self.question_vector: list[float] = []
        self.communities: list[Source] = []
        self.neighbourhood: list[Source] = []
        self.intermediate: list[IntermediateAnswer] = []
        self.follow_ups: list[FollowUp] = []
        self.asked: list[Asked] = []
        self.sources: dict[str, Source] = {}
        self.question_chunks: list[Source] = []
        self.rankings: list[Ranking] = []
        self.notes: list[str] = []
        self.seconds_by_phase: dict[str, float] = {}
        self._hyde_vector: list[float] = []
        # The question's own searches, started by `hyde` (beside the HyDE call when there is one).
        self._question_side: asyncio.Future[tuple[QuestionChunks, list[Source]]] | None = None
        self._vectors: dict[str, list[float]] = {}
        # The candidates of every vector search of the query, read once (the follow-ups find the same ones).
        self._seen = SeenRows()
        self._workers = asyncio.Semaphore(deps.settings.drift_num_workers)
        self._round_started = time.monotonic()
        self._round_done = 0
        settings = self.settings
        answers_reduced = 1 + settings.drift_max_depth * settings.drift_followups_per_round
        reserve = answers_reduced * settings.answer_max_tokens + _REDUCE_PROMPT_OVERHEAD_TOKENS
        self.budget.hold(calls=1, tokens=min(reserve, settings.query_max_prompt_tokens // _REDUCE_TOKEN_SHARE))

    # --- phases ------------------------------------------------------------------------------------

    async def hyde(self) -> None:
        started = time.monotonic()
        # Unknown kb and disabled graph fail here, before any model call, with their own errors.
        _, template = await asyncio.gather(
            self._retrying(self.run.ensure_available),
            self._retrying(lambda: self.search_store.top_rated_report(self.kb)),
        )
        if template is None:
            self.hyde_text = self.question
            self.notes.append("no community reports in this knowledge base: HyDE used the question as is")
        elif not self.tasks.extractive and self.budget.remaining_calls < 2:
            # The primer and the reduce matter more than HyDE: a tiny budget keeps its calls for them.
            self.hyde_text = self.question
            self.notes.append("call budget too small for HyDE: searched the reports with the question")
        else:
            # The question's own vector and searches need no HyDE: they run while it is written.
            question_embedding = asyncio.ensure_future(aembed_queries(self.deps.embedder, [self.question]))
            self._question_side = asyncio.ensure_future(self._question_searches(question_embedding))
            # Its failure is the embedding's, raised here below: not logged again as never retrieved.
            self._question_side.add_done_callback(lambda task: task.cancelled() or task.exception())
            try:
                try:
                    self.hyde_text = await self._retrying(
                        lambda: self.tasks.hyde.hypothetical_report(self.question, template.text)
                    )
                except BudgetExhausted:
                    self.hyde_text = self.question
                    self.notes.append("budget exhausted before HyDE: searched with the question")
                except PromptTooLongError:
                    self.hyde_text = self.question
                    self.notes.append("the HyDE template does not fit the model's window: searched with the question")
                [self.question_vector] = await question_embedding
                if self.hyde_text == self.question:
                    self._hyde_vector = self.question_vector
                else:
                    [self._hyde_vector] = await aembed_queries(self.deps.embedder, [self.hyde_text])
            except BaseException:
                self._question_side.cancel()
                question_embedding.cancel()
                raise
        if self._question_side is None:  # no HyDE call: both vectors in one request
            self.question_vector, self._hyde_vector = await aembed_queries(
                self.deps.embedder, [self.question, self.hyde_text]
            )
            self._question_side = asyncio.ensure_future(self._question_searches(None))
        self.asked.append(Asked(id="question", query=self.question, vector=self.question_vector))
        self._time("hyde", started)
        await self.emit(DriftProgress(phase="hyde", message=f"hypothetical answer of {len(self.hyde_text)} chars"))

    async def find_communities(self) -> None:
        """The community reports nearest to the HyDE answer, beside the question's own searches (started
        by `hyde` as soon as the question's vector exists): its chunk search (by meaning, basic search's
        ranking taken deeper, and by words: DRIFT begins with what they find, and the follow-ups add to
        it) and its nearest entities; then the graph neighbourhood."""
        started = time.monotonic()
        settings = self.settings
        store, kb = self.search_store, self.kb
        if self._question_side is None:
            raise RuntimeError("find_communities runs after hyde")
        try:
            self.communities = await self._retrying(
                lambda: store.search_communities(
                    kb,
                    self._hyde_vector,
                    settings.drift_top_k_communities,
                    settings.drift_min_community_rating,
                    seen=self._seen,
                )
            )
        finally:
            if not self._question_side.done():
                await asyncio.wait([self._question_side])  # its error, if any, is raised just below
        question_chunks, nearest = self._question_side.result()
        self.question_chunks = question_chunks.sources
        self._remember(self.question_chunks)
        self.rankings.extend(question_chunks.rankings())
        self._remember(self.communities)
        self.neighbourhood = await self._retrying(lambda: self._neighbourhood(nearest))
        self._time("communities", started)
        await self.emit(
            DriftProgress(
                phase="communities",
                message=f"{len(self.communities)} reports rated above {settings.drift_min_community_rating:g}",
                total=len(self.communities),
            )
        )

    async def prime(self) -> list[FollowUp]:
        """The primer's answer and the first round's follow-ups (the question itself without reports)."""
        started = time.monotonic()
        settings = self.settings
        if not self.communities:
            self.notes.append("no community report passed the rating threshold: local search on the question")
            proposals = [Proposal(query=self.question, parent_id="question", vector=self.question_vector)]
            # The question is its own first follow-up here, so it must not count as asked already.
            self.asked = []
        else:
            context = reports_context(self.communities, settings.local_context_tokens)
            cap = max(settings.drift_followups_per_answer, settings.drift_followups_per_round)
            try:
                payload = await self._retrying(
                    lambda: self.tasks.primer.prime(
                        self.question, context, max_follow_ups=cap, entities=self.neighbourhood
                    )
                )
            except BudgetExhausted:
                payload = AnswerPayload(answer="", score=0, follow_up_queries=[], citations=[])
                self.notes.append("budget exhausted before the primer")
            primer = self._intermediate("primer", 0, self.question, payload, context.ids(), parent_id=None)
            self.intermediate.append(primer)
            proposals = await self._proposals(primer)
            if not proposals:
                # A primer without follow-ups (a weak model's, or one that fell back) would end DRIFT at
                # the reports: the question's own local search is the next best step.
                self.notes.append("the primer proposed no follow-up: local search on the question")
                proposals = [Proposal(query=self.question, parent_id="primer", vector=self.question_vector)]
                self.asked = [a for a in self.asked if a.id != "question"]
        if settings.drift_max_depth < 1:
            self.notes.append("drift_max_depth is 0: no follow-up local search")
            proposals = []
        selected = self._select(proposals, depth=1, per_answer=max(len(proposals), 1))
        self._time("primer", started)
        await self.emit(
            DriftProgress(
                phase="primer",
                message=f"primer proposed {len(proposals)} follow-ups, {len(selected)} kept",
                score=self.intermediate[0].score if self.intermediate else None,
                total=len(selected),
                answer_id="primer" if self.intermediate else None,
            )
        )
        return selected

    def start_round(self, depth: int, selected: Sequence[FollowUp]) -> list[FollowUp]:
        """The round's follow-ups that fit the budget, to search in parallel (`answer_follow_up` each, then
        `finish_round`); the rest are marked over budget."""
        self._round_started = time.monotonic()
        self._round_done = 0
        return self._within_time(self._within_budget(selected))

    async def answer_follow_up(self, depth: int, follow_up: FollowUp, total: int) -> IntermediateAnswer | None:
        """One follow-up's local search and answer (None when it failed or the budget refused it); at most
        `drift_num_workers` run at once."""
        async with self._workers:
            answer = await self._local(follow_up, depth)
        self._round_done += 1
        await self.emit(
            DriftProgress(
                phase="local_search",
                message=follow_up.query,
                depth=depth,
                done=self._round_done,
                total=total,
                answer_id=follow_up.id,
                score=answer.score if answer else None,
            )
        )
        return answer

    async def finish_round(
        self, depth: int, selected: int, answers: Sequence[IntermediateAnswer | None]
    ) -> list[FollowUp]:
        """Keep the round's answers (in the order of its follow-ups); return the next round's selection."""
        found = [answer for answer in answers if answer is not None]
        self.intermediate.extend(found)
        next_round: list[FollowUp] = []
        if depth < self.settings.drift_max_depth and found:
            proposals = await self._proposals(*found)
            next_round = self._select(proposals, depth=depth + 1, per_answer=self.settings.drift_followups_per_answer)
        self._time(f"depth-{depth}", self._round_started)
        await self.emit(
            DriftProgress(
                phase="depth",
                message=f"round {depth}: {len(found)} answers, {len(next_round)} follow-ups for the next round",
                depth=depth,
                done=len(found),
                total=selected,
            )
        )
        return next_round

    async def reduce(self) -> DriftResult:
        started = time.monotonic()
        self.budget.release()
        ranked = sorted(self.intermediate, key=lambda a: (-a.score, a.depth, a.id))
        chosen = [a for a in ranked if a.score >= self.settings.drift_min_answer_score and a.answer.strip()]
        if not chosen and ranked and ranked[0].answer.strip():
            chosen = ranked[:1]
            self.notes.append(
                f"no intermediate answer scored {self.settings.drift_min_answer_score} or more: reduced the best one"
            )
        answer, citations, reduce_unknown = await self._reduce(chosen)
        self._time("reduce", started)
        await self.emit(DriftProgress(phase="reduce", message=f"reduced {len(chosen)} intermediate answers"))
        known = set(self.sources)
        cited = [source_id for source_id in dict.fromkeys(citations) if source_id in known]
        return DriftResult(
            kb=self.kb,
            question=self.question,
            answer=answer,
            source_ids=cited,
            ranking=self._final_ranking(cited),
            unknown_citations=reduce_unknown + sum(a.unknown_citations for a in self.intermediate),
            sources=sorted(self.sources.values(), key=lambda s: (s.kind, s.id)),
            hyde=self.hyde_text,
            communities=self.communities,
            intermediate=self.intermediate,
            reduced_from=[a.id for a in chosen],
            follow_ups=self.follow_ups,
            budget_exhausted=self.budget.refused > 0 or any(f.status == "over_budget" for f in self.follow_ups),
            notes=self.notes,
            seconds_by_phase=dict(self.seconds_by_phase),
            **self.run.accounting(
                answer=answer,
                step="reduce",
                cited=cited,
                unknown_citations=reduce_unknown,
                sources=self.sources.values(),
            ),
        )

    # --- helpers -------------------------------------------------------------------------------------

    async def _question_searches(
        self, embedding: asyncio.Future[list[list[float]]] | None
    ) -> tuple[QuestionChunks, list[Source]]:
        """The question's chunk search (by meaning and by words) and its nearest entities, at once, as
        soon as its vector exists (`embedding`, or already in `question_vector`)."""
        vector = (await embedding)[0] if embedding is not None else self.question_vector
        settings, store, kb = self.settings, self.search_store, self.kb
        return await asyncio.gather(
            self._retrying(lambda: search_question_chunks(store, kb, self.question, vector, settings, seen=self._seen)),
            self._retrying(lambda: store.search_entities(kb, vector, settings.local_top_k_entities, seen=self._seen)),
        )

    async def _neighbourhood(self, nearest: Sequence[Source]) -> list[Source]:
        """The entities of the question (its `nearest` entities) and of the top communities (their
        members), then the graph neighbours of both: what the follow-ups are built from, best first. They
        are not sources of the answer; their names also tell which entities a follow-up targets."""
        store, kb = self.search_store, self.kb
        members = await store.community_entities(kb, [c.id for c in self.communities], NEIGHBOURHOOD_ENTITIES)
        seeds = unique_sources([*nearest, *(entity_source(row, origin="community") for row in members)])
        neighbours = await store.entity_neighbours(kb, [e.id for e in seeds], NEIGHBOURHOOD_ENTITIES)
        via = [seed.title for seed in seeds]
        return seeds + [entity_source(row, origin=f"neighbour:{via[row.via_rank or 0]}") for row in neighbours]

    async def _reduce(self, chosen: list[IntermediateAnswer]) -> tuple[str, list[str], int]:
        """The final answer, its citations, and how many citations the reduce wrote to handles it was
        not shown (counted with the intermediate answers' own)."""
        if not chosen:
            return "The knowledge base holds nothing that answers this question.", [], 0
        chosen = self._within_context(chosen)
        # Drop the weakest answers until the reduce fits the token budget that is left.
        for keep in range(len(chosen), 0, -1):
            try:
                reduced = await self._retrying(
                    lambda k=keep: self.tasks.reducer.reduce(self.question, chosen[:k], stream=self.run.stream)
                )
            except BudgetExhausted:
                continue
            if keep < len(chosen):
                self.notes.append(f"the reduce kept the {keep} best answers of {len(chosen)} to stay in budget")
            return reduced.answer, reduced.citations, reduced.unknown_citations or 0
        self.notes.append("budget exhausted before the reduce: the best intermediate answer is returned as is")
        return chosen[0].answer, list(chosen[0].source_ids), 0

    def _within_context(self, chosen: list[IntermediateAnswer]) -> list[IntermediateAnswer]:
        """The best answers whose texts fit one context (`local_context_tokens`, fitted to the model's
        window): the reduce's input is sized like any other context."""
        kept: list[IntermediateAnswer] = []
        used = 0
        for answer in chosen:
            size = count_tokens(answer.answer)
            if kept and used + size > self.settings.local_context_tokens:
                break
            kept.append(answer)
            used += size
        if len(kept) < len(chosen):
            self.notes.append(f"the reduce kept the {len(kept)} best answers of {len(chosen)} to fit one context")
        return kept

    async def _local(self, follow_up: FollowUp, depth: int) -> IntermediateAnswer | None:
        try:
            result = await self._retrying(lambda: self._local_answer(follow_up))
        except BudgetExhausted:
            self._set_status(follow_up, "over_budget")
            return None
        except BackendUnavailableError:
            # A lost Neo4j (or a graph disabled mid-way) is not one failed follow-up: every later step needs it
            # too, and an answer from what was read before would pass for a complete one.
            raise
        except ModelError as exc:
            self._set_status(follow_up, "failed")
            self.notes.append(f"follow-up {follow_up.id} failed: {exc}")
            return None
        self._remember(result.context.sources)
        self.rankings.append(Ranking(follow_up.id, FOLLOW_UP_WEIGHT, [s.id for s in result.context.sources]))
        payload = AnswerPayload(
            answer=result.answer,
            score=result.score if result.score is not None else 0,
            follow_up_queries=result.follow_up_queries,
            citations=result.source_ids,
            unknown_citations=result.unknown_citations,
        )
        return self._intermediate(
            follow_up.id, depth, follow_up.query, payload, result.context.ids(), follow_up.parent_id
        )

    async def _local_answer(self, follow_up: FollowUp) -> SearchResult:
        """A local search of the follow-up, from its batch-embedded vector, answered within this run."""
        context = await build_local_context(
            self.deps, self.kb, follow_up.query, self._vectors[follow_up.query], seen=self._seen
        )
        return await self.run.answer(
            context,
            question=follow_up.query,
            mode="local",
            max_follow_ups=self.settings.drift_followups_per_answer,
        )

    def _within_budget(self, selected: Sequence[FollowUp]) -> list[FollowUp]:
        """Each local search costs one call: the searches past the calls left are not started."""
        room = max(self.budget.remaining_calls, 0) if not self.tasks.extractive else len(selected)
        for follow_up in selected[room:]:
            self._set_status(follow_up, "over_budget")
        return list(selected[:room])

    def _within_time(self, selected: Sequence[FollowUp]) -> list[FollowUp]:
        """The follow-ups whose waves and the reduce after them end before the query's deadline at the
        pace of its slowest call so far; the rest are not started (`time_limit`): the query reduces what
        it found rather than being stopped at its time-out."""
        deadline = self.run.deadline
        if deadline is None or self.tasks.extractive or not selected:
            return list(selected)
        waves = deadline.waves_that_fit(self.budget.slowest_call_s)
        if waves is None:
            return list(selected)
        concurrency = deadline.calls.concurrency if deadline.calls is not None else len(selected)
        room = max(0, waves - 1) * _at_once(self.settings, concurrency)  # one wave is the reduce's
        if room >= len(selected):
            return list(selected)
        for follow_up in selected[room:]:
            self._set_status(follow_up, "over_time")
        left = len(selected) - room
        detail = (
            f"{left} follow-up(s) not searched: {deadline.left_s():.0f} s left of the query's "
            f"{deadline.timeout_s:g} s time-out, calls taking up to {self.budget.slowest_call_s:.0f} s"
        )
        self.notes.append(detail)
        self.tasks.degraded.add("follow-up", "time_limit", detail)
        return list(selected[:room])

    async def _proposals(self, *answers: IntermediateAnswer) -> list[Proposal]:
        """The answers' follow-up queries with their embeddings, all in one embedding request."""
        pairs = [
            (answer.id, query)
            for answer in answers
            for query in dict.fromkeys(q.strip() for q in answer.follow_up_queries)
            if query
        ]
        vectors = await aembed_queries(self.deps.embedder, [query for _, query in pairs])
        # The entities gathered so far and the question's neighbourhood name what each query targets.
        names = [source.title for source in [*self.sources.values(), *self.neighbourhood] if source.kind == "entity"]
        return [
            Proposal(
                query=query,
                parent_id=parent,
                vector=vector,
                targets=query_targets(query, names, self.question),
            )
            for (parent, query), vector in zip(pairs, vectors, strict=True)
        ]

    def _select(self, proposals: Sequence[Proposal], *, depth: int, per_answer: int) -> list[FollowUp]:
        nodes = select_follow_ups(
            proposals,
            self.question_vector,
            self.asked,
            depth=depth,
            per_answer=per_answer,
            per_round=self.settings.drift_followups_per_round,
            dedup_similarity=self.settings.drift_dedup_similarity,
        )
        self.follow_ups.extend(nodes)
        searched = [node for node in nodes if node.status == "searched"]
        by_query = {p.query: p.vector for p in proposals}
        targets = {p.query: p.targets for p in proposals}
        for node in searched:
            self._vectors[node.query] = by_query[node.query]
            vector = by_query[node.query]
            self.asked.append(Asked(id=node.id, query=node.query, vector=vector, targets=targets[node.query]))
        return searched

    def _intermediate(
        self,
        answer_id: str,
        depth: int,
        query: str,
        payload: AnswerPayload,
        context_ids: set[str],
        parent_id: str | None,
    ) -> IntermediateAnswer:
        return IntermediateAnswer(
            id=answer_id,
            depth=depth,
            query=query,
            answer=payload.answer,
            score=payload.score,
            follow_up_queries=payload.follow_up_queries,
            source_ids=[c for c in dict.fromkeys(payload.citations) if c in context_ids],
            parent_id=parent_id,
            unknown_citations=payload.unknown_citations or 0,
        )

    def _set_status(self, follow_up: FollowUp, status: str) -> None:
        self.follow_ups = [
            node.model_copy(update={"status": status, "answer_id": None}) if node.id == follow_up.id else node
            for node in self.follow_ups
        ]

    def _final_ranking(self, cited: list[str]) -> list[str]:
        answer = Ranking("answer", CITED_WEIGHT, cited)
        # Follow-ups finish in any order: sorted by id, so ties break the same way on every run.
        searches = sorted(self.rankings, key=lambda r: (not r.name.startswith("question"), r.name))
        return relevance_order(self.question, list(self.sources.values()), [*searches, answer])

    def _remember(self, sources: Sequence[Source]) -> None:
        for source in sources:
            self.sources.setdefault(source.id, source)

    def _time(self, phase: str, started: float) -> None:
        self.seconds_by_phase[phase] = round(time.monotonic() - started, 3)

    async def _retrying(self, call: Callable[[], Awaitable[T]]) -> T:
        return await self.run.retrying(call)
