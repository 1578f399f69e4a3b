"""Paired comparisons of methods, question by question: the mean difference with a bootstrap 95 %
interval and an exact sign test, per question type and overall.

Each question's value of a metric (its repeats averaged) for method A minus the same for the baseline
(`basic` when it was run, else the first method); only questions where both are defined count. The
interval resamples questions (seeded: a report is reproducible); the sign test counts the questions A
won and lost, ties left out. A difference is read as one only when its interval excludes 0: otherwise the
report says "no detectable difference".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pydantic import BaseModel, ConfigDict

from driftrag.eval.metrics import RowMetrics, per_question_means
from driftrag.eval.questions import QUESTION_TYPES
from driftrag.eval.stats import bootstrap_interval, sign_test

BASELINE = "basic"
ALL = "all"
METRICS: dict[str, Callable[[RowMetrics], float | None]] = {
    "exact evidence recall": lambda row: row.recall,
    "answer-token recall": lambda row: row.answer_recall,
    "evidence-token recall": lambda row: row.evidence_token_recall,
}


class Difference(BaseModel):
    """Method A against the baseline on one metric, one group of questions, one budget."""

    model_config = ConfigDict(extra="forbid")

    questions: int
    mean: float
    ci_low: float
    ci_high: float
    wins: int
    losses: int
    ties: int
    p_value: float

    @property
    def detectable(self) -> bool:
        return self.questions > 0 and not self.ci_low <= 0 <= self.ci_high


class Comparison(BaseModel):
    """Every method against the baseline at one budget: metric → method → group → difference."""

    model_config = ConfigDict(extra="forbid")

    budget_tokens: int
    baseline: str
    differences: dict[str, dict[str, dict[str, Difference]]]


def baseline_of(methods: Sequence[str]) -> str:
    return BASELINE if BASELINE in methods else methods[0]


def paired_difference(a: dict[str, float], b: dict[str, float], *, seed: int = 0) -> Difference:
    """A minus B over the questions both define."""
    shared = sorted(a.keys() & b.keys())
    deltas = [a[q] - b[q] for q in shared]
    low, high = bootstrap_interval(deltas, seed=seed)
    wins = sum(d > 0 for d in deltas)
    losses = sum(d < 0 for d in deltas)
    return Difference(
        questions=len(deltas),
        mean=sum(deltas) / len(deltas) if deltas else 0.0,
        ci_low=low,
        ci_high=high,
        wins=wins,
        losses=losses,
        ties=len(deltas) - wins - losses,
        p_value=sign_test(wins, wins + losses),
    )


def compare(rows: Sequence[RowMetrics], methods: Sequence[str], budget: int) -> Comparison:
    """Every other method against the baseline, per metric, per question type and overall."""
    baseline = baseline_of(methods)
    groups = {ALL: rows, **{t: [r for r in rows if r.question_type == t] for t in QUESTION_TYPES}}
    differences: dict[str, dict[str, dict[str, Difference]]] = {}
    for metric, value in METRICS.items():
        per_method: dict[str, dict[str, Difference]] = {}
        for method in methods:
            if method == baseline:
                continue
            per_method[method] = {
                group: paired_difference(
                    per_question_means([r for r in members if r.method == method], value),
                    per_question_means([r for r in members if r.method == baseline], value),
                )
                for group, members in groups.items()
            }
        differences[metric] = per_method
    return Comparison(budget_tokens=budget, baseline=baseline, differences=differences)
