"""DRIFT's reduce without a model: the best statements of the intermediate answers, merged.

Each intermediate answer is read back into statements: its bullets when it has any (the extractive
answers' form, `- text [ids]`), else its sentences; notes (`_…_` lines) and "does not answer" lines
are skipped. A statement cites the ids of its trailing brackets that the answer's `source_ids` hold,
or, without brackets, all of the answer's `source_ids`.

Statements are ranked by `score / 100 × relevance` (relevance to the question as in
`scoring`), ties by answer order then position. A near-duplicate of a statement already kept
is dropped and its citations go to the kept one. Kept: at most `REDUCE_SENTENCES`, each ranking at
least `REDUCE_KEEP_RATIO` of the best, within the answer token budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from driftrag.offline.nlp import Language
from driftrag.offline.query.answers import EXTRACTIVE_LABEL, NO_ANSWER, WEAK_ANSWER
from driftrag.offline.query.scoring import Scored, SentenceScorer, near_duplicate
from driftrag.offline.query.text import QueryLanguage, Sentence, cite, split_citation
from driftrag.providers.tokens import tokenizer
from driftrag.search.drift.models import IntermediateAnswer
from driftrag.search.models import ReducedAnswer
from driftrag.search.streaming import AnswerStream

REDUCE_NOTE = (
    f"_{EXTRACTIVE_LABEL}: the most relevant sentences of the intermediate answers "
    "(community reports and follow-up searches), ranked by their score and relevance to the question._"
)
NO_STATEMENT = "The intermediate answers hold no statement that answers this question."
REDUCE_SENTENCES = 8
REDUCE_KEEP_RATIO = 0.6
_SKIPPED_LINES = (NO_ANSWER, WEAK_ANSWER, NO_STATEMENT)


def statements(answer: IntermediateAnswer, language: Language) -> list[tuple[str, list[str]]]:
    """(text, cited ids) of each statement of one intermediate answer."""
    lines = [line.strip() for line in answer.answer.splitlines()]
    lines = [line for line in lines if line and not line.startswith("_") and line not in _SKIPPED_LINES]
    bullets = [line[2:].strip() for line in lines if line.startswith(("- ", "* "))]
    pieces = bullets or [s for line in lines for s in language.sentences(line)]
    allowed = set(answer.source_ids)
    found = []
    for piece in pieces:
        text, ids = split_citation(piece)
        ids = [i for i in ids if i in allowed] if ids else list(answer.source_ids)
        if text:
            found.append((text, ids))
    return found


@dataclass
class _Kept:
    scored: Scored
    key: float
    ids: list[str] = field(default_factory=list)


class ExtractiveReducer:
    """`DriftReducer` without a model (see the module docstring)."""

    def __init__(self, scorer: SentenceScorer, *, language: QueryLanguage, max_tokens: int) -> None:
        self._scorer = scorer
        self._language = language
        self._max_tokens = max_tokens

    async def reduce(
        self, question: str, answers: Sequence[IntermediateAnswer], *, stream: AnswerStream | None = None
    ) -> ReducedAnswer:
        language = await self._language.of(question)
        sentences: list[Sentence] = []
        cited: dict[tuple[int, int], list[str]] = {}
        for rank, answer in enumerate(answers):
            for position, (text, ids) in enumerate(statements(answer, language)):
                sentences.append(Sentence(text, answer.id, rank, position))
                cited[(rank, position)] = ids
        scored = await self._scorer.rank(question, sentences, language)
        ranked = sorted(
            (_Kept(s, answers[s.sentence.source_rank].score / 100 * s.relevance) for s in scored),
            key=lambda k: (-k.key, k.scored.sentence.source_rank, k.scored.sentence.position),
        )
        kept: list[_Kept] = []
        for candidate in ranked:
            ids = cited[(candidate.scored.sentence.source_rank, candidate.scored.sentence.position)]
            twin = next((k for k in kept if near_duplicate(k.scored.stems, candidate.scored.stems)), None)
            if twin is not None:
                twin.ids += [i for i in ids if i not in twin.ids]
            elif len(kept) < REDUCE_SENTENCES and candidate.key >= REDUCE_KEEP_RATIO * ranked[0].key:
                candidate.ids = list(ids)
                kept.append(candidate)
        reduced = self._render(kept)
        if stream is not None:
            await stream.lines(reduced.answer)
        return reduced

    def _render(self, kept: Sequence[_Kept]) -> ReducedAnswer:
        if not kept:
            return ReducedAnswer(answer=f"{REDUCE_NOTE}\n\n{NO_STATEMENT}", citations=[])
        count = tokenizer()
        used = len(count(REDUCE_NOTE))
        bullets: list[str] = []
        citations: list[str] = []
        for item in kept:
            bullet = f"- {item.scored.sentence.text} {cite(item.ids)}".rstrip()
            tokens = len(count(bullet))
            if bullets and used + tokens > self._max_tokens:
                break
            used += tokens
            bullets.append(bullet)
            citations += [i for i in item.ids if i not in citations]
        return ReducedAnswer(answer="\n\n".join([REDUCE_NOTE, "\n".join(bullets)]), citations=citations)
