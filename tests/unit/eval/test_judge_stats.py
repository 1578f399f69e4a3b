"""Win rates, intervals, sign tests, Holm, the A/A check and position bias on scripted verdicts."""

from __future__ import annotations

import pytest

from driftrag.eval.judge import CRITERIA, Judgment, to_winner
from driftrag.eval.judge_stats import balanced, summarize_judgments
from driftrag.eval.stats import sign_test, wilson_interval


def judgment(q: str, a: str, b: str, trial: int, slot: str, *, error: str | None = None, rb: int = 0) -> Judgment:
    order = "ab" if trial % 2 == 0 else "ba"
    slots = {} if error else dict.fromkeys(CRITERIA, slot)
    return Judgment(
        question_id=q,
        method_a=a,
        repeat_a=0,
        method_b=b,
        repeat_b=rb,
        trial=trial,
        order=order,
        slots=slots,
        winners={c: to_winner(s, order) for c, s in slots.items()},
        error=error,
    )


def prefer(q: str, a: str, b: str, winner: str, trials: int = 2) -> list[Judgment]:
    """Trials in which `winner` ("a", "b" or "tie") wins whatever the order."""
    out = []
    for t in range(trials):
        order_ab = t % 2 == 0
        slot = "tie" if winner == "tie" else ("1" if (winner == "a") == order_ab else "2")
        out.append(judgment(q, a, b, t, slot))
    return out


def test_win_rate_interval_and_sign_test_over_questions() -> None:
    js = []
    for i in range(8):
        js += prefer(f"q{i}", "drift", "basic", "a")
    js += prefer("q8", "drift", "basic", "b") + prefer("q9", "drift", "basic", "tie")
    summary = summarize_judgments(js, 2)
    (pair,) = summary.pairs
    result = pair.criteria[0]
    assert (result.questions, result.trials) == (10, 20)
    assert (result.wins_a, result.wins_b, result.ties) == (16, 2, 2)
    assert result.win_rate_a == pytest.approx(0.85)  # (8 + 0.5) / 10
    assert (result.ci_low, result.ci_high) == pytest.approx(wilson_interval(8.5, 10))
    assert (result.questions_won_a, result.questions_won_b, result.questions_tied) == (8, 1, 1)
    assert result.p_value == pytest.approx(sign_test(8, 9)) == pytest.approx(20 / 512)
    # One pair, four criteria: Holm multiplies the smallest of four equal p-values by 4 and keeps them monotone.
    assert result.p_holm == pytest.approx(min(1.0, 4 * result.p_value))
    assert result.significant is False


def test_holm_family_spans_pairs_and_criteria_but_not_aa() -> None:
    js = []
    for i in range(12):
        js += prefer(f"q{i}", "drift", "basic", "a") + prefer(f"q{i}", "local", "basic", "tie")
        js += prefer(f"q{i}", "drift", "drift", "tie")
    summary = summarize_judgments(js, 2)
    assert [(p.method_a, p.method_b) for p in summary.pairs] == [("drift", "basic"), ("local", "basic")]
    strong = summary.pairs[0].criteria[0]
    assert strong.p_value == pytest.approx(2 / 4096)
    assert strong.p_holm == pytest.approx(8 * 2 / 4096)  # 2 pairs x 4 criteria
    assert strong.significant is True
    assert summary.pairs[1].criteria[0].p_value == 1.0
    assert all(c.p_holm is None for c in summary.aa_checks[0].criteria)


def test_aa_check_with_a_position_biased_judge() -> None:
    """A judge that always picks the first answer: counterbalancing gives 50 %, the bias shows apart."""
    js = [judgment(f"q{i}", "drift", "drift", t, "1") for i in range(10) for t in range(4)]
    summary = summarize_judgments(js, 4)
    (aa,) = summary.aa_checks
    assert aa.aa and summary.pairs == []
    for result in aa.criteria:
        assert result.win_rate_a == pytest.approx(0.5)
        assert result.ci_low < 0.5 < result.ci_high
        assert result.questions_tied == 10 and result.p_value == 1.0
    assert aa.aa_consistent is True
    assert aa.first_position_share == 1.0 and summary.first_position_share == 1.0


def test_aa_check_flags_a_judge_that_prefers_one_copy() -> None:
    js = []
    for i in range(15):
        js += prefer(f"q{i}", "local", "local", "a")
    (aa,) = summarize_judgments(js, 2).aa_checks
    assert aa.aa_consistent is False
    assert aa.first_position_share == pytest.approx(0.5)


def test_failed_trials_leave_the_rest_counterbalanced() -> None:
    trials = [
        judgment("q1", "drift", "basic", 0, "1"),  # ab, A wins
        judgment("q1", "drift", "basic", 1, "1"),  # ba, B wins
        judgment("q1", "drift", "basic", 2, "1"),  # ab, A wins
        judgment("q1", "drift", "basic", 3, "1", error="invalid output"),  # ba failed
    ]
    kept, dropped = balanced(trials)
    assert [j.trial for j in kept] == [0, 1] and dropped == 1
    (pair,) = summarize_judgments(trials, 4).pairs
    assert pair.failed_trials == 1 and pair.unbalanced_trials_dropped == 1
    assert pair.criteria[0].win_rate_a == 0.5 and pair.criteria[0].trials == 2
