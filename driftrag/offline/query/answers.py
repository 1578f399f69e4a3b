"""Extractive answers over a context: the local/basic/entity answerer and the DRIFT primer.

The answer is the context's most relevant sentences (`query_scoring`), each followed by the id of
the source it was taken from, under a line that says the answer is extractive. Selection: sentences
in order of relevance, within `RELEVANCE_WINDOW` of the best one, near-duplicates dropped, at most
`ANSWER_SENTENCES`, and within the answer token budget. Two selected sentences that follow each
other in the same source are shown together, in text order, where the better one ranks. When even
the best sentence is weakly related (`WEAK_RELEVANCE`) the answer says the context does not appear
to answer; an empty context gets an answer that says it does not answer, score 0, no citation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from driftrag.models.search import Source
from driftrag.offline.nlp import Language
from driftrag.offline.query.followups import (
    Candidate,
    answer_candidates,
    entity_candidates,
    primer_candidates,
    write_follow_ups,
)
from driftrag.offline.query.scoring import Scored, SentenceScorer, pick, relevance_score
from driftrag.offline.query.text import QueryLanguage, cite, source_sentences
from driftrag.providers.tokens import tokenizer
from driftrag.search.models import AnswerPayload, SearchContext
from driftrag.search.streaming import AnswerStream

EXTRACTIVE_LABEL = "Extractive answer (offline mode, no language model)"
ANSWER_NOTE = f"_{EXTRACTIVE_LABEL}: the most relevant sentences of the retrieved context._"
PRIMER_NOTE = f"_{EXTRACTIVE_LABEL}: the most relevant sentences of the top community reports._"
NO_ANSWER = "The retrieved context does not answer this question: it holds no text to draw an answer from."
WEAK_ANSWER = "The retrieved context does not appear to answer this question directly; its closest sentences are:"
ANSWER_SENTENCES = 6
RELEVANCE_WINDOW = 0.25
WEAK_RELEVANCE = 0.35
# Characters of the context read to tell the corpus language.
CORPUS_SAMPLE_CHARS = 2000

CandidateFinder = Callable[[Sequence[Source], Sequence[Scored], Language], list[Candidate]]


def render_sentences(picked: Sequence[Scored], *, note: str, max_tokens: int) -> tuple[str, list[str]]:
    """The answer text (note, then one bullet per sentence run with its citation) and the ids it cites."""
    count = tokenizer()
    lines = [note]
    if picked and picked[0].relevance < WEAK_RELEVANCE:
        lines.append(WEAK_ANSWER)
    used = sum(len(count(line)) for line in lines)
    selected = {(s.sentence.source_rank, s.sentence.position): s for s in picked}
    emitted: set[tuple[int, int]] = set()
    bullets: list[str] = []
    cited: list[str] = []
    for scored in picked:
        rank, position = scored.sentence.source_rank, scored.sentence.position
        if (rank, position) in emitted:
            continue
        first = last = position
        while (rank, first - 1) in selected and (rank, first - 1) not in emitted:
            first -= 1
        while (rank, last + 1) in selected and (rank, last + 1) not in emitted:
            last += 1
        run = [(rank, p) for p in range(first, last + 1)]
        text = " ".join(selected[key].sentence.text for key in run)
        bullet = f"- {text} {cite([scored.sentence.source_id])}"
        tokens = len(count(bullet))
        if bullets and used + tokens > max_tokens:
            break
        used += tokens
        emitted.update(run)
        bullets.append(bullet)
        if scored.sentence.source_id not in cited:
            cited.append(scored.sentence.source_id)
    return "\n\n".join([*lines[:1], "\n".join(lines[1:] + bullets)]).strip(), cited


def no_answer(note: str) -> AnswerPayload:
    return AnswerPayload(answer=f"{note}\n\n{NO_ANSWER}", score=0, follow_up_queries=[], citations=[])


async def extract_answer(
    question: str,
    sources: Sequence[Source],
    *,
    scorer: SentenceScorer,
    language: Language,
    corpus: Language,
    note: str,
    max_tokens: int,
    max_follow_ups: int,
    candidates: CandidateFinder,
) -> AnswerPayload:
    scored = await scorer.rank(question, source_sentences(sources, language), language)
    if not scored:
        return no_answer(note)
    picked = pick(scored, limit=ANSWER_SENTENCES, window=RELEVANCE_WINDOW)
    answer, cited = render_sentences(picked, note=note, max_tokens=max_tokens)
    follow_ups = write_follow_ups(question, candidates(sources, scored, language), language, max_follow_ups, corpus)
    return AnswerPayload(
        answer=answer, score=relevance_score(picked[0].relevance), follow_up_queries=follow_ups, citations=cited
    )


def corpus_sample(sources: Sequence[Source]) -> str:
    """Enough of the context's text to tell its language (follow-ups are phrased in it)."""
    return " ".join(source.text for source in sources)[:CORPUS_SAMPLE_CHARS]


