"""Global search without a model: extractive map and reduce over community reports.

Map: the sentences of a batch's reports (titles and finding headings included, rating lines left out)
are scored against the question as the answerer scores a context (`scoring.SentenceScorer`: Okapi BM25
over the batch's sentences, and a prior from the report's rank in the level, which orders reports by
the cosine of their stored embeddings to the question). A sentence holding no term of the question is
no key point. The best ones, at most `POINTS_PER_REPORT` per report (a report is one theme),
within `MAP_WINDOW` of the best, near-duplicates dropped, at most `max_points`, are the batch's key
points, each scored `round(100 × relevance)` and citing its report.

Reduce: the key points by score (ties: batch, then position), a near-duplicate of a kept point dropped
(its reports go to the kept one), at most `REDUCE_POINTS`, each at least `REDUCE_KEEP_RATIO` of the
best score, within the answer token budget; rendered as bullets under a line that says the answer is
extractive.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence

from driftrag.offline.query.answers import EXTRACTIVE_LABEL
from driftrag.offline.query.scoring import SentenceScorer, near_duplicate, pick, question_terms, relevance_score
from driftrag.offline.query.text import QueryLanguage, cite, source_sentences, split_citation, stems
from driftrag.providers.tokens import tokenizer
from driftrag.search.global_search.models import GlobalPoint, KeyPoint, MapPayload, ReportBatch
from driftrag.search.models import ReducedAnswer
from driftrag.search.streaming import AnswerStream

GLOBAL_NOTE = (
    f"_{EXTRACTIVE_LABEL}: the key sentences of the community reports that bear most on the question, "
    "ranked by their relevance to it._"
)
NO_POINT = "The community reports hold no sentence that bears on this question."
REDUCE_POINTS = 10
REDUCE_KEEP_RATIO = 0.5
# The map keeps points this far below its best one at most: weaker ones would not reach the reduce.
MAP_WINDOW = 0.5
POINTS_PER_REPORT = 2


class ExtractiveGlobalMapper:
    """`GlobalMapper` without a model (module docstring)."""

    def __init__(self, scorer: SentenceScorer, *, language: QueryLanguage) -> None:
        self._scorer = scorer
        self._language = language

    async def map(self, question: str, batch: ReportBatch, *, max_points: int) -> MapPayload:
        language = await self._language.of(question)
        sentences = [
            # The prior is the report's rank in the whole level, not in this batch.
            dataclasses.replace(s, kind_rank=batch.first_rank + s.source_rank)
            for s in source_sentences(batch.context.sources, language)
        ]
        scored = await self._scorer.rank(question, sentences, language)
        if question_terms(question, language):
            scored = [s for s in scored if s.lexical > 0]
        # A report is one theme: at most `POINTS_PER_REPORT` of its sentences, so that the other
        # reports of the batch get their say.
        taken: Counter[str] = Counter()
        spread = []
        for s in scored:
            if taken[s.sentence.source_id] < POINTS_PER_REPORT:
                taken[s.sentence.source_id] += 1
                spread.append(s)
        points = [
            KeyPoint(
                description=f"{s.sentence.text} {cite([s.sentence.source_id])}",
                score=relevance_score(s.relevance),
                citations=[s.sentence.source_id],
            )
            for s in pick(spread, limit=max_points, window=MAP_WINDOW)
        ]
        return MapPayload(points=points, unknown_citations=0)


class ExtractiveGlobalReducer:
    """`GlobalReducer` without a model (module docstring)."""

    def __init__(self, *, language: QueryLanguage, max_tokens: int) -> None:
        self._language = language
        self._max_tokens = max_tokens

    async def reduce(
        self, question: str, points: Sequence[GlobalPoint], *, stream: AnswerStream | None = None
    ) -> ReducedAnswer:
        reduced = await self._reduce(question, points)
        if stream is not None:
            await stream.lines(reduced.answer)
        return reduced

    async def _reduce(self, question: str, points: Sequence[GlobalPoint]) -> ReducedAnswer:
        language = await self._language.of(question)
        ranked = sorted(enumerate(points), key=lambda item: (-item[1].score, item[1].batch, item[0]))
        kept: list[tuple[str, frozenset[str], list[str]]] = []
        best = ranked[0][1].score if ranked else 0
        for _, point in ranked:
            text, _ = split_citation(point.description)
            words = frozenset(stems(text, language))
            twin = next((k for k in kept if near_duplicate(k[1], words)), None)
            if twin is not None:
                twin[2].extend(i for i in point.report_ids if i not in twin[2])
            elif len(kept) < REDUCE_POINTS and point.score >= REDUCE_KEEP_RATIO * best:
                kept.append((text, words, list(point.report_ids)))
        if not kept:
            return ReducedAnswer(answer=f"{GLOBAL_NOTE}\n\n{NO_POINT}", citations=[])
        count = tokenizer()
        used = len(count(GLOBAL_NOTE))
        bullets: list[str] = []
        citations: list[str] = []
        for text, _, ids in kept:
            bullet = f"- {text} {cite(ids)}".rstrip()
            tokens = len(count(bullet))
            if bullets and used + tokens > self._max_tokens:
                break
            used += tokens
            bullets.append(bullet)
            citations += [i for i in ids if i not in citations]
        return ReducedAnswer(answer="\n\n".join([GLOBAL_NOTE, "\n".join(bullets)]), citations=citations)
