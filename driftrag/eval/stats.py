"""The statistics of the judge and of the paired comparisons, a few lines each (no scientific stack
beyond numpy, which the offline embedder already needs).

- Wilson score interval of a proportion (Wilson 1927; Newcombe 1998 compares it with the others).
- Exact two-sided sign test: the binomial test of k successes in n trials against p = 1/2.
- Holm's step-down correction of p-values for multiple comparisons (Holm 1979).
- Percentile bootstrap interval of a mean of paired differences (Efron & Tibshirani 1993), with numpy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from statistics import NormalDist


def wilson_interval(successes: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for `successes` out of `n` (fractional successes allowed: ties count 1/2)."""
    if n <= 0:
        return (0.0, 1.0)
    if not 0 <= successes <= n:
        raise ValueError(f"successes {successes} outside 0..{n}")
    z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (max(0.0, centre - half), min(1.0, centre + half))


def sign_test(successes: int, n: int) -> float:
    """Exact two-sided p-value of `successes` in `n` trials under p = 1/2 (ties already removed).

    With p = 1/2 the distribution is symmetric, so the two-sided p-value is twice the smaller tail."""
    if n == 0:
        return 1.0
    if not 0 <= successes <= n:
        raise ValueError(f"successes {successes} outside 0..{n}")
    smaller = min(successes, n - successes)
    tail = Fraction(sum(math.comb(n, i) for i in range(smaller + 1)), 2**n)
    return float(min(Fraction(1), 2 * tail))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the input order: compare each with the family-wise alpha directly."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for position, index in enumerate(order):
        running = max(running, min(1.0, (m - position) * p_values[index]))
        adjusted[index] = running
    return adjusted


def bootstrap_interval(
    differences: Sequence[float], *, confidence: float = 0.95, resamples: int = 5000, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of paired `differences` (questions resampled with
    replacement, `seed` fixed so a report is reproducible); (0, 0) for no questions."""
    import numpy as np

    if not differences:
        return (0.0, 0.0)
    values = np.asarray(differences, dtype=float)
    picks = np.random.default_rng(seed).integers(0, len(values), size=(resamples, len(values)))
    means = values[picks].mean(axis=1)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return (float(low), float(high))
