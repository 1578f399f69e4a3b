"""Follow-up questions of the extractive answers: names the context brings up that the question did not.

A candidate is a name (an entity source's title, or a proper-noun span of the context) that the
question does not already mention (`text.mentioned`). Candidates are ranked by relevance, the
best relevance of a scored sentence that mentions them (or belongs to their entity source), then by
where they were first found, then by name; the order is stable for a given input.

Each becomes a question about its link to the question's topic, phrased in the language of the
context (the corpus language: a French corpus gets French follow-ups; `FOLLOW_UP_TEMPLATES`, English
for a language without templates):
- the question names something (its first name, T = "the Gryphon"): "How is X related to T?";
- else it has a phrase after a determiner (T = "the trial"): "What is the role of X in T?";
- else: "What is the role of X?"
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from driftrag.models.search import Source
from driftrag.offline.lexicon import lexicon_for
from driftrag.offline.nlp import Language, words
from driftrag.offline.query.scoring import Scored
from driftrag.offline.query.text import NameSpan, display_name, mentioned, name_key, name_spans

# Sentences whose names are offered as follow-ups (the context's best ones).
FOLLOW_UP_SENTENCES = 8
_TOPIC_WORDS = 3


@dataclass(frozen=True)
class Templates:
    related: str
    role_in: str
    role: str


FOLLOW_UP_TEMPLATES = {
    "english": Templates(
        related="How is {name} related to {topic}?",
        role_in="What is the role of {name} in {topic}?",
        role="What is the role of {name}?",
    ),
    "french": Templates(
        related="Quel est le lien entre {name} et {topic} ?",
        role_in="Quel est le rôle de {name} dans {topic} ?",
        role="Quel est le rôle de {name} ?",
    ),
}


@dataclass(frozen=True)
class Topic:
    text: str
    is_name: bool


def question_topic(question: str, language: Language) -> Topic | None:
    names = name_spans([question], language, question=True)
    if names:
        return Topic(display_name(names[0]), True)
    tokens = words(question)
    determiners = lexicon_for(language.name).determiners
    for i, token in enumerate(tokens[:-1]):
        if token.casefold() not in determiners:
            continue
        phrase: list[str] = []
        for word in tokens[i + 1 : i + 1 + _TOPIC_WORDS]:
            if word.casefold() in language.stopwords:
                break
            phrase.append(word)
        if phrase:
            return Topic(" ".join([token.casefold(), *phrase]), False)
    return None


def phrase_follow_up(name: str, topic: Topic | None, language: str = "english") -> str:
    templates = FOLLOW_UP_TEMPLATES.get(language, FOLLOW_UP_TEMPLATES["english"])
    if topic is None:
        return templates.role.format(name=name)
    if topic.is_name:
        return templates.related.format(name=name, topic=topic.text)
    return templates.role_in.format(name=name, topic=topic.text)


def _mention_pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){re.escape(name.casefold())}(?!\w)")


def mention_relevance(name: str, scored: Sequence[Scored], source_id: str | None = None) -> float:
    """The best relevance of a scored sentence naming `name` (or from its own entity source), else 0."""
    pattern = _mention_pattern(name)
    return max(
        (
            s.relevance
            for s in scored
            if s.sentence.source_id == source_id or pattern.search(s.sentence.text.casefold())
        ),
        default=0.0,
    )


@dataclass(frozen=True)
class Candidate:
    span: NameSpan
    relevance: float
    group: int = 0  # rank of the community it came from (primer); 0 for plain answers


def write_follow_ups(
    question: str, candidates: Iterable[Candidate], language: Language, limit: int, corpus: Language | None = None
) -> list[str]:
    """The `limit` best candidates not mentioned by the question, phrased as questions in the language
    of the `corpus` (default: the question's)."""
    if limit <= 0:
        return []
    asked_names = [span.name for span in name_spans([question], language, question=True)]
    asked_words = {w.casefold() for w in words(question)}
    best: dict[str, tuple[int, Candidate]] = {}
    for order, candidate in enumerate(candidates):
        key = name_key(candidate.span.name)
        if not key or mentioned(candidate.span.name, asked_names, asked_words, language):
            continue
        held = best.get(key)
        if held is None or (candidate.group, -candidate.relevance) < (held[1].group, -held[1].relevance):
            best[key] = (held[0] if held else order, candidate)
    ranked = sorted(best.values(), key=lambda item: (item[1].group, -item[1].relevance, item[0], item[1].span.name))
    topic = question_topic(question, language)
    phrasing = (corpus or language).name
    return [phrase_follow_up(display_name(c.span), topic, phrasing) for _, c in ranked[:limit]]


def entity_candidates(sources: Sequence[Source], scored: Sequence[Scored]) -> list[Candidate]:
    """The entity sources' names, each as relevant as the best scored sentence naming it (or of its own
    description)."""
    context = " ".join(source.text for source in sources).casefold()
    return [
        Candidate(
            NameSpan(source.title, f"the {source.title.casefold()}" in context),
            mention_relevance(source.title, scored, source.id),
        )
        for source in sources
        if source.kind == "entity" and source.title.strip()
    ]


def answer_candidates(sources: Sequence[Source], scored: Sequence[Scored], language: Language) -> list[Candidate]:
    """Entity sources' titles, then the names in the best sentences."""
    candidates = entity_candidates(sources, scored)
    best = [s.sentence.text for s in scored[:FOLLOW_UP_SENTENCES]]
    candidates += [Candidate(span, mention_relevance(span.name, scored)) for span in name_spans(best, language)]
    return candidates


def primer_candidates(reports: Sequence[Source], scored: Sequence[Scored], language: Language) -> list[Candidate]:
    """The names of each report, reports in order of their best sentence (the best community first)."""
    rank: dict[str, int] = {}
    for s in scored:
        rank.setdefault(s.sentence.source_id, len(rank))
    ordered = sorted((r for r in reports if r.id in rank), key=lambda r: rank[r.id])
    # Names are found over all reports together: a word capitalised mid-sentence in one report is
    # evidence that it is a name where it opens a heading of another.
    spans = name_spans([r.text for r in ordered], language)
    candidates = []
    for group, report in enumerate(ordered):
        own = [s for s in scored if s.sentence.source_id == report.id]
        candidates += [
            Candidate(span, mention_relevance(span.name, own), group) for span in spans if span.name in report.text
        ]
    return candidates
