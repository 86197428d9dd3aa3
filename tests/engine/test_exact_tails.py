"""Exact tails of the gate's rate statistic at small counts (``fairgate.engine.exact``).

- The tail machinery (probability of the outcomes beyond an observed statistic, maximised over the nuisance rate)
  reproduces scipy's ``barnard_exact`` when given Barnard's own (unpooled Wald) statistic over the whole nuisance
  range, and scipy's ``binom.pmf``.
- The gate's exact pair tail is at least the normal one where the normal tail is too small (the far tail with few
  trials), and its rejection rate under a seeded null is at most its nominal level (the normal tail's is not).
- A family with a small group is refined (its p-value is larger than the normal studentized-range one); a family of
  large groups is not touched.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from fairgate.engine import exact
from fairgate.engine.stats import Component, pair_family


def _wald_grid(n1: int, n2: int) -> np.ndarray:
    a = np.arange(n1 + 1.0)[:, None] / n1
    b = np.arange(n2 + 1.0)[None, :] / n2
    variance = a * (1 - a) / n1 + b * (1 - b) / n2
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(variance > 0, np.abs(a - b) / np.sqrt(variance), 0.0)


@pytest.mark.parametrize(("x1", "n1", "x2", "n2"), [(7, 12, 2, 15), (20, 20, 34, 64), (3, 30, 12, 25), (0, 40, 6, 40)])
def test_tail_machinery_reproduces_barnard_exact(x1: int, n1: int, x2: int, n2: int) -> None:
    grid = _wald_grid(n1, n2)
    rates = np.linspace(1e-6, 1 - 1e-6, 400)
    first = exact.binomial_pmf(np.arange(n1 + 1.0), n1, rates)
    cumulative = exact.cumulative_of(exact.binomial_pmf(np.arange(n2 + 1.0), n2, rates))
    ours = exact.tail_from_grid(grid >= grid[x1, x2] - 1e-9, first, cumulative)
    theirs = stats.barnard_exact([[x1, x2], [n1 - x1, n2 - x2]], pooled=False).pvalue
    assert ours == pytest.approx(theirs, rel=2e-3)


def test_binomial_probabilities_are_scipys() -> None:
    rates = np.array([0.0, 0.013, 0.5, 0.97, 1.0])
    ours = exact.binomial_pmf(np.arange(61.0), 60, rates)
    assert np.allclose(ours, stats.binom.pmf(np.arange(61)[None, :], 60, rates[:, None]), rtol=1e-9, atol=1e-300)


def test_exact_tail_exceeds_the_normal_one_where_the_normal_is_too_small() -> None:
    """Identical groups of 15-60 trials: the exact tail at t = 3.5-4 is 1.5 to 10 times the normal one; a group with
    no events against a large group with 6.5% is far beyond the normal tail (a draw that happens 2% of the time)."""
    for n in (15, 30, 60):
        for t in (3.5, 4.0):
            ratio = exact.exact_pair_tail(n // 2, n, n // 2, n, t, 0.0, log=False) / exact.normal_pair_tail(t, 0.0, 1)
            assert 1.5 < ratio < 20, (n, t, ratio)
    zero_events = exact.exact_pair_tail(0, 60, 130, 2000, 4.0, 0.0, log=False)
    assert zero_events > 100 * float(exact.normal_pair_tail(4.0, 0.0, 1.0))
    assert exact.exact_pair_tail(0, 60, 130, 2000, 4.0, 0.0, log=False) <= 1.0


@pytest.mark.parametrize(
    ("n1", "n2", "rate", "threshold", "log"),
    [
        (20, 64, 0.53, 0.0, False),
        (40, 900, 0.065, 0.0, False),
        (30, 400, 0.3, 0.1, False),
        (40, 500, 0.2, np.log(1 / 0.8), True),
    ],
)
def test_exact_pair_test_holds_its_level_under_the_null(
    n1: int, n2: int, rate: float, threshold: float, log: bool
) -> None:
    """Seeded: draws at the null's boundary; P(exact p <= 0.01) stays at most 0.01 (+ Monte Carlo slack)."""
    rng = np.random.default_rng(5)
    runs, level = 600, 0.01
    other = rate * np.exp(threshold) if log else rate + threshold
    x1, x2 = rng.binomial(n1, other, runs), rng.binomial(n2, rate, runs)
    scale = (exact.log_rate, exact.log_rate_variance) if log else (lambda x, n: x / n, exact.rate_variance)
    d = scale[0](x1.astype(float), np.full(runs, n1)) - scale[0](x2.astype(float), np.full(runs, n2))
    se = np.sqrt(scale[1](x1.astype(float), np.full(runs, n1)) + scale[1](x2.astype(float), np.full(runs, n2)))
    t = (np.abs(d) - threshold) / se
    p = [
        exact.exact_pair_tail(a, n1, b, n2, s, threshold, log=log) if s > 0 else 1.0
        for a, b, s in zip(x1, x2, t, strict=True)
    ]
    rejections = int(np.sum(np.array(p) <= level))
    assert rejections <= stats.binom.ppf(0.999, runs, level), rejections


