"""Retrieval metrics against gold evidence, at equal context budgets, computable without a model.

Every method's ranked sources are cut to the same budget of cl100k tokens (whole sources in rank
order, the last one cut mid-text), so a method that gathers more material is not rewarded for its
size. Then, per question with evidence:

- exact recall: the share of its evidence strings found, normalised (data/README.md), inside one
  source of the cut context;
- fuzzy recall (>= 90 % token overlap): an evidence string also counts when some window of a source,
  as long as the evidence in word tokens (lower-cased, punctuation ignored), shares at least 90 % of
  its tokens. It forgives evidence cut at the budget edge and small punctuation or case
  differences, and reports how much exact matching understates retrieval;
- first-hit rank: the 1-based rank of the first source in the cut context holding any evidence
  exactly (none when no source does);
- context tokens: the method's whole context before the cut.

A failed row counts as an empty context (recall 0): failures cost quality, they are not skipped.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from statistics import mean, median

from pydantic import BaseModel, ConfigDict

from driftrag.eval.questions import QUESTION_TYPES, QuestionItem, normalise
from driftrag.models.search import Source
from driftrag.providers.tokens import decode, tokenizer

FUZZY_OVERLAP = 0.9
_WORD = re.compile(r"\w+")


class Tokens:
    """cl100k encode/decode, loaded without any download."""

    def __init__(self) -> None:
        self.encode: Callable[[str], list[int]] = tokenizer()

    def decode(self, tokens: Sequence[int]) -> str:
        return decode(list(tokens))


def truncate(sources: Sequence[Source], budget: int, tokens: Tokens) -> list[str]:
    """The texts of the ranked sources that fit `budget` tokens; the last one may be cut short."""
    texts: list[str] = []
    left = budget
    for source in sources:
        if left <= 0:
            break
        encoded = tokens.encode(source.text)
        if len(encoded) <= left:
            texts.append(source.text)
            left -= len(encoded)
        else:
            texts.append(tokens.decode(encoded[:left]))
            left = 0
    return texts


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
) -> RowMetrics:
    kept = [normalise(text) for text in truncate(sources, budget, tokens)]
    evidence = [normalise(item) for item in question.evidence]
    exact = [any(item in text for text in kept) for item in evidence]
    kept_words = [words(text) for text in kept]
    fuzzy = [
        found or any(fuzzy_contains(w, words(item)) for w in kept_words)
        for item, found in zip(evidence, exact, strict=True)
    ]
    first = next((rank for rank, text in enumerate(kept, start=1) if any(item in text for item in evidence)), None)
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
    )


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
