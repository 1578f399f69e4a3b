"""Content words for the answer-based metrics: a set's language, its stopwords, and word sets of texts.

The stopwords and the language guess are the offline mode's (NLTK's lists as llama-index-core ships
them, read from disk), handed over by the composition root (`driftrag.composition.language_guesser`).
A question set's language is guessed once from all its questions and reference answers together, the
way the offline mode guesses a document's. Words are compared
case-folded as runs of letters, so split at apostrophes and hyphens (`Alice's` → alice,
`emmène-t-il` → emmène, il), on the answer's side as on the context's; one-letter parts (`l'`, `s`),
digits and stopwords are not content words.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from driftrag.eval.questions import QuestionItem

_LETTERS = re.compile(r"[^\W\d_]+")


class Language(Protocol):
    name: str
    stopwords: frozenset[str]


class LanguageGuesser(Protocol):
    def detect(self, text: str) -> Language: ...


@dataclass(frozen=True)
class QuestionTerms:
    """What the answer-based metrics look for in a context, for one question."""

    answer: frozenset[str]  # the reference answer's content words that the question does not already say
    evidence: tuple[frozenset[str], ...]  # each evidence string's content words


def set_language(questions: Sequence[QuestionItem], guesser: LanguageGuesser | None = None) -> Language:
    """The language of a question set, guessed from its questions and reference answers."""
    if guesser is None:
        from driftrag.composition import language_guesser

        guesser = language_guesser()
    text = "\n".join(f"{q.question}\n{q.reference_answer}" for q in questions)
    return guesser.detect(text)


def word_parts(text: str) -> list[str]:
    """Case-folded runs of letters, of two letters or more."""
    return [part for part in _LETTERS.findall(text.casefold()) if len(part) > 1]


def content_terms(text: str, language: Language) -> frozenset[str]:
    return frozenset(part for part in word_parts(text) if part not in language.stopwords)


def question_terms(question: QuestionItem, language: Language) -> QuestionTerms:
    asked = set(word_parts(question.question))
    answer = content_terms(question.reference_answer, language) - asked
    evidence = tuple(content_terms(item, language) for item in question.evidence)
    return QuestionTerms(answer=answer, evidence=tuple(item for item in evidence if item))


class WordSets:
    """Case-folded word sets of texts, each text split once (the same chunk comes back in many rows)."""

    def __init__(self) -> None:
        self._sets: dict[str, frozenset[str]] = {}

    def __call__(self, text: str) -> frozenset[str]:
        found = self._sets.get(text)
        if found is None:
            found = self._sets[text] = frozenset(word_parts(text))
        return found


def answer_token_recall(terms: QuestionTerms, context: Sequence[frozenset[str]]) -> float | None:
    """Share of the answer's content words found anywhere in the context; None when it has none."""
    if not terms.answer:
        return None
    seen = frozenset().union(*context)
    return len(terms.answer & seen) / len(terms.answer)


def evidence_token_recall(terms: QuestionTerms, context: Sequence[frozenset[str]]) -> float | None:
    """Mean over evidence strings of the best share of its content words found in one source."""
    if not terms.evidence:
        return None
    best = [max((len(item & source) / len(item) for source in context), default=0.0) for item in terms.evidence]
    return sum(best) / len(best)