def test_normal_tail_is_anti_conservative_where_the_exact_one_is_not() -> None:
    """The failure the exact tails fix: a group of 60 with a 6.5% rate against 2,000 people (identical groups);
    the normal tail rejects at p <= 0.001 far more often than 0.1% of the time."""
    rng = np.random.default_rng(11)
    runs, level = 2000, 0.001
    x1, x2 = rng.binomial(60, 0.065, runs), rng.binomial(2000, 0.065, runs)
    d = x1 / 60 - x2 / 2000
    se = np.sqrt(
        exact.rate_variance(x1.astype(float), np.full(runs, 60.0)) + exact.rate_variance(x2, np.full(runs, 2000.0))
    )
    t = np.abs(d) / se
    normal = 2 * stats.norm.sf(t)
    assert np.mean(normal <= level) > 5 * level
    exact_p = np.array(
        [exact.exact_pair_tail(a, 60, b, 2000, s, 0.0, log=False) for a, b, s in zip(x1, x2, t, strict=True)]
    )
    assert np.mean(exact_p <= level) <= level + 3 * np.sqrt(level / runs)


def _family(successes: list[int], trials: list[int]) -> tuple[float, float]:
    x, n = np.array(successes, dtype=float), np.array(trials, dtype=float)
    value = x / n
    variance = exact.rate_variance(x, n)
    replicates = np.empty((0, x.size))
    refined = pair_family([Component(value, replicates, variance, counts=(x, n))], bootstrap=False)
    plain = pair_family([Component(value, replicates, variance)], bootstrap=False)
    assert refined is not None
    assert plain is not None
    return refined.p_beyond(0.0), plain.p_beyond(0.0)


def test_a_family_with_a_small_group_is_refined_and_one_of_large_groups_is_not() -> None:
    refined, plain = _family([20, 34, 300], [20, 64, 600])
    assert refined > 3 * plain
    refined, plain = _family([400, 500, 300], [1000, 1200, 800])
    assert refined == plain


def test_switch_rule_reads_expected_counts() -> None:
    assert exact.needs_exact(0, 60, 130, 2000)  # 60 x 6.5% = 3.9 expected events
    assert exact.needs_exact(30, 100, 600, 2000)  # 100 x 0.3 = 30 < 50
    assert not exact.needs_exact(100, 400, 500, 2000)  # 400 x 0.25 = 100
    assert not exact.needs_exact(0, 0, 5, 10)  # no trials: no test


def test_switch_rule_over_pairs_equals_the_rule_pair_by_pair() -> None:
    """needs_exact_pairs (one array operation per family) against the documented rule written pair by pair."""

    def rule(x1: float, n1: float, x2: float, n2: float) -> bool:
        if not all(np.isfinite([x1, n1, x2, n2])):
            return False
        n1, n2 = round(n1), round(n2)  # half to even, as Python rounds
        if min(n1, n2) <= 0:
            return False
        pooled = (x1 + x2) / (n1 + n2)
        return min(n1, n2) * min(pooled, 1.0 - pooled) < exact.EXACT_BELOW_EXPECTED

    rng = np.random.default_rng(8)
    trials = np.concatenate([rng.integers(0, 400, 3000).astype(float), rng.integers(0, 400, 500) + 0.5])
    trials = rng.permutation(np.concatenate([trials, [0.4, 0.5, 1.5, 2.5, np.nan, np.inf]]))
    n1, n2 = trials, rng.permutation(trials)
    x1 = np.floor(rng.random(n1.size) * np.nan_to_num(n1, posinf=5.0))
    x2 = np.floor(rng.random(n2.size) * np.nan_to_num(n2, posinf=5.0))
    counts = np.column_stack([x1, n1, x2, n2])
    expected = [rule(*row) for row in counts.tolist()]
    assert exact.needs_exact_pairs(counts).tolist() == expected
    assert 0 < sum(expected) < len(expected)
