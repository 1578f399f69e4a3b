"""The report's figures (matplotlib, Agg backend: no display needed). matplotlib is an optional extra
(`pip install 'driftrag[eval]'`); without it `make_plots` raises `PlotsUnavailable` and the report
says so instead of failing."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from driftrag.eval.judge_stats import JudgeSummary
from driftrag.eval.metrics import MetricsTable
from driftrag.eval.questions import QUESTION_TYPES
from driftrag.eval.summary import MethodCost


class PlotsUnavailable(RuntimeError):
    """matplotlib is not installed."""


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise PlotsUnavailable("matplotlib is not installed: pip install 'driftrag[eval]' for the plots") from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def make_plots(
    out_dir: Path, metrics: MetricsTable, cost: dict[str, MethodCost], judge: JudgeSummary | None
) -> list[Path]:
    """Write the figures into `out_dir` and return their paths."""
    plt = _pyplot()
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [_recall_by_type(plt, out_dir, metrics), _cost_vs_quality(plt, out_dir, metrics, cost)]
    if judge is not None and (judge.pairs or judge.aa_checks):
        paths.append(_win_rates(plt, out_dir, judge))
    return paths


def _recall_by_type(plt: Any, out_dir: Path, metrics: MetricsTable) -> Path:
    return _save(plt, _recall_by_type_figure(plt, metrics), out_dir / "recall_by_type.png")


def recall_by_type_png(metrics: MetricsTable, *, title: str | None = None, dpi: int = 100) -> bytes:
    """The report's recall-by-type bar chart as PNG bytes (a notebook shows it with `IPython.display.Image`)."""
    plt = _pyplot()
    fig = _recall_by_type_figure(plt, metrics, title)
    out = io.BytesIO()
    # Tight box: a long title or the legend beside the axes is never cut. No metadata: the same
    # metrics give the same bytes.
    fig.savefig(out, format="png", dpi=dpi, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return out.getvalue()


def _recall_by_type_figure(plt: Any, metrics: MetricsTable, title: str | None = None) -> Any:
    methods = list(metrics.by_method)
    # Question types without evidence (often `global`) have no recall to show.
    kinds = [t for t in QUESTION_TYPES if any(metrics.by_method_and_type[m][t].recall is not None for m in methods)]
    groups = [*kinds, "all"]
    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.8 / max(len(methods), 1)
    for i, method in enumerate(methods):
        values = [_recall(metrics, method, group) for group in groups]
        ax.bar([g + i * width for g in range(len(groups))], values, width, label=method)
    ax.set_xticks([g + width * (len(methods) - 1) / 2 for g in range(len(groups))], groups)
    ax.set_ylim(0, 1)
    ax.set_ylabel("evidence recall (exact)")
    ax.set_title(title or f"Evidence recall by question type, {metrics.budget_tokens} context tokens")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def _recall(metrics: MetricsTable, method: str, group: str) -> float:
    aggregate = metrics.by_method[method] if group == "all" else metrics.by_method_and_type[method][group]
    return aggregate.recall or 0.0


def _cost_vs_quality(plt: Any, out_dir: Path, metrics: MetricsTable, cost: dict[str, MethodCost]) -> Path:
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    panels: Sequence[tuple[str, str]] = (
        ("seconds_mean", "mean wall time per question (s)"),
        ("prompt_tokens", "mean prompt tokens per question"),
    )
    for ax, (field, label) in zip(axes, panels, strict=True):
        xs = []
        for method, aggregate in metrics.by_method.items():
            x = getattr(cost[method], field) if method in cost else 0.0
            xs.append(x)
            ax.scatter([x], [aggregate.recall or 0.0], s=60)
            ax.annotate(method, (x, aggregate.recall or 0.0), textcoords="offset points", xytext=(5, 5))
        if max(xs, default=0.0) <= 0:
            ax.set_xlim(-0.05, 1)
            ax.text(0.5, 0.05, "all zero (offline: no model calls)", transform=ax.transAxes, ha="center")
        else:
            ax.set_xlim(left=0, right=max(xs) * 1.15)
        ax.set_xlabel(label)
        ax.set_ylabel("evidence recall (exact)")
        ax.set_ylim(0, 1)
    fig.suptitle(f"Cost and retrieval quality ({metrics.budget_tokens} context tokens)")
    return _save(plt, fig, out_dir / "cost_vs_quality.png")


def _win_rates(plt: Any, out_dir: Path, judge: JudgeSummary) -> Path:
    labels: list[str] = []
    rates: list[float] = []
    errors: list[tuple[float, float]] = []
    for pair in [*judge.pairs, *judge.aa_checks]:
        for criterion in pair.criteria:
            if criterion.win_rate_a is None:
                continue
            suffix = " (A/A)" if pair.aa else ""
            labels.append(f"{pair.method_a} vs {pair.method_b}{suffix}: {criterion.criterion}")
            rates.append(criterion.win_rate_a)
            errors.append(
                (criterion.win_rate_a - (criterion.ci_low or 0.0), (criterion.ci_high or 1.0) - criterion.win_rate_a)
            )
    fig, ax = plt.subplots(figsize=(8, 0.35 * max(len(labels), 4) + 1))
    positions = list(range(len(labels)))
    ax.barh(positions, rates, xerr=list(zip(*errors, strict=True)) if errors else None, capsize=3)
    ax.axvline(0.5, color="grey", linestyle="--", linewidth=1)
    ax.set_yticks(positions, labels)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("win rate of the first method (95% Wilson interval)")
    ax.set_title("LLM-as-judge pairwise win rates")
    return _save(plt, fig, out_dir / "win_rates.png")


def _save(plt: Any, fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
