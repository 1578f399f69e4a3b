"""The judge's statistics against published or hand-computed values."""

from __future__ import annotations

import pytest

from driftrag.eval.stats import bootstrap_interval, holm, sign_test, wilson_interval


@pytest.mark.parametrize(
    ("successes", "n", "low", "high"),
    [
        # Newcombe (1998), Table I, Wilson score interval without continuity correction.
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0, 0.1611),
        (1, 29, 0.0061, 0.1718),
    ],
)
def test_wilson_interval_matches_newcombe(successes: int, n: int, low: float, high: float) -> None:
    assert wilson_interval(successes, n) == pytest.approx((low, high), abs=6e-5)


def test_wilson_interval_edges() -> None:
    assert wilson_interval(0, 0) == (0.0, 1.0)
    low, high = wilson_interval(5, 10)
    assert low == pytest.approx(1 - high) and low < 0.5 < high  # symmetric around one half
    assert wilson_interval(10, 10)[1] == 1.0
    with pytest.raises(ValueError):
        wilson_interval(11, 10)


@pytest.mark.parametrize(
    ("k", "n", "p"),
    [
        (9, 10, 22 / 1024),  # 2 * (1 + 10) / 2^10
        (1, 10, 22 / 1024),
        (10, 12, 2 * (1 + 12 + 66) / 4096),
        (3, 17, 0.012725830078125),  # 2 * (1 + 17 + 136 + 680) / 2^17
        (10, 10, 2 / 1024),
        (5, 10, 1.0),
        (0, 0, 1.0),
    ],
)
def test_sign_test_exact_p_values(k: int, n: int, p: float) -> None:
    assert sign_test(k, n) == pytest.approx(p, rel=1e-12)


def test_holm_on_a_known_example() -> None:
    # Sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 = 0.02, 0.03, 0.06, 0.04 -> monotone 0.02, 0.03, 0.06, 0.06.
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])  # capped at 1
    assert holm([]) == []


def test_the_bootstrap_interval_of_identical_methods_spans_zero() -> None:
    assert bootstrap_interval([0.0] * 40) == (0.0, 0.0)
    low, high = bootstrap_interval([])
    assert low <= 0 <= high


def test_the_bootstrap_interval_is_seeded_and_excludes_zero_only_for_a_clear_difference() -> None:
    mixed = [0.1, -0.1, 0.2, -0.2, 0.0, 0.05, -0.05] * 5
    low, high = bootstrap_interval(mixed)
    assert low < 0 < high and bootstrap_interval(mixed) == (low, high)
    clear = [0.3, 0.2, 0.25, 0.1, 0.4, 0.0, 0.35] * 5
    low, high = bootstrap_interval(clear)
    assert 0 < low < sum(clear) / len(clear) < high
