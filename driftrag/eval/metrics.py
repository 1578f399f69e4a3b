"""Retrieval metrics at equal context budgets, against gold evidence and reference answers, without a model.

Every method's ranked sources are cut to the same budget of cl100k tokens, each source charged as the
answering step renders it (`[id] title`, its text, a blank line: what a mode's own budget pays), whole
sources in rank order and the last one cut mid-text, so a method that gathers more material is not
rewarded for its size. Then, per question:

- exact recall: the share of its evidence strings found, normalised (data/README.md), inside one
  source of the cut context;
- fuzzy recall (>= 90 % token overlap): an evidence string also counts when some window of a source,
  as long as the evidence in word tokens (lower-cased, punctuation ignored), shares at least 90 % of
  its tokens. It forgives evidence cut at the budget edge and small punctuation or case
  differences, and reports how much exact matching understates retrieval;
- answer-token recall: the share of the reference answer's content words (`driftrag.eval.terms`: not
  stopwords of the set's language, not words of the question) found anywhere in the cut context. It
  scores sets whose evidence is paraphrased or absent;
- evidence-token recall: per evidence string, the best share of its content words found in one source
  of the cut context, averaged: paraphrased evidence still scores by its words;
- first-hit rank: the 1-based rank of the first source in the cut context holding any evidence
  exactly (none when no source does);
- context tokens: the method's whole context before the cut, and what the cut kept (which shows
  whether a method filled the budget).

A failed row counts as an empty context (recall 0): failures cost quality, they are not skipped.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from statistics import mean, median

from pydantic import BaseModel, ConfigDict

from driftrag.eval.questions import QUESTION_TYPES, QuestionItem, normalise
from driftrag.eval.terms import QuestionTerms, WordSets, answer_token_recall, evidence_token_recall
from driftrag.models.search import Source
from driftrag.providers.tokens import decode, tokenizer
from driftrag.search.context import render_item

FUZZY_OVERLAP = 0.9
_WORD = re.compile(r"\w+")


class Tokens:
    """cl100k encode/decode, loaded without any download; each text is encoded once (a report cuts the
    same sources at several budgets, and the same chunk comes back in many rows)."""

    def __init__(self) -> None:
        self._encode: Callable[[str], list[int]] = tokenizer()
        self._seen: dict[str, list[int]] = {}

    def encode(self, text: str) -> list[int]:
        found = self._seen.get(text)
        if found is None:
            found = self._seen[text] = self._encode(text)
        return found

    def decode(self, tokens: Sequence[int]) -> str:
        return decode(list(tokens))


@dataclass(frozen=True)
class Cut:
    """The texts of the sources kept within a budget, and the tokens they were charged."""

    texts: list[str]
    tokens: int


def cut(sources: Sequence[Source], budget: int, tokens: Tokens) -> Cut:
    """The ranked sources that fit `budget` tokens, each charged as rendered (`[id] title`, text, a
    blank line); the last one may be cut short, its text then filling the budget."""
    texts: list[str] = []
    left = budget
    for source in sources:
        if left <= 0:
            break
        cost = len(tokens.encode(render_item(source))) + 1
        if cost <= left:
            texts.append(source.text)
            left -= cost
            continue
        room = left - len(tokens.encode(render_item(source, ""))) - 1  # its heading and the blank line
        if room > 0:
            texts.append(tokens.decode(tokens.encode(source.text)[:room]))
            left = 0
        break
    return Cut(texts, budget - left)


def truncate(sources: Sequence[Source], budget: int, tokens: Tokens) -> list[str]:
    """The texts of the ranked sources that fit `budget` tokens (`cut`); the last one may be cut short."""
    return cut(sources, budget, tokens).texts


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def fuzzy_contains(text_words: Sequence[str], evidence_words: Sequence[str], overlap: float = FUZZY_OVERLAP) -> bool:
    """True when a window of `text_words`, as long as the evidence, shares >= `overlap` of its tokens."""
    n = len(evidence_words)
    if n == 0:
        return False
    need = math.ceil(overlap * n - 1e-9)
    wanted = Counter(evidence_words)
    window: Counter[str] = Counter()
    shared = 0
    for i, word in enumerate(text_words):
        if window[word] < wanted[word]:
            shared += 1
        window[word] += 1
        if i >= n:
            gone = text_words[i - n]
            window[gone] -= 1
            if window[gone] < wanted[gone]:
                shared -= 1
        if shared >= need:
            return True
    return False


def any_fuzzy(
    evidence_words: Sequence[str], texts: Sequence[Sequence[str]], text_sets: Sequence[frozenset[str]]
) -> bool:
    """`fuzzy_contains` over several texts, skipping those that lack too many of the evidence's words to
    hold it anywhere (a set test: the whole corpus, the ceiling, is scanned only where it could match)."""
    wanted = Counter(evidence_words)
    need = math.ceil(FUZZY_OVERLAP * len(evidence_words) - 1e-9)
    return any(
        sum(count for word, count in wanted.items() if word in present) >= need and fuzzy_contains(text, evidence_words)
        for text, present in zip(texts, text_sets, strict=True)
    )


class RowMetrics(BaseModel):
    """The metrics of one (question, method, repeat) row."""

    model_config = ConfigDict(extra="forbid")

    question_id: str
    question_type: str
    method: str
    repeat: int
    evidence: int
    exact_hits: int
    fuzzy_hits: int
    first_hit_rank: int | None
    context_tokens: int
    kept_tokens: int = 0
    answer_recall: float | None = None
    evidence_token_recall: float | None = None
    failed: bool

    @property
    def recall(self) -> float | None:
        return self.exact_hits / self.evidence if self.evidence else None

    @property
    def fuzzy_recall(self) -> float | None:
        return self.fuzzy_hits / self.evidence if self.evidence else None


def row_metrics(
    question: QuestionItem,
    method: str,
    repeat: int,
    sources: Sequence[Source],
    budget: int,
    tokens: Tokens,
    *,
    failed: bool = False,
    terms: QuestionTerms | None = None,
    word_sets: WordSets | None = None,
) -> RowMetrics:
    """One row's metrics at `budget`; the answer-based ones need the question's `terms`."""
    kept_cut = cut(sources, budget, tokens)
    kept = [normalise(text) for text in kept_cut.texts]
    evidence = [normalise(item) for item in question.evidence]
    exact = [any(item in text for text in kept) for item in evidence]
    kept_words = [words(text) for text in kept]
    kept_sets = [frozenset(w) for w in kept_words]
    fuzzy = [
        found or any_fuzzy(words(item), kept_words, kept_sets) for item, found in zip(evidence, exact, strict=True)
    ]
    first = next((rank for rank, text in enumerate(kept, start=1) if any(item in text for item in evidence)), None)
    answer_recall = evidence_words = None
    if terms is not None:
        word_sets = word_sets or WordSets()
        context = [word_sets(text) for text in kept_cut.texts]
        answer_recall = answer_token_recall(terms, context)
        evidence_words = evidence_token_recall(terms, context)
    return RowMetrics(
        question_id=question.id,
        question_type=question.type,
        method=method,
        repeat=repeat,
        evidence=len(evidence),
        exact_hits=sum(exact),
        fuzzy_hits=sum(fuzzy),
        first_hit_rank=first,
        context_tokens=sum(len(tokens.encode(source.text)) for source in sources),
        kept_tokens=kept_cut.tokens,
        answer_recall=answer_recall,
        evidence_token_recall=evidence_words,
        failed=failed,
    )


class Aggregate(BaseModel):
    """Metrics of a group of rows (a method, or a method and a question type)."""

    model_config = ConfigDict(extra="forbid")

    rows: int
    questions_with_evidence: int
    recall: float | None
    fuzzy_recall: float | None
    hit_rate: float | None
    mean_first_hit_rank: float | None
    median_first_hit_rank: float | None
    mrr: float | None
    mean_context_tokens: float
    failed: int
    questions_with_answer_terms: int = 0
    answer_recall: float | None = None
    evidence_token_recall: float | None = None
    median_kept_tokens: float = 0.0


def aggregate(rows: Sequence[RowMetrics]) -> Aggregate:
    """Means over questions; repeats of a question are averaged first so each question weighs the same."""
    with_evidence = [row for row in rows if row.evidence]
    by_question: dict[str, list[RowMetrics]] = {}
    for row in with_evidence:
        by_question.setdefault(row.question_id, []).append(row)

    def per_question(value: Callable[[RowMetrics], float]) -> float | None:
        if not by_question:
            return None
        return mean(mean(value(row) for row in group) for group in by_question.values())

    ranks = [row.first_hit_rank for row in with_evidence if row.first_hit_rank is not None]
    answers = per_question_means(rows, lambda row: row.answer_recall)
    evidence_words = per_question_means(rows, lambda row: row.evidence_token_recall)
    return Aggregate(
        rows=len(rows),
        questions_with_evidence=len(by_question),
        recall=per_question(lambda row: row.recall or 0.0),
        fuzzy_recall=per_question(lambda row: row.fuzzy_recall or 0.0),
        hit_rate=per_question(lambda row: float(row.first_hit_rank is not None)),
        mean_first_hit_rank=mean(ranks) if ranks else None,
        median_first_hit_rank=float(median(ranks)) if ranks else None,
        mrr=per_question(lambda row: 1.0 / row.first_hit_rank if row.first_hit_rank else 0.0),
        mean_context_tokens=mean(row.context_tokens for row in rows) if rows else 0.0,
        failed=sum(row.failed for row in rows),
        questions_with_answer_terms=len(answers),
        answer_recall=mean(answers.values()) if answers else None,
        evidence_token_recall=mean(evidence_words.values()) if evidence_words else None,
        median_kept_tokens=float(median(row.kept_tokens for row in rows)) if rows else 0.0,
    )


def per_question_means(rows: Iterable[RowMetrics], value: Callable[[RowMetrics], float | None]) -> dict[str, float]:
    """`value` per question id, its repeats averaged; questions where it is undefined are left out."""
    grouped: dict[str, list[float]] = {}
    for row in rows:
        found = value(row)
        if found is not None:
            grouped.setdefault(row.question_id, []).append(found)
    return {question_id: mean(values) for question_id, values in grouped.items()}


class MetricsTable(BaseModel):
    """The retrieval metrics of a run at one budget: by method, and by method and question type."""

    model_config = ConfigDict(extra="forbid")

    budget_tokens: int
    by_method: dict[str, Aggregate]
    by_method_and_type: dict[str, dict[str, Aggregate]]


def metrics_table(rows: Iterable[RowMetrics], methods: Sequence[str], budget: int) -> MetricsTable:
    rows = list(rows)
    by_method = {m: aggregate([r for r in rows if r.method == m]) for m in methods}
    by_type = {
        m: {t: aggregate([r for r in rows if r.method == m and r.question_type == t]) for t in QUESTION_TYPES}
        for m in methods
    }
    return MetricsTable(budget_tokens=budget, by_method=by_method, by_method_and_type=by_type)
