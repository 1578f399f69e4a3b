"""The summary of a run: cost and failures per method, and the retrieval metrics at one budget."""

from __future__ import annotations

from collections.abc import Sequence
from statistics import mean, median

from pydantic import BaseModel, ConfigDict, Field

from driftrag.eval.metrics import MetricsTable, RowMetrics, Tokens, metrics_table, row_metrics
from driftrag.eval.questions import QuestionItem
from driftrag.eval.records import RunManifest, RunRow, now
from driftrag.eval.terms import QuestionTerms, WordSets, question_terms, set_language


class MethodCost(BaseModel):
    """Means per row (one question, one repeat) of one method."""

    model_config = ConfigDict(extra="forbid")

    rows: int
    errors: int
    llm_calls: float
    prompt_tokens: float
    completion_tokens: float
    embedding_requests: float
    seconds_mean: float
    seconds_median: float
    seconds_max: float
    sources: float
    error_examples: list[str]
    degraded: int = Field(default=0, description="Rows whose answer had a step tolerate or replace the model's output.")
    ungrounded: int = Field(default=0, description="Rows whose answer was flagged ungrounded (a copied example…).")


class RunSummary(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kb: str
    mode: str
    mode_description: str
    split: str = "all"
    questions: int
    methods: list[str]
    repeats: int
    rows: int
    expected_rows: int
    errors: int
    cost: dict[str, MethodCost]
    metrics: MetricsTable
    written_at: str


def method_cost(rows: Sequence[RunRow]) -> MethodCost:
    def avg(values: list[float]) -> float:
        return round(mean(values), 3) if values else 0.0

    seconds = [row.seconds for row in rows]
    return MethodCost(
        rows=len(rows),
        errors=sum(1 for row in rows if row.error),
        llm_calls=avg([row.llm_calls for row in rows]),
        prompt_tokens=avg([row.prompt_tokens for row in rows]),
        completion_tokens=avg([row.completion_tokens for row in rows]),
        embedding_requests=avg([row.embedding_requests for row in rows]),
        seconds_mean=avg(seconds),
        seconds_median=round(median(seconds), 3) if seconds else 0.0,
        seconds_max=round(max(seconds), 3) if seconds else 0.0,
        sources=avg([len(row.sources) for row in rows]),
        error_examples=list(dict.fromkeys(row.error for row in rows if row.error))[:3],
        degraded=sum(1 for row in rows if row.degraded),
        ungrounded=sum(1 for row in rows if row.ungrounded),
    )


def terms_of(questions: Sequence[QuestionItem]) -> dict[str, QuestionTerms]:
    """Each question's content words, in the language of the whole set."""
    language = set_language(questions)
    return {question.id: question_terms(question, language) for question in questions}


def all_row_metrics(
    questions: Sequence[QuestionItem],
    rows: Sequence[RunRow],
    budget: int,
    tokens: Tokens | None = None,
    terms: dict[str, QuestionTerms] | None = None,
    word_sets: WordSets | None = None,
) -> list[RowMetrics]:
    """Metrics of every row whose question is in the set (rows of removed questions are ignored)."""
    tokens = tokens or Tokens()
    terms = terms if terms is not None else terms_of(questions)
    word_sets = word_sets or WordSets()
    by_id = {question.id: question for question in questions}
    return [
        row_metrics(
            by_id[row.question_id],
            row.method,
            row.repeat,
            row.sources,
            budget,
            tokens,
            failed=row.error is not None,
            terms=terms.get(row.question_id),
            word_sets=word_sets,
        )
        for row in rows
        if row.question_id in by_id
    ]


def summarize(
    manifest: RunManifest, questions: Sequence[QuestionItem], rows: Sequence[RunRow], budget: int
) -> RunSummary:
    methods = list(manifest.methods)
    return RunSummary(
        kb=manifest.kb,
        mode=manifest.mode,
        mode_description=manifest.mode_description,
        split=manifest.split,
        questions=len(questions),
        methods=methods,
        repeats=manifest.repeats,
        rows=len(rows),
        expected_rows=len(questions) * len(methods) * manifest.repeats,
        errors=sum(1 for row in rows if row.error),
        cost={method: method_cost([row for row in rows if row.method == method]) for method in methods},
        metrics=metrics_table(all_row_metrics(questions, rows, budget), methods, budget),
        written_at=now(),
    )
