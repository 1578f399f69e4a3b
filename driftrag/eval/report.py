"""`driftrag eval report`: the Markdown report of a results folder, with its metrics and plots.

Reads `run.json`, `questions.jsonl`, `runs.jsonl`, `corpus.jsonl` and, when the answers were judged,
`judge.json`; writes `report.md`, `metrics.json` and `plots/*.png` into the same folder. Everything but
the judge section is computed here, offline, from the recorded rows: at each context budget, every
method's metrics beside the floor and the ceiling (`driftrag.eval.bounds`), how full each method's
context was, and each method's paired differences with basic (`driftrag.eval.compare`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from driftrag.eval.bounds import CEILING, FLOOR, UNCUT, floor_sources, read_corpus
from driftrag.eval.compare import Comparison, compare
from driftrag.eval.judge_stats import CriterionResult, JudgeSummary, PairResult
from driftrag.eval.metrics import Aggregate, MetricsTable, RowMetrics, Tokens, metrics_table, row_metrics
from driftrag.eval.plots import PlotsUnavailable, make_plots
from driftrag.eval.questions import QUESTION_TYPES, QuestionItem
from driftrag.eval.records import CORPUS, JUDGE_SUMMARY, METRICS, PLOTS, REPORT, load_run
from driftrag.eval.report_sections import budget_section, differences_section, fill_section
from driftrag.eval.summary import RunSummary, all_row_metrics, summarize
from driftrag.eval.terms import QuestionTerms, WordSets, question_terms, set_language
from driftrag.models.search import Source


class ReportData(BaseModel):
    model_config = ConfigDict(extra="forbid")

    summary: RunSummary
    language: str
    run_budget: int
    tables: list[MetricsTable]
    comparisons: list[Comparison]
    judge: JudgeSummary | None


class ReportOutcome(BaseModel):
    model_config = ConfigDict(extra="forbid")

    report: Path
    metrics: Path
    plots: list[Path]
    plots_note: str | None


def build_report(results: Path, default_budget: int, budgets: Sequence[int] | None = None) -> ReportOutcome:
    """Write the report of `results` at `budgets` (default: those of the run, else `default_budget`)."""
    manifest, questions, rows = load_run(results)
    budgets = sorted(set(budgets or manifest.report_budgets(default_budget)))
    run_budget = manifest.run_budget or (max(manifest.budgets) if manifest.budgets else default_budget)
    summary = summarize(manifest, questions, rows, budgets[-1])
    language = set_language(questions)
    terms = {q.id: question_terms(q, language) for q in questions}
    tokens, word_sets = Tokens(), WordSets()
    corpus = read_corpus(results / CORPUS)
    ceiling = None if corpus is None else bound_rows(questions, CEILING, corpus, UNCUT, tokens, terms, word_sets)
    tables, comparisons = [], []
    for budget in budgets:
        method_rows = all_row_metrics(questions, rows, budget, tokens, terms, word_sets)
        bounds = [] if corpus is None else bound_rows(questions, FLOOR, corpus, budget, tokens, terms, word_sets)
        methods = [*manifest.methods, *([FLOOR, CEILING] if corpus is not None else [])]
        tables.append(metrics_table([*method_rows, *bounds, *(ceiling or [])], methods, budget))
        comparisons.append(compare(method_rows, manifest.methods, budget))
    judge_path = results / JUDGE_SUMMARY
    judge = JudgeSummary.model_validate_json(judge_path.read_text(encoding="utf-8")) if judge_path.is_file() else None
    data = ReportData(
        summary=summary,
        language=language.name,
        run_budget=run_budget,
        tables=tables,
        comparisons=comparisons,
        judge=judge,
    )
    metrics_path = results / METRICS
    metrics_path.write_text(data.model_dump_json(indent=2) + "\n", encoding="utf-8")
    try:
        plots = make_plots(results / PLOTS, summary.metrics, summary.cost, judge)
        note = None
    except PlotsUnavailable as exc:
        plots, note = [], str(exc)
    type_counts = Counter(q.type for q in questions)
    report_path = results / REPORT
    text = render(data, type_counts, [p.relative_to(results) for p in plots], note, has_corpus=corpus is not None)
    report_path.write_text(text, encoding="utf-8")
    return ReportOutcome(report=report_path, metrics=metrics_path, plots=plots, plots_note=note)


def bound_rows(
    questions: Sequence[QuestionItem],
    bound: str,
    corpus: Sequence[Source],
    budget: int,
    tokens: Tokens,
    terms: dict[str, QuestionTerms],
    word_sets: WordSets,
) -> list[RowMetrics]:
    """The floor's or the ceiling's metrics for every question (`driftrag.eval.bounds`)."""
    return [
        row_metrics(
            q,
            bound,
            0,
            floor_sources(corpus, q.id) if bound == FLOOR else corpus,
            budget,
            tokens,
            terms=terms[q.id],
            word_sets=word_sets,
        )
        for q in questions
    ]


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def _num(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def recall_table(metrics: MetricsTable, field: str = "recall") -> list[str]:
    """Evidence recall by method (rows) and question type (columns), `field` of each aggregate."""
    return _table(*recall_cells(metrics, field))


def recall_cells(metrics: MetricsTable, field: str = "recall") -> tuple[list[str], list[list[str]]]:
    """The columns and rows of `recall_table`."""

    def cell(aggregate: Aggregate) -> str:
        value = getattr(aggregate, field)
        return f"{_pct(value)} (n={aggregate.questions_with_evidence})" if value is not None else "–"

    rows = [
        [
            method,
            *(cell(metrics.by_method_and_type[method][t]) for t in QUESTION_TYPES),
            cell(metrics.by_method[method]),
        ]
        for method in metrics.by_method
    ]
    return ["method", *QUESTION_TYPES, "all"], rows


def render(
    data: ReportData,
    type_counts: Counter[str],
    plots: Sequence[Path],
    plots_note: str | None,
    *,
    has_corpus: bool = True,
) -> str:
    summary, metrics = data.summary, data.summary.metrics
    budget = metrics.budget_tokens
    types = ", ".join(f"{type_counts.get(t, 0)} {t}" for t in QUESTION_TYPES)
    budgets = ", ".join(str(t.budget_tokens) for t in data.tables)
    above = [t.budget_tokens for t in data.tables if t.budget_tokens > data.run_budget]
    lines = [
        f"# Evaluation of kb `{summary.kb}`",
        "",
        f"- Mode: {summary.mode_description or summary.mode}",
        f"- Questions: {summary.questions} ({types}) of split {summary.split}; methods: {', '.join(summary.methods)}; "
        f"repeats: {summary.repeats}",
        f"- Rows: {summary.rows} of {summary.expected_rows} expected; errors: {summary.errors}",
        f"- Context budgets: {budgets} cl100k tokens, every method's ranked sources cut to each; the methods ran "
        f"with a context budget of {data.run_budget}"
        + (f" (below {', '.join(map(str, above))}: those budgets cannot be filled)" if above else ""),
        f"- Language of the question set (stopwords of the answer-based metrics): {data.language}",
        *([] if has_corpus else [f"- No `{CORPUS}` in the folder (a run before it was kept): no floor or ceiling"]),
        "",
        *fill_section(data.tables),
        "",
        *budget_section(data.tables, data.language),
        "",
        *differences_section(data.comparisons),
        "",
        f"## Evidence recall by question type at {budget} context tokens",
        "",
        "Each method's ranked sources are cut to the same token budget; an evidence string counts when it",
        "appears (normalised) inside one source of the cut context. Mean over questions with evidence",
        "(n = questions); failed rows count as empty contexts.",
        "",
        *recall_table(metrics),
        "",
        "Fuzzy variant (an evidence string counts when a window of a source shares ≥ 90 % of its word tokens):",
        "",
        *recall_table(metrics, "fuzzy_recall"),
        "",
        "## First hit and context size",
        "",
        *_table(
            ["method", "hit rate", "mean first-hit rank", "median first-hit rank", "MRR", "mean context tokens"],
            [
                [
                    m,
                    _pct(a.hit_rate),
                    _num(a.mean_first_hit_rank, 2),
                    _num(a.median_first_hit_rank, 1),
                    _num(a.mrr, 3),
                    _num(a.mean_context_tokens, 0),
                ]
                for m, a in metrics.by_method.items()
            ],
        ),
        "",
        "First-hit rank: 1-based rank of the first source (within the budget) holding any evidence exactly;",
        "hit rate: share of questions with such a source. Context tokens: the whole context, before the cut.",
        "",
        "## Cost per question",
        "",
        *_table(
            [
                "method",
                "rows",
                "errors",
                "degraded",
                "ungrounded",
                "LLM calls",
                "prompt tokens",
                "completion tokens",
                "embedding requests",
                "wall s (mean)",
                "wall s (median)",
                "wall s (max)",
            ],
            [
                [
                    m,
                    str(c.rows),
                    str(c.errors),
                    str(c.degraded),
                    str(c.ungrounded),
                    _num(c.llm_calls),
                    _num(c.prompt_tokens, 0),
                    _num(c.completion_tokens, 0),
                    _num(c.embedding_requests),
                    _num(c.seconds_mean, 2),
                    _num(c.seconds_median, 2),
                    _num(c.seconds_max, 2),
                ]
                for m, c in summary.cost.items()
            ],
        ),
    ]
    errors = [f"- {m}: {example}" for m, c in summary.cost.items() for example in c.error_examples]
    if errors:
        lines += ["", "Errors (first distinct messages per method):", "", *errors]
    lines += ["", *judge_section(data.judge), "", "## Plots", ""]
    if plots_note:
        lines.append(f"No plots: {plots_note}.")
    lines += [f"![{path.stem}]({path.as_posix()})" for path in plots]
    return "\n".join(lines) + "\n"


def judge_section(judge: JudgeSummary | None) -> list[str]:
    if judge is None:
        return ["## LLM-as-judge", "", "Not judged (`driftrag eval judge` needs a model)."]
    lines = [
        "## LLM-as-judge",
        "",
        f"{judge.trials_per_pair} trials per question and pair, half with each answer shown first; "
        f"{judge.judgments} judgments, {judge.failed} failed; judge tokens {judge.prompt_tokens:,} in / "
        f"{judge.completion_tokens:,} out. Win rate of A: mean per-question score (win 1, tie ½, loss 0) with a "
        "95 % Wilson interval over questions; p: exact sign test on the questions each method won; "
        f"p (Holm): corrected across all pairs × criteria; significant at α = {judge.alpha}.",
        "",
        *_table(
            ["A vs B", "criterion", "win rate of A [95% CI]", "questions A / B / tied", "p", "p (Holm)", "significant"],
            [
                [*_judge_row(pair, c), _num(c.p_holm, 4), "yes" if c.significant else "no"]
                for pair in judge.pairs
                for c in pair.criteria
            ],
        ),
        "",
        f"Position bias: {_pct(judge.first_position_share)} of decisive verdicts chose the answer shown first "
        "(50 % for an unbiased judge; counterbalancing cancels it in the win rates).",
    ]
    if judge.aa_checks:
        lines += [
            "",
            "A/A check (a method against itself; the win rate should be near 50 % with its interval holding 50 %):",
            "",
            *_table(
                ["method", "criterion", "win rate [95% CI]", "questions A / B / tied", "p"],
                [_judge_row(pair, c) for pair in judge.aa_checks for c in pair.criteria],
            ),
            "",
            *(
                f"- {pair.method_a}: {'consistent with 50 %' if pair.aa_consistent else 'NOT consistent with 50 %'}; "
                f"first-position share {_pct(pair.first_position_share)}"
                for pair in judge.aa_checks
            ),
        ]
    return lines


def _judge_row(pair: PairResult, c: CriterionResult) -> list[str]:
    label = pair.method_a if pair.aa else f"{pair.method_a} vs {pair.method_b}"
    interval = f"{_pct(c.win_rate_a)} [{_pct(c.ci_low)}, {_pct(c.ci_high)}]"
    tally = f"{c.questions_won_a} / {c.questions_won_b} / {c.questions_tied}"
    return [label, c.criterion, interval, tally, _num(c.p_value, 4)]
