"""The equal-context sections of the report: how full each method's context was, every metric per
budget beside the floor and the ceiling, and the paired differences with their uncertainty."""

from __future__ import annotations

from collections.abc import Sequence

from driftrag.eval.bounds import BOUNDS, CEILING, FLOOR
from driftrag.eval.compare import ALL, METRICS, Comparison, Difference
from driftrag.eval.metrics import Aggregate, MetricsTable
from driftrag.eval.questions import QUESTION_TYPES

# A method whose median context after the cut is below this share of the budget did not fill it.
FILL_FLAG = 0.9
# The report's name of each aggregate field, in the order the tables show them.
METRIC_FIELDS = {
    "exact evidence recall": "recall",
    "fuzzy evidence recall": "fuzzy_recall",
    "answer-token recall": "answer_recall",
    "evidence-token recall": "evidence_token_recall",
}
BOUND_LABELS = {FLOOR: "floor (random chunks)", CEILING: "ceiling (whole corpus)"}


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def methods_of(tables: Sequence[MetricsTable]) -> list[str]:
    return [m for m in tables[0].by_method if m not in BOUNDS] if tables else []


def fill_section(tables: Sequence[MetricsTable]) -> list[str]:
    """Median tokens each method kept after the cut, per budget, flagged below `FILL_FLAG`."""
    rows, short = [], []
    for method in methods_of(tables):
        cells = []
        for t in tables:
            kept = t.by_method[method].median_kept_tokens
            share = kept / t.budget_tokens
            flag = " ⚠" if share < FILL_FLAG else ""
            cells.append(f"{kept:,.0f} ({100 * share:.0f} %){flag}")
            if share < FILL_FLAG:
                short.append(f"{method} at {t.budget_tokens} ({100 * share:.0f} %)")
        rows.append([method, *cells])
    verdict = (
        f"Below {FILL_FLAG:.0%} of the budget (⚠), so compared on less context: " + ", ".join(short) + "."
        if short
        else f"Every method filled at least {FILL_FLAG:.0%} of every budget."
    )
    return [
        "## Context filled",
        "",
        "Median context tokens per method after the cut (sources charged as the answering step renders them),",
        "and their share of the budget:",
        "",
        *table(["method", *(f"{t.budget_tokens} tokens" for t in tables)], rows),
        "",
        verdict,
    ]


def budget_section(tables: Sequence[MetricsTable], language: str) -> list[str]:
    """Each metric over all questions, a column per budget, the floor and the ceiling below the methods."""
    lines = [
        "## Every metric at every budget",
        "",
        "Mean over the questions that define the metric (n); floor: the kb's chunks in a random order",
        "(seeded per question) cut to the budget; ceiling: every chunk of the kb, uncut. Answer-token recall:",
        f"the reference answer's content words ({language} stopwords and the question's own words left out)",
        "found in the cut context; evidence-token recall: per evidence string, the best share of its content",
        "words in one source.",
    ]
    rows_of = [*methods_of(tables), *(b for b in BOUNDS if tables and b in tables[0].by_method)]
    for name, field in METRIC_FIELDS.items():
        lines += ["", f"### {name[0].upper()}{name[1:]}", ""]
        lines += table(
            ["method", *(f"{t.budget_tokens} tokens" for t in tables)],
            [[BOUND_LABELS.get(m, m), *(_cell(t.by_method[m], field) for t in tables)] for m in rows_of],
        )
    return lines


def _cell(aggregate: Aggregate, field: str) -> str:
    value = getattr(aggregate, field)
    n = aggregate.questions_with_answer_terms if field == "answer_recall" else aggregate.questions_with_evidence
    return "–" if value is None else f"{pct(value)} (n={n})"


def difference_cell(d: Difference) -> str:
    if d.questions == 0:
        return "–"
    return (
        f"{100 * d.mean:+.1f} [{100 * d.ci_low:+.1f}, {100 * d.ci_high:+.1f}] "
        f"{d.wins}/{d.losses}/{d.ties} p={d.p_value:.2g}"
    )


def verdict(method: str, baseline: str, d: Difference) -> str:
    if d.questions == 0:
        return "no questions"
    if not d.detectable:
        return "no detectable difference"
    return f"{method} {'above' if d.mean > 0 else 'below'} {baseline}"


def differences_section(comparisons: Sequence[Comparison]) -> list[str]:
    if not comparisons or not comparisons[0].differences.get(next(iter(METRICS))):
        return []
    baseline = comparisons[0].baseline
    lines = [
        f"## Differences with {baseline}",
        "",
        f"Per question, the method's value minus {baseline}'s (percentage points), averaged: mean [95 % bootstrap",
        "interval over questions, seeded], questions won / lost / tied, exact sign-test p. Where the interval",
        'holds 0 the verdict is "no detectable difference".',
    ]
    for comparison in comparisons:
        for metric, per_method in comparison.differences.items():
            lines += ["", f"### {metric[0].upper()}{metric[1:]} at {comparison.budget_tokens} tokens", ""]
            lines += table(
                ["method", *QUESTION_TYPES, ALL, "verdict (all)"],
                [
                    [
                        method,
                        *(difference_cell(groups[g]) for g in (*QUESTION_TYPES, ALL)),
                        verdict(method, baseline, groups[ALL]),
                    ]
                    for method, groups in per_method.items()
                ],
            )
    return lines