class ExtractiveAnswerer:
    """`ContextAnswerer` without a model: local, basic and entity answers, and DRIFT's follow-up searches."""

    def __init__(self, scorer: SentenceScorer, *, language: QueryLanguage, max_tokens: int) -> None:
        self._scorer = scorer
        self._language = language
        self._max_tokens = max_tokens

    async def answer(
        self,
        question: str,
        context: SearchContext,
        *,
        max_follow_ups: int = 0,
        user_question: str | None = None,
        stream: AnswerStream | None = None,
    ) -> AnswerPayload:
        # Sentences are scored against the step's own question: the user's question is already the
        # first DRIFT step, and mixing the two would blur which sentence answers which.
        del user_question
        payload = await extract_answer(
            question,
            context.sources,
            scorer=self._scorer,
            language=await self._language.of(question),
            corpus=await self._language.of(corpus_sample(context.sources)),
            note=ANSWER_NOTE,
            max_tokens=self._max_tokens,
            max_follow_ups=max_follow_ups,
            candidates=answer_candidates,
        )
        if stream is not None:
            await stream.lines(payload.answer)
        return payload


class ExtractivePrimer:
    """`DriftPrimer` without a model: the answer from the community reports, follow-ups from their names."""

    def __init__(self, scorer: SentenceScorer, *, language: QueryLanguage, max_tokens: int) -> None:
        self._scorer = scorer
        self._language = language
        self._max_tokens = max_tokens

    async def prime(
        self, question: str, reports: SearchContext, *, max_follow_ups: int, entities: Sequence[Source] = ()
    ) -> AnswerPayload:
        """Follow-ups alternate between the reports' names and the neighbourhood's entities (`entities`,
        ranked by how well their descriptions answer the question), so the first round reaches past
        what the reports already say."""
        communities = [s for s in reports.sources if s.kind == "community"] or reports.sources
        language = await self._language.of(question)
        corpus = await self._language.of(corpus_sample(communities))
        payload = await extract_answer(
            question,
            communities,
            scorer=self._scorer,
            language=language,
            corpus=corpus,
            note=PRIMER_NOTE,
            max_tokens=self._max_tokens,
            max_follow_ups=max_follow_ups,
            candidates=primer_candidates,
        )
        if not entities or max_follow_ups <= 0:
            return payload
        scored = await self._scorer.rank(question, source_sentences(entities, language), language)
        found = write_follow_ups(question, entity_candidates(entities, scored), language, max_follow_ups, corpus)
        follow_ups = list(dict.fromkeys(alternate(payload.follow_up_queries, found)))[:max_follow_ups]
        return payload.model_copy(update={"follow_up_queries": follow_ups})


def alternate(first: Sequence[str], second: Sequence[str]) -> list[str]:
    """first[0], second[0], first[1], second[1], … then the longer list's rest."""
    merged: list[str] = []
    for index in range(max(len(first), len(second))):
        merged += [ranked[index] for ranked in (first, second) if index < len(ranked)]
    return merged
