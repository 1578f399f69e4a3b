"""Paired differences against the baseline: identical methods show no detectable difference, a method
that wins every question does, per question type and overall."""

from __future__ import annotations

from driftrag.eval.compare import ALL, baseline_of, compare, paired_difference
from driftrag.eval.metrics import RowMetrics
from driftrag.eval.report_sections import verdict


def row(qid: str, method: str, hits: int, kind: str = "local") -> RowMetrics:
    return RowMetrics(
        question_id=qid,
        question_type=kind,
        method=method,
        repeat=0,
        evidence=1,
        exact_hits=hits,
        fuzzy_hits=hits,
        first_hit_rank=1 if hits else None,
        context_tokens=100,
        answer_recall=0.5,
        evidence_token_recall=0.5,
        failed=False,
    )


def test_identical_methods_show_no_detectable_difference() -> None:
    rows = [row(f"q{i}", m, i % 2) for i in range(30) for m in ("basic", "local")]
    comparison = compare(rows, ["local", "basic"], 4000)
    assert comparison.baseline == "basic"
    for per_method in comparison.differences.values():
        d = per_method["local"][ALL]
        assert d.questions == 30 and d.mean == 0 and d.ci_low <= 0 <= d.ci_high
        assert (d.wins, d.losses, d.p_value) == (0, 0, 1.0) and not d.detectable
        assert verdict("local", "basic", d) == "no detectable difference"


def test_a_method_that_wins_most_questions_is_detectably_above() -> None:
    rows = [row(f"q{i}", "basic", 0, "multi-hop") for i in range(20)]
    rows += [row(f"q{i}", "drift", int(i < 18), "multi-hop") for i in range(20)]
    d = compare(rows, ["drift", "basic"], 4000).differences["exact evidence recall"]["drift"]
    assert d["multi-hop"].detectable and d[ALL].detectable and d[ALL].ci_low > 0
    assert (d[ALL].wins, d[ALL].losses, d[ALL].ties) == (18, 0, 2) and d[ALL].p_value < 0.001
    assert d["local"].questions == 0 and not d["local"].detectable
    assert verdict("drift", "basic", d[ALL]) == "drift above basic"


def test_only_questions_both_methods_define_are_paired() -> None:
    d = paired_difference({"q1": 1.0, "q2": 0.5}, {"q2": 0.25, "q3": 0.0})
    assert d.questions == 1 and d.mean == 0.25
    assert baseline_of(["drift", "local"]) == "drift" and baseline_of(["drift", "basic"]) == "basic"
