"""Exact tail probabilities of the gate's rate statistic at small counts.

The gate judges "the range of a rate across groups exceeds the threshold" with the max-t statistic
``t = (|d_ij| - threshold) / se_ij`` over pairs of groups (``fairgate.engine.stats.PairFamily``), where ``d`` is a
difference of rates (or of log rates, for a ratio) and ``se`` comes from the rates with one success and one failure
added. Its normal (studentized-range) tail is too small in the far tail when a group has few trials: with 15-60
trials the exact tail is several times the normal one at t = 3.5-4, which is where Holm's step-down reads it.

So for a pair with few expected events the tail P(T_ij >= t) is computed exactly, as an unconditional exact test
of the same statistic: the probability of every pair of outcomes (a of n1, b of n2) whose statistic is at least t,
maximised over the nuisance rate along the null's boundary (|p1 - p2| = threshold, or p1 / p2 = e^(+-threshold) on
the log scale). As Berger & Boos (1994), the nuisance (the larger group's rate) ranges over its 1 - ``GAMMA``
confidence interval only and ``GAMMA`` is added: the test stays exact without the conservatism of the full range.
The family's tail is bounded by the sum of its pairs' tails (union bound: exact where the counts are small, normal
elsewhere), and the gate uses the larger of that and the studentized-range tail.

The switch rule (``needs_exact``): a pair is tested exactly when its smaller group expects fewer than
``EXACT_BELOW_EXPECTED`` events or non-events at the pair's pooled rate (a group with no events where the other has
a few percent: the normal statistic is then far out although such a draw is common). Weighted (effective,
non-integer) counts are rounded. A family p-value of 0.5 or more is not refined (the gate's alpha is below 0.5, so
no decision could change).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import special
from scipy.special import _ufuncs  # binom.ppf / binom.isf's own functions (scipy.stats is not imported)

#: A pair is tested exactly when its smaller group expects fewer events (or non-events) than this at the pair's
#: pooled rate.
EXACT_BELOW_EXPECTED = 50
#: Berger-Boos: the nuisance rate ranges over its 1 - GAMMA confidence interval, and GAMMA is added to the tail.
GAMMA = 1e-6
#: Exact tails are computed only for a p-value below this (alpha is below 0.5: above it no decision can change).
EXACT_WHEN_BELOW = 0.5
#: Points of the nuisance rate along the null's boundary over which the tail is maximised.
_NUISANCE_POINTS = 16
#: The larger group's outcomes are cut where less than this much probability lies beyond, at every nuisance rate
#: (added to the tail, so the test stays valid).
_TRUNCATED = 1e-12


# ----------------------------------------------------------------------------------------------- the rate scales
def adjusted_rate(successes: np.ndarray, trials: np.ndarray) -> np.ndarray:
    """The rate with one success and one failure added (Agresti & Caffo 2000)."""
    return (successes + 1.0) / (trials + 2.0)


def rate_variance(successes: np.ndarray, trials: np.ndarray) -> np.ndarray:
    """Variance of a rate from the adjusted rate, p (1 - p) / n.

    Positive even with 0 or all events (dividing by n + 2 as well would understate it near 1/2); NaN without
    trials.
    """
    adjusted = adjusted_rate(successes, trials)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(trials > 0, adjusted * (1.0 - adjusted) / trials, np.nan)


def log_rate(successes: np.ndarray, trials: np.ndarray) -> np.ndarray:
    """log(successes / trials), with 0.5 added to both where successes is 0; NaN without trials."""
    correction = np.where(successes == 0, 0.5, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(trials > 0, np.log((successes + correction) / (trials + correction)), np.nan)


def log_rate_variance(successes: np.ndarray, trials: np.ndarray) -> np.ndarray:
    """Delta-method variance of a log rate from the adjusted rate, (1 - p) / (p n)."""
    adjusted = adjusted_rate(successes, trials)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(trials > 0, (1.0 - adjusted) / (adjusted * trials), np.nan)


# ----------------------------------------------------------------------------------------------- the exact tail
def needs_exact(x1: float, n1: float, x2: float, n2: float) -> bool:
    """The switch rule: whether a pair (x1 of n1, x2 of n2) is tested exactly (see the module's docstring)."""
    return bool(needs_exact_pairs(np.array([[x1, n1, x2, n2]], dtype=float))[0])


def needs_exact_pairs(counts: np.ndarray) -> np.ndarray:
    """:func:`needs_exact` for every row ``(x1, n1, x2, n2)`` of ``counts`` at once (False where one is not finite).

    Trials are rounded half to even, as Python's ``round``; a family of a triple's groups has thousands of pairs.

    >>> needs_exact_pairs(np.array([[0, 60, 130, 2000], [100, 400, 500, 2000], [np.nan, 1, 2, 3]])).tolist()
    [True, False, False]
    """
    counts = np.asarray(counts, dtype=float).reshape(-1, 4)
    finite = np.isfinite(counts).all(axis=1)
    x1, n1, x2, n2 = np.where(finite[:, None], counts, 0.0).T
    n1, n2 = np.rint(n1), np.rint(n2)
    smaller = np.minimum(n1, n2)
    with np.errstate(divide="ignore", invalid="ignore"):
        pooled = (x1 + x2) / (n1 + n2)
        expected = smaller * np.minimum(pooled, 1.0 - pooled)
    needs: np.ndarray = finite & (smaller > 0) & (expected < EXACT_BELOW_EXPECTED)
    return needs


@functools.lru_cache(maxsize=4096)
def exact_pair_tail(
    x1: float, n1: float, x2: float, n2: float, observed: float, threshold: float, *, log: bool
) -> float:
    """Exact P(T >= observed) for one pair, maximised over the null's boundary (Berger & Boos 1994).

    ``x``/``n``: each group's successes and trials (rounded); ``threshold`` on the statistic's scale (a
    difference of rates, or of log rates); ``log`` for the log scale. The nuisance (the larger group's rate) ranges
    over its 1 - ``GAMMA`` Clopper-Pearson interval and ``GAMMA`` is added; the larger group's outcomes are cut to
    the outcomes that carry all but 1e-12 of the probability at every rate of that interval (1e-12 is added too).
    Kept by its arguments: an audit's test and deciding interval ask for some tails twice.

    >>> bool(exact_pair_tail(0, 60, 130, 2000, 4.0, 0.0, log=False) > 100 * normal_pair_tail(4.0, 0.0, 1.0))
    True
    """
    (_, ns), (xl, nl) = sorted([(round(x1), round(n1)), (round(x2), round(n2))], key=lambda c: c[1])
    _, first, last, large_cumulative = _larger_group(xl, nl)
    valid, small_pmf = _smaller_group(ns, xl, nl, float(threshold), log)
    if not valid.any():
        return 1.0
    beyond = _beyond(ns, nl, first, last, float(threshold), log, observed - 1e-9)
    return min(1.0, tail_from_grid(beyond, small_pmf, large_cumulative[valid]) + GAMMA + _TRUNCATED)


@functools.lru_cache(maxsize=2048)
def _smaller_group(ns: int, xl: int, nl: int, threshold: float, log: bool) -> tuple[np.ndarray, np.ndarray]:
    """Which nuisance points are on the null's boundary, and the smaller group's outcome probabilities there."""
    nuisance, _, _, _ = _larger_group(xl, nl)
    _, small, valid = _boundary(nuisance, threshold, log)
    pmf = _binomial_pmf_all(ns, small)
    for array in (valid, pmf):
        array.setflags(write=False)
    return valid, pmf


@functools.lru_cache(maxsize=1024)
def _larger_group(successes: int, trials: int) -> tuple[np.ndarray, int, int, np.ndarray]:
    """The nuisance rates (its 1 - GAMMA interval), its outcomes' range and their cumulative probabilities.

    The probabilities are given for each rate twice (the null's two orientations when the threshold is not 0).
    """
    low, high = _clopper_pearson(successes, trials)
    nuisance = np.linspace(low, high, _NUISANCE_POINTS)
    # Below ``first`` at the lowest rate, above ``last`` at the highest: at most _TRUNCATED / 2 each (and less at
    # every rate between, the binomial being stochastically increasing in its rate).
    first = int(binomial_ppf(_TRUNCATED / 2, trials, low)) if low > 0 else 0
    last = int(binomial_isf(_TRUNCATED / 2, trials, high)) + 1 if high < 1 else trials
    first, last = max(0, first - 1), min(trials, last)
    cumulative = cumulative_of(binomial_pmf(np.arange(first, last + 1.0), trials, np.concatenate([nuisance] * 2)))
    for array in (nuisance, cumulative):
        array.setflags(write=False)
    return nuisance, first, last, cumulative


def binomial_ppf(q: float, trials: int, rate: float) -> float:
    """``scipy.stats.binom.ppf(q, trials, rate)`` for 0 < q < 1 and 0 <= rate <= 1, without importing scipy.stats.

    The same ufunc scipy.stats calls there (Boost's discrete quantile, rounded up).

    >>> binomial_ppf(0.5, 10, 0.5), binomial_ppf(1e-12, 100, 0.3)
    (5.0, 3.0)
    """
    return float(_ufuncs._binom_ppf(q, trials, rate))


def binomial_isf(q: float, trials: int, rate: float) -> float:
    """``scipy.stats.binom.isf(q, trials, rate)`` for 0 < q < 1 and 0 <= rate <= 1 (as :func:`binomial_ppf`).

    >>> binomial_isf(0.5, 10, 0.5), binomial_isf(1e-12, 100, 0.3)
    (5.0, 64.0)
    """
    return float(_ufuncs._binom_isf(q, trials, rate))


def _clopper_pearson(successes: int, trials: int) -> tuple[float, float]:
    """The 1 - GAMMA Clopper-Pearson interval of a rate."""
    low = special.betaincinv(successes, trials - successes + 1, GAMMA / 2) if successes > 0 else 0.0
    high = special.betaincinv(successes + 1, trials - successes, 1 - GAMMA / 2) if successes < trials else 1.0
    return float(low), float(high)


def binomial_pmf(successes: np.ndarray, trials: int, rates: np.ndarray) -> np.ndarray:
    """Binomial probabilities of ``successes`` (of ``trials``) at each rate: (rates, successes); by log-gamma.

    >>> bool(np.allclose(binomial_pmf(np.arange(4.0), 3, np.array([0.0, 0.5, 1.0])).sum(axis=1), 1.0))
    True
    """
    k = successes[None, :]
    return _pmf(k, trials - k, _log_choose(trials, k), rates)


def _binomial_pmf_all(trials: int, rates: np.ndarray) -> np.ndarray:
    """:func:`binomial_pmf` of every outcome 0..trials.

    The outcomes' log-coefficients are kept per ``trials``: a group's probabilities are asked for at many rates.
    """
    return _pmf(*_log_choose_all(trials), rates)


@functools.lru_cache(maxsize=1024)
def _log_choose_all(trials: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The outcomes k = 0..trials (as a row), trials - k, and log C(trials, k) (read-only)."""
    k = np.arange(trials + 1.0)[None, :]
    rest = trials - k
    log_choose = _log_choose(trials, k)
    for array in (k, rest, log_choose):
        array.setflags(write=False)
    return k, rest, log_choose


def _log_choose(trials: int, k: np.ndarray) -> np.ndarray:
    log_choose: np.ndarray = (
        special.gammaln(trials + 1.0) - special.gammaln(k + 1.0) - special.gammaln(trials - k + 1.0)
    )
    return log_choose


def _pmf(k: np.ndarray, rest: np.ndarray, log_choose: np.ndarray, rates: np.ndarray) -> np.ndarray:
    """The probabilities of the outcomes ``k`` (``rest`` = trials - k) at each rate: (rates, outcomes)."""
    p = rates[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        log_pmf = log_choose + special.xlogy(k, p) + special.xlog1py(rest, -p)  # 0 log 0 = 0 at rates 0, 1
    pmf: np.ndarray = np.exp(log_pmf)
    return pmf


def _boundary(large: np.ndarray, threshold: float, log: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rates (larger group, smaller group) on the null's boundary, |difference| (log: |log ratio|) = threshold.

    Both orientations (the smaller group's rate above, then below); ``valid`` marks the rates within [0, 1] (with
    threshold 0 the second orientation repeats the first and is left out).
    """
    shifted = [large * np.exp(threshold), large * np.exp(-threshold)] if log else [large + threshold, large - threshold]
    small = np.concatenate(shifted)
    valid = (small >= 0.0) & (small <= 1.0)
    if threshold == 0.0:
        valid[large.size :] = False
    both = np.concatenate([large, large])
    return both[valid], small[valid], valid


def _beyond(ns: int, nl: int, first: int, last: int, threshold: float, log: bool, observed: float) -> np.ndarray:
    """Whether the gate's pair statistic (|d| - threshold) / se is at least ``observed`` (> 0), for every outcome.

    Outcomes 0..ns (of ns) by first..last (of nl): |d| - threshold >= 0 and (|d| - threshold)^2 >= observed^2 se^2.
    """
    value_a, variance_a = _scale(ns, log)
    value_b, variance_b = (a[first : last + 1] for a in _scale(nl, log))
    # In place (the grid has thousands of cells and an audit asks for thousands of tails): the same operations as
    # excess = |a - b| - threshold; (excess >= 0) & (excess * excess >= observed * observed * (var_a + var_b)).
    excess = np.subtract.outer(value_a, value_b)
    np.abs(excess, out=excess)
    excess -= threshold
    bound = np.add.outer(variance_a, variance_b)
    bound *= observed * observed
    beyond: np.ndarray = excess >= 0
    np.multiply(excess, excess, out=excess)
    beyond &= excess >= bound
    return beyond


@functools.lru_cache(maxsize=1024)
def _scale(n: int, log: bool) -> tuple[np.ndarray, np.ndarray]:
    """Every outcome's value (rate or log rate) and variance, for 0..n successes of n."""
    successes, trials = np.arange(n + 1.0), np.full(n + 1, float(n))
    value, variance = (log_rate, log_rate_variance) if log else (_rate, rate_variance)
    pair = value(successes, trials), variance(successes, trials)
    for array in pair:
        array.setflags(write=False)
    return pair


def _rate(successes: np.ndarray, trials: np.ndarray) -> np.ndarray:
    rate: np.ndarray = successes / trials
    return rate


def tail_from_grid(beyond: np.ndarray, first: np.ndarray, cumulative: np.ndarray) -> float:
    """max_k sum_ab beyond[a, b] first[k, a] second[k, b]: the largest probability of the outcomes ``beyond``.

    ``first`` (points, rows): the row group's outcome probabilities at each nuisance point; ``cumulative``
    (points, columns + 1): the column group's probability of fewer than 0, 1, ... columns. Each row's outcomes
    beyond form a few runs of columns (two tails, typically): the probability is summed run by run, so the cost is
    (runs x points), not (cells x points).
    """
    height, width = beyond.shape
    padded = np.zeros((height, width + 2), dtype=bool)  # a column of False either side: every run starts and ends
    padded[:, 1:-1] = beyond
    edges = np.flatnonzero(padded[:, 1:] != padded[:, :-1])  # row-major: each run's start, then its end
    if edges.size == 0:
        return 0.0
    where_rows, where_columns = np.divmod(edges, width + 1)
    rows, starts, ends = where_rows[::2], where_columns[::2], where_columns[1::2]
    mass = cumulative[:, ends] - cumulative[:, starts]  # (points, runs)
    per_point = np.einsum("kr,kr->k", first[:, rows], mass)
    return float(min(1.0, max(0.0, per_point.max())))


def cumulative_of(pmf: np.ndarray) -> np.ndarray:
    """The probability of fewer than 0, 1, ..., n + 1 successes from the probabilities of 0..n: (points, n + 2)."""
    cumulative = np.zeros((pmf.shape[0], pmf.shape[1] + 1))
    np.cumsum(pmf, axis=1, out=cumulative[:, 1:])
    return cumulative


def normal_pair_tail(observed: float, threshold: float, se: np.ndarray | float) -> np.ndarray:
    """The normal P(T >= observed) of pairs at the null's boundary: both signs of the difference."""
    # special.ndtr(-x) is what norm.sf computes, without its per-call argument checks
    far = special.ndtr(-(observed + 2.0 * threshold / np.asarray(se, dtype=float)))
    return np.asarray(special.ndtr(-observed) + far)


# ----------------------------------------------------------------------------------------------- Fisher's exact test
def fisher_exact_p(table: np.ndarray) -> float:
    """Two-sided p-value of Fisher's exact test of a 2 x 2 table of counts, without importing scipy.stats.

    ``scipy.stats.fisher_exact(table).pvalue``, step by step as scipy computes it (the hypergeometric
    probabilities from the same functions, the same tolerance for ties with the observed table's probability), so
    the same value to the last bit. A table scipy would refuse (not 2 x 2, a negative count) is handed to scipy.

    >>> fisher_exact_p(np.array([[8, 2], [1, 5]])) < 0.05
    True
    """
    c = np.asarray(table, dtype=np.int64)
    if c.shape != (2, 2) or (c < 0).any():
        from scipy.stats import fisher_exact  # its error, as before

        return float(fisher_exact(c).pvalue)
    if 0 in c.sum(axis=0) or 0 in c.sum(axis=1):
        return 1.0
    good, draws = c[0, 0] + c[0, 1], c[0, 0] + c[1, 0]
    total = good + c[1, 0] + c[1, 1]
    law = _Hypergeometric(int(total), int(good), int(draws))
    mode = int((draws + 1) * (good + 1) / (total + 2))
    observed, at_mode = law.pmf(int(c[0, 0])), law.pmf(mode)
    gamma = 1 + 1e-14  # probabilities within this factor of the observed one count as "as extreme"
    if np.abs(observed - at_mode) / np.maximum(observed, at_mode) <= 1e-14:
        return 1.0
    if c[0, 0] < mode:
        p = law.cdf(int(c[0, 0]))
        if law.pmf(int(draws)) > observed * gamma:
            return float(p)
        other = _step_search(lambda x: -law.pmf(x), -observed * gamma, mode, int(draws))
        p = p + law.sf(other)
    else:
        p = law.sf(int(c[0, 0]) - 1)
        if law.pmf(0) > observed * gamma:
            return float(p)
        other = _step_search(law.pmf, observed * gamma, 0, mode)
        p = p + law.cdf(other)
    return float(min(p, 1.0))


@dataclass(frozen=True)
class _Hypergeometric:
    """The hypergeometric law of the good items among ``draws`` of ``total`` items (``good`` of them good).

    As ``scipy.stats.hypergeom(total, good, draws)`` computes it: the same (Boost) functions, 0 and 1 outside the
    support.
    """

    total: int
    good: int
    draws: int

    @property
    def support(self) -> tuple[int, int]:
        return max(self.draws - (self.total - self.good), 0), min(self.good, self.draws)

    def pmf(self, k: int) -> np.float64:
        low, high = self.support
        if not low <= k <= high:
            return np.float64(0.0)
        return np.float64(np.clip(_ufuncs._hypergeom_pmf(k, self.good, self.draws, self.total), 0, 1))

    def cdf(self, k: int) -> np.float64:
        low, high = self.support
        if k >= high or k < low:
            return np.float64(1.0 if k >= high else 0.0)
        return np.float64(np.clip(_ufuncs._hypergeom_cdf(k, self.good, self.draws, self.total), 0, 1))

    def sf(self, k: int) -> np.float64:
        low, high = self.support
        if k >= high or k < low:
            return np.float64(0.0 if k >= high else 1.0)
        return np.float64(np.clip(_ufuncs._hypergeom_sf(k, self.good, self.draws, self.total), 0, 1))


def _step_search(f: Callable[[int], np.float64], level: float, low: int, high: int) -> int:
    """The i in [low, high] with f(i) <= level < f(i + 1), for f ascending there (scipy's binary search)."""
    while low < high:
        middle = low + (high - low) // 2
        value = f(middle)
        if value < level:
            low = middle + 1
        elif value > level:
            high = middle - 1
        else:
            return middle
    return low if f(low) <= level else low - 1
