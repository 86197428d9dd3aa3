"""Interval estimates and tests.

Wilson, Newcombe, Katz, Hanley-McNeil, two-proportion tests, BH, Holm, and simultaneous max-t intervals for the
range of a metric across groups (``PairFamily``).

All functions are vectorised over numpy arrays and return NaN where a quantity is undefined.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special

from fairgate.engine.exact import EXACT_WHEN_BELOW, exact_pair_tail, fisher_exact_p, needs_exact_pairs, normal_pair_tail
from fairgate.engine.pairs import pair_differences, pair_indices, pair_se, range_ends, studentizable
from fairgate.engine.studentized_range import studentized_range_root, studentized_range_sfs, tukey_kramer


@functools.lru_cache(maxsize=256)
def z_value(confidence_level: float) -> float:
    """The two-sided normal quantile for a confidence level.

    >>> round(z_value(0.95), 4)
    1.96
    """
    return float(special.ndtri(0.5 + confidence_level / 2.0))  # norm.ppf's own function


def wilson_interval(successes: np.ndarray, trials: np.ndarray, z: float) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for successes / trials; NaN where trials is 0.

    >>> low, high = wilson_interval(np.array([5.0]), np.array([10.0]), 1.959964)
    >>> round(float(low[0]), 4), round(float(high[0]), 4)
    (0.2366, 0.7634)
    """
    successes = np.asarray(successes, dtype=float)
    trials = np.asarray(trials, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = successes / trials
        denominator = 1.0 + z**2 / trials
        centre = (p + z**2 / (2.0 * trials)) / denominator
        half = z * np.sqrt(p * (1.0 - p) / trials + z**2 / (4.0 * trials**2)) / denominator
    defined = trials > 0
    return np.where(defined, np.clip(centre - half, 0.0, 1.0), np.nan), np.where(
        defined, np.clip(centre + half, 0.0, 1.0), np.nan
    )


def newcombe_interval(
    x1: np.ndarray, n1: np.ndarray, x2: np.ndarray, n2: np.ndarray, z: float
) -> tuple[np.ndarray, np.ndarray]:
    """Newcombe's hybrid score interval (method 10) for p1 - p2 of independent proportions."""
    with np.errstate(divide="ignore", invalid="ignore"):
        p1, p2 = x1 / n1, x2 / n2
    l1, u1 = wilson_interval(x1, n1, z)
    l2, u2 = wilson_interval(x2, n2, z)
    d = p1 - p2
    low = d - np.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    high = d + np.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return low, high


def katz_ratio_interval(
    x1: np.ndarray, n1: np.ndarray, x2: np.ndarray, n2: np.ndarray, z: float
) -> tuple[np.ndarray, np.ndarray]:
    """Katz log interval for the ratio (x1/n1) / (x2/n2); NaN only when a denominator is 0.

    Where a count of successes is 0, 0.5 is added to both counts and both denominators of that comparison
    (the usual continuity correction), so a zero gives an interval (its lower or upper end at 0 or far out).

    >>> low, high = katz_ratio_interval(np.array([0.0]), np.array([50.0]), np.array([10.0]), np.array([50.0]), 1.96)
    >>> round(float(low[0]), 4), round(float(high[0]), 4)
    (0.0029, 0.7911)
    """
    x1, n1, x2, n2 = (np.asarray(a, dtype=float) for a in (x1, n1, x2, n2))
    correction = np.where((x1 == 0) | (x2 == 0), 0.5, 0.0)
    x1, x2, n1, n2 = x1 + correction, x2 + correction, n1 + correction, n2 + correction
    with np.errstate(divide="ignore", invalid="ignore"):
        defined = (x1 > 0) & (x2 > 0) & (n1 > correction) & (n2 > correction)
        log_ratio = np.log((x1 / n1) / (x2 / n2))
        se = np.sqrt(np.clip(1.0 / x1 - 1.0 / n1 + 1.0 / x2 - 1.0 / n2, 0.0, None))
        return (
            np.where(defined, np.exp(log_ratio - z * se), np.nan),
            np.where(defined, np.exp(log_ratio + z * se), np.nan),
        )


def two_proportion_p_value(x1: np.ndarray, n1: np.ndarray, x2: np.ndarray, n2: np.ndarray) -> np.ndarray:
    """Two-sided p-value for p1 = p2: Fisher's exact test when an expected cell is under 5, else the pooled z-test.

    Weighted (non-integer) counts are rounded for Fisher's test.

    >>> two_proportion_p_value(np.array([30.0]), np.array([100.0]), np.array([50.0]), np.array([100.0])).round(4)
    array([0.0039])
    """
    x1, n1, x2, n2 = (np.atleast_1d(np.asarray(a, dtype=float)) for a in (x1, n1, x2, n2))
    defined = (n1 > 0) & (n2 > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        pooled = (x1 + x2) / (n1 + n2)
        se = np.sqrt(pooled * (1.0 - pooled) * (1.0 / n1 + 1.0 / n2))
        z = np.where(se > 0, (x1 / n1 - x2 / n2) / se, 0.0)
        smallest_expected = np.minimum(np.minimum(n1, n2) * pooled, np.minimum(n1, n2) * (1.0 - pooled))
    out = np.where(defined, 2.0 * special.ndtr(-np.abs(z)), np.nan)  # norm.sf(|z|), as scipy computes it
    for i in np.flatnonzero(defined & (smallest_expected < 5.0)):
        out[i] = fisher_exact_p(np.rint([[x1[i], n1[i] - x1[i]], [x2[i], n2[i] - x2[i]]]).astype(int))
    return out


def hanley_mcneil_se(auc: np.ndarray, n_pos: np.ndarray, n_neg: np.ndarray) -> np.ndarray:
    """Hanley & McNeil (1982) standard error of an AUC."""
    with np.errstate(divide="ignore", invalid="ignore"):
        q1 = auc / (2.0 - auc)
        q2 = 2.0 * auc**2 / (1.0 + auc)
        variance = (auc * (1 - auc) + (n_pos - 1) * (q1 - auc**2) + (n_neg - 1) * (q2 - auc**2)) / (n_pos * n_neg)
        se: np.ndarray = np.sqrt(np.clip(variance, 0.0, None))
        return se


def benjamini_hochberg(p_values: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values; NaN entries stay NaN and do not count as tests.

    >>> benjamini_hochberg(np.array([0.01, np.nan, 0.04, 0.03])).round(3).tolist()
    [0.03, nan, 0.04, 0.04]
    """
    p_values = np.asarray(p_values, dtype=float)
    adjusted = np.full(p_values.shape, np.nan)
    defined = np.isfinite(p_values)
    if defined.any():
        adjusted[defined] = _step_up_bh(p_values[defined])
    return adjusted


def _step_up_bh(p_values: np.ndarray) -> np.ndarray:
    """``scipy.stats.false_discovery_control(p, method="bh")`` for one 1-D array, with the same values.

    Step by step as scipy computes it, without its per-call input handling, which cost more than the step-up
    itself: an audit adjusts one family per metric and slicing (114 on the 1M-row bench).
    """
    if p_values.size == 0 or p_values.min() < 0.0 or p_values.max() > 1.0:  # scipy's error
        from scipy.stats import false_discovery_control

        return np.asarray(false_discovery_control(p_values, method="bh"), dtype=float)
    if p_values.size == 1:  # scipy returns a single p-value as it is
        return np.array(p_values, dtype=float)
    m = p_values.size
    order = np.argsort(p_values, kind="stable")
    ordered = p_values[order] * (m / np.arange(1, m + 1, dtype=float))
    np.minimum.accumulate(ordered[::-1], out=ordered[::-1])
    adjusted = np.empty_like(ordered)
    adjusted[order] = ordered
    return np.asarray(np.clip(adjusted, 0.0, 1.0))


def replicate_se(replicates: np.ndarray) -> np.ndarray:
    """Standard deviation per column over the defined (finite) bootstrap replicates; NaN with fewer than two."""
    defined = np.isfinite(replicates)
    count = defined.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(defined, replicates, 0.0).sum(axis=0) / count
        squares = np.where(defined, (replicates - mean) ** 2, 0.0).sum(axis=0)
        se: np.ndarray = np.where(count > 1, np.sqrt(squares / (count - 1)), np.nan)
    return se


def finite_or_none(value: object) -> float | None:
    """A number for the document: None where it is undefined (NaN or infinite)."""
    number = float(value)  # type: ignore[arg-type]
    return number if np.isfinite(number) else None


def finite_list(values: np.ndarray) -> list[float | None]:
    """A vector for the document, undefined entries as None."""
    return [finite_or_none(v) for v in values]


def percentile_interval(
    replicates: np.ndarray, confidence_level: float, estimate: np.ndarray | float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap interval over the first axis, ignoring undefined (NaN) replicates.

    With ``estimate``, the interval is extended to contain it: statistics such as ECE or a max - min gap
    are biased upward under resampling, so their bootstrap distribution can sit wholly above the estimate.

    Vectorised: NaNs sort last, so each column's quantiles are read at positions within its defined count
    (linear interpolation, as ``numpy.quantile``'s default).

    >>> reps = np.array([[1.0, np.nan], [2.0, 5.0], [3.0, np.nan], [4.0, np.nan], [5.0, np.nan]])
    >>> low, high = percentile_interval(reps, 0.5)
    >>> low.tolist(), high.tolist()
    ([2.0, 5.0], [4.0, 5.0])
    """
    replicates = np.asarray(replicates, dtype=float)
    shape = replicates.shape[1:]
    if replicates.shape[0] == 0:
        return np.full(shape, np.nan), np.full(shape, np.nan)
    ordered = np.array(replicates.reshape(replicates.shape[0], -1).T, order="C")  # each column a contiguous row
    ordered.sort(axis=1)
    defined = np.isfinite(ordered).sum(axis=1)
    last = np.maximum(defined - 1, 0)
    tail = (1.0 - confidence_level) / 2.0
    columns = np.arange(ordered.shape[0])

    def at(quantile: float) -> np.ndarray:
        position = quantile * last
        below = np.floor(position).astype(np.int64)
        above = np.minimum(below + 1, last)
        fraction = position - below
        value = ordered[columns, below] * (1.0 - fraction) + ordered[columns, above] * fraction
        return np.where(defined > 0, value, np.nan).reshape(shape)

    low, high = at(tail), at(1.0 - tail)
    if estimate is not None:
        estimate = np.asarray(estimate, dtype=float)
        defined_both = np.isfinite(estimate) & np.isfinite(low)
        low = np.where(defined_both, np.fmin(low, estimate), low)
        high = np.where(defined_both, np.fmax(high, estimate), high)
    return low, high


def percentile_intervals(
    replicates: Sequence[np.ndarray], confidence_level: float, estimates: Sequence[np.ndarray]
) -> list[tuple[np.ndarray, np.ndarray]]:
    """:func:`percentile_interval` of several replicate arrays with the same first axis, in one call.

    Each column's interval reads only that column, so the values are those of one call per array; one sort and
    one set of interpolations instead of one per array.
    """
    if not replicates:
        return []
    count = replicates[0].shape[0]
    flat = [np.asarray(r, dtype=float).reshape(count, math.prod(r.shape[1:])) for r in replicates]
    low, high = percentile_interval(
        np.concatenate(flat, axis=1),
        confidence_level,
        np.concatenate(
            [
                np.broadcast_to(np.asarray(e, dtype=float), r.shape[1:]).reshape(-1)
                for r, e in zip(replicates, estimates, strict=True)
            ]
        ),
    )
    ends = np.cumsum([0, *(f.shape[1] for f in flat)])
    return [
        (low[a:b].reshape(r.shape[1:]), high[a:b].reshape(r.shape[1:]))
        for r, a, b in zip(replicates, ends[:-1], ends[1:], strict=True)
    ]


def holm(p_values: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values (family-wise error); NaN entries stay NaN and do not count as tests.

    >>> holm(np.array([0.01, np.nan, 0.04, 0.03])).round(3).tolist()
    [0.03, nan, 0.06, 0.06]
    """
    p_values = np.asarray(p_values, dtype=float)
    adjusted = np.full(p_values.shape, np.nan)
    order, _, stepped = _holm_steps(p_values)
    adjusted[order] = np.minimum(stepped, 1.0)
    return adjusted


def _holm_steps(p_values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Holm's step-down over the defined p-values, shared by :func:`holm` and :func:`holm_multipliers`.

    Returns their indices in ascending order, each step's number of tests left, and the running maximum of
    (tests left) x p: the unclipped adjusted p-values.
    """
    defined = np.flatnonzero(np.isfinite(p_values))
    order = defined[np.argsort(p_values[defined], kind="stable")]
    steps = (order.size - np.arange(order.size)).astype(float)
    return order, steps, np.maximum.accumulate(steps * p_values[order])


def holm_multipliers(p_values: np.ndarray) -> np.ndarray:
    """Per test, the factor m_i with Holm-adjusted p = min(1, m_i p_i): it rejects at ``alpha`` iff p_i <= alpha / m_i.

    So each test's deciding level is alpha / m_i (m_i is at least the number of tests left at its step, more when an
    earlier step's product was larger); NaN entries stay NaN.

    >>> holm_multipliers(np.array([0.01, np.nan, 0.04, 0.03])).round(3).tolist()
    [3.0, nan, 1.5, 2.0]
    """
    p_values = np.asarray(p_values, dtype=float)
    out = np.full(p_values.shape, np.nan)
    order, steps, stepped = _holm_steps(p_values)
    with np.errstate(divide="ignore", invalid="ignore"):
        out[order] = np.where(p_values[order] > 0, stepped / p_values[order], steps)
    return out


#: Replicates x pairs above which the max-t critical value comes from the studentized range instead of the
#: bootstrap (keeps slicings with dozens of groups fast; the studentized range is conservative there).
PAIR_BUDGET = 120_000


def pair_bootstrap_fits(group_counts: Sequence[int], n_replicates: int) -> bool:
    """Whether a pairwise family's max-t critical value comes from its bootstrap replicates (:func:`pair_family`).

    ``group_counts``: each component's number of groups. At least 20 replicates, and at most
    :data:`PAIR_BUDGET` replicates x pairs.
    """
    n_pairs = sum(k * (k - 1) // 2 for k in group_counts)
    return n_replicates >= 20 and n_pairs * n_replicates <= PAIR_BUDGET


@dataclass(frozen=True)
class PairFamily:
    """Simultaneous inference on the range (max - min) of one or more group metrics over the same groups.

    ``gap`` holds |d_ij| for every pair of groups (i < j) of every component metric and ``se`` its standard
    error; ``null`` the sorted max-t statistics max_ij |d*_ij - d_ij| / se_ij of the bootstrap replicates
    (None when the bootstrap was too large or absent: the studentized range is used instead);
    ``sizes`` the number of groups of each component (for the studentized-range bound). For rates, ``counts``
    (pairs, 4) holds each pair's successes and trials (x1, n1, x2, n2; NaN for a pair that is not of rates) and
    ``log`` whether the pair is on the log scale (a ratio): pairs with few expected events get exact tails
    (``fairgate.engine.exact``). ``df``: the standard errors come from a bootstrap over that few independent units
    plus one (clusters of lists, say), so their own noise counts: the normal-theory tails and critical values are
    read at the Student-t equivalent of each t (None: normal).
    """

    gap: np.ndarray
    se: np.ndarray
    null: np.ndarray | None
    sizes: tuple[int, ...]
    counts: np.ndarray | None = None
    log: np.ndarray | None = None
    df: float | None = None  # degrees of freedom of the standard errors (a cluster bootstrap's units - 1)

    def critical(self, level: float) -> float:
        """The max-t critical value c with P(max_ij |t_ij| <= c) ~ level, never below the one-pair normal one."""
        floor = self._on_t_scale(z_value(level))
        if self.null is not None and self.null.size >= 20:
            # ``null`` is sorted: numpy's default (linear) quantile, read off directly.
            position = level * (self.null.size - 1)
            below = int(position)
            above = min(below + 1, self.null.size - 1)
            quantile = self.null[below] + (position - below) * (self.null[above] - self.null[below])
            return max(floor, float(quantile))
        return max(floor, self._on_t_scale(self._studentized_range_critical(level)))

    def _on_t_scale(self, z: float) -> float:
        """The Student-t (``df``) quantile with the normal tail of ``z``: z itself without ``df``."""
        if self.df is None:
            return z
        return float(-special.stdtrit(self.df, special.ndtr(-z)))  # t.isf(norm.sf(z), df), as scipy computes it

    def _on_normal_scale(self, t: float) -> float:
        """The normal quantile with the Student-t (``df``) tail of ``t``: t itself without ``df``."""
        if self.df is None:
            return t
        return float(-special.ndtri(special.stdtr(self.df, -t)))  # norm.isf(t.sf(t, df)), as scipy computes it

    def _studentized_range_critical(self, level: float) -> float:
        # Tukey-Kramer (conservative for unequal variances, Hayter 1984), Bonferroni over the components.
        tail = (1.0 - level) / len(self.sizes)
        return max(tukey_kramer(1.0 - tail, g) for g in self.sizes)

    def bounds(self, critical: float) -> tuple[float, float]:
        """The folded interval of the range: [max(0, max(|d| - c se)), max(|d| + c se)]."""
        low, high = range_ends(self.gap, self.se, critical)
        return max(0.0, float(low)), float(high)

    def member_bounds(self, critical: float, members: Sequence[int]) -> tuple[float, float]:
        """The folded interval of the range over some components only (indices into ``sizes``).

        The critical value is still the whole family's: one family over two models' components (paired
        replicates) bounds both models' ranges at once, jointly at its level (``fairgate.mitigation.change_family``).
        """
        ends = np.cumsum([0, *(g * (g - 1) // 2 for g in self.sizes)])
        index = np.concatenate([np.arange(ends[m], ends[m + 1]) for m in members])
        low, high = range_ends(self.gap[index], self.se[index], critical)
        return max(0.0, float(low)), float(high)

    def p_beyond(self, threshold: float) -> float:
        """One-sided p-value of "the range exceeds ``threshold``" (the lower bound at level 1 - p is the threshold).

        The larger of the bootstrap max-t tail and the studentized-range tail (valid beyond the bootstrap's
        resolution of 1 / replicates, which a Holm correction over many results needs). Where a pair of rates
        has few trials, also the sum over pairs of each pair's tail, exact for those pairs
        (``fairgate.engine.exact``): the normal tail is too small there in the far tail Holm reads.
        """
        t, p = self._normal_p_beyond(threshold)
        return p if t <= 0 or p >= EXACT_WHEN_BELOW else min(1.0, max(p, self.exact_tail(t, threshold)))

    def _normal_p_beyond(self, threshold: float) -> tuple[float, float]:
        """The largest pair statistic t and :meth:`p_beyond` without the exact tails (1 when t <= 0)."""
        t = float(np.max((self.gap - threshold) / self.se))
        if t <= 0:
            return t, 1.0
        z = self._on_normal_scale(t)
        bound = studentized_range_sfs(z * np.sqrt(2.0), self.sizes)
        boot = self._bootstrap_tail(t)
        return t, min(1.0, max(bound, boot, 2.0 * float(special.ndtr(-z))))  # the normal sf, as norm.sf computes it

    def _p_beyond_exceeds(self, threshold: float, p: float) -> bool:
        """Whether :meth:`p_beyond` (``threshold``) > ``p``, for 0 < p < 1, with less work.

        The exact tails only add to the p-value: they are summed only as far as the answer needs.
        """
        t, normal = self._normal_p_beyond(threshold)
        if t <= 0 or normal >= EXACT_WHEN_BELOW or normal > p:
            return normal > p  # the exact tails, if any, cannot lower it
        stop = p if normal <= p else 1.0  # (a NaN: every tail summed, as p_beyond does)
        return min(1.0, max(normal, self.exact_tail(t, threshold, stop_above=stop))) > p

    def _bootstrap_tail(self, t: float) -> float:
        """The bootstrap max-t tail at t: the Monte Carlo p-value (k + 1) / (B + 1) of k replicates of B at or beyond.

        Not k / B: read at Holm's alpha / m near 1 / B (a few results judged on 200 replicates), one replicate
        beyond would reject although the tail is only known to be about 2 / B (the ranking audit's null false-fail
        rate was 5.0% [3.5, 7.0] at 3,000 rows, every such fail at p = 1 / 200). With no replicate beyond (k = 0)
        the bootstrap has reached its resolution and says 0: the studentized-range and normal tails decide.
        """
        if self.null is None or self.null.size < 20:
            return 0.0
        beyond = int(self.null.size - np.searchsorted(self.null, t, side="left"))
        return 0.0 if beyond == 0 else (beyond + 1) / (self.null.size + 1)

    def exact_tail(self, t: float, threshold: float, stop_above: float = 1.0) -> float:
        """Union bound of P(max_ij T_ij >= t): exact tails for pairs of rates with few trials, normal for the rest.

        0 when no pair needs an exact tail (the studentized range is then the family's tail). ``stop_above``: the
        sum so far as soon as it exceeds this (the pairs' tails only add to it).
        """
        if self.counts is None or self.log is None:
            return 0.0
        small = self._exact_pairs
        if not small:
            return 0.0
        large = ~np.isin(np.arange(self.gap.size), sorted(small))
        total = float(normal_pair_tail(t, threshold, self.se[large]).sum())
        for i in sorted(small):
            if total >= 1.0:
                return 1.0
            if total > stop_above:
                return total
            x1, n1, x2, n2 = (float(c) for c in self.counts[i])
            total += exact_pair_tail(x1, n1, x2, n2, t, threshold, log=bool(self.log[i]))
        return min(1.0, total)

    @functools.cached_property
    def _exact_pairs(self) -> frozenset[int]:
        """The pairs of rates with few trials that :meth:`exact_tail` tests exactly.

        Found once per family: the gate asks for the tail of one family several times.
        """
        if self.counts is None:
            return frozenset()
        return frozenset(np.flatnonzero(needs_exact_pairs(self.counts)).tolist())

    def beyond_bound(self, p: float) -> float:
        """The largest threshold whose :meth:`p_beyond` is at most ``p``: the lower bound the gate's test inverts.

        That is the range's one-sided lower bound at level 1 - p (at least 0, the range's floor).

        Each of the test's three tails is inverted on its own (the p-value is their maximum): the normal one in
        closed form, the bootstrap one from the sorted max-t statistics, the studentized-range one by root finding.

        >>> family = PairFamily(np.array([0.3]), np.array([0.05]), None, (2,))
        >>> bound = family.beyond_bound(0.01)
        >>> round(bound, 4), round(family.p_beyond(bound - 1e-9), 4)
        (0.1712, 0.01)
        """
        if not 0.0 < p < 1.0:
            return 0.0 if p <= 0.0 else float(np.max(self.gap))
        t = float(-special.ndtri(p / 2.0))  # the normal isf, as norm.isf computes it
        if self.null is not None and self.null.size >= 20:
            # replicates allowed at or beyond t: k with (k + 1) / (B + 1) <= p (or none; _bootstrap_tail)
            allowed = max(0, int(np.floor(p * (self.null.size + 1) - 1.0 + 1e-9)))
            if allowed < self.null.size:
                t = max(t, float(np.nextafter(self.null[self.null.size - allowed - 1], np.inf)))
        t = max(t, studentized_range_root(tuple(int(g) for g in self.sizes), p))
        return max(0.0, float(np.max(self.gap - t * self.se)))

    def exact_beyond_bound(self, bound: float, p: float, threshold: float, fails: bool) -> float:
        """:meth:`beyond_bound`'s ``bound``, on the side of ``threshold`` the exact small-count tails decided.

        The exact tails of :meth:`p_beyond` only ever raise the p-value. A failing result's bound already lies
        beyond its threshold (the exact tails allowed the failure, so the normal ones do too): it is kept, the
        normal-tail bound. A result that does not fail but whose normal bound lies beyond the threshold has its
        bound found again within the threshold by a short bisection (to 1/16 of the threshold), so "a result
        fails exactly when this bound lies beyond its threshold" holds.
        """
        if self.counts is None or bound <= 0.0:
            return bound
        if fails:
            return max(bound, float(np.nextafter(threshold, np.inf)))
        if bound <= threshold:
            return bound
        low, high = 0.0, threshold  # p_beyond(low) <= p < p_beyond(high): the test did not reject at the threshold
        for _ in range(4):
            middle = 0.5 * (low + high)
            low, high = (low, middle) if self._p_beyond_exceeds(middle, p) else (middle, high)
        return low

    def detectable(self, threshold: float, level: float, power: float = 0.8) -> float:
        """The smallest range that any pair of groups would show with ``power`` at one-sided ``level``.

        That is threshold + (c + z_power) * the largest pair standard error.
        """
        return threshold + (self.critical(level) + float(special.ndtri(power))) * float(np.max(self.se))


@dataclass(frozen=True)
class Component:
    """One metric's values over the groups of a family.

    ``value`` (G,), bootstrap ``replicates`` (B, G), and where an analytic variance exists (rates),
    ``variance`` (G,) and its value in each replicate (B, G).
    """

    value: np.ndarray
    replicates: np.ndarray
    variance: np.ndarray | None = None
    replicate_variance: np.ndarray | None = None
    counts: tuple[np.ndarray, np.ndarray] | None = None  # a rate's successes and trials: exact tails when few
    log: bool = False  # the values are log rates (a ratio's family)


def pair_family(components: list[Component], *, bootstrap: bool = True, df: float | None = None) -> PairFamily | None:
    """The simultaneous pairwise family of one or more components over the same groups.

    With analytic variances the max-t statistic is studentised in every replicate by that replicate's own
    standard errors (bootstrap-t: it carries the noise of estimating the SE, which a fixed SE misses); without,
    pair SEs are the bootstrap standard deviations (of each group's, summed, when the family is too large for
    the pairwise bootstrap). ``bootstrap=False`` takes the critical value from the studentized range
    (cheaper; conservative). ``df``: the standard errors' degrees of freedom (``PairFamily.df``). Returns None when
    some pair has no positive, finite standard error.
    """
    n_replicates = components[0].replicates.shape[0] if components else 0
    use_bootstrap = bootstrap and pair_bootstrap_fits([c.value.size for c in components], n_replicates)
    gaps, ses, nulls, counts, logs = [], [], [], [], []
    for c in components:
        first, second = pair_indices(c.value.size)
        d = pair_differences(c.value)
        rep_d = c.replicates[:, first] - c.replicates[:, second] if use_bootstrap else None
        if c.variance is not None:
            se = pair_se(c.variance)
        elif rep_d is not None:
            se = np.sqrt(nan_variance(rep_d))
        else:
            se = pair_se(nan_variance(c.replicates))
        if not studentizable(d, se):
            return None
        gaps.append(np.abs(d))
        ses.append(se)
        x, n = c.counts if c.counts is not None else (np.full(c.value.size, np.nan),) * 2
        counts.append(np.column_stack([x[first], n[first], x[second], n[second]]))
        logs.append(np.full(d.size, c.log))
        if rep_d is not None:
            # Squared standardised deviations (no square root per replicate and pair); undefined ones count -1.
            variance = se**2
            if c.replicate_variance is not None:
                variance = c.replicate_variance[:, first] + c.replicate_variance[:, second]
            rep_d -= d
            np.square(rep_d, out=rep_d)
            with np.errstate(divide="ignore", invalid="ignore"):
                rep_d /= variance
            nulls.append(np.nan_to_num(rep_d, nan=-1.0, posinf=-1.0).max(axis=1))
    null = None
    if use_bootstrap:
        worst = np.max(nulls, axis=0)
        null = np.sqrt(np.sort(worst[worst >= 0]))
    sizes = tuple(c.value.size for c in components)
    return PairFamily(
        np.concatenate(gaps), np.concatenate(ses), null, sizes, np.concatenate(counts), np.concatenate(logs), df
    )


def nan_variance(replicates: np.ndarray) -> np.ndarray:
    """Sample variance per column over the defined (finite) replicates; NaN with fewer than two.

    Every replicate defined in a contiguous array (the usual case): the same sums without masking them, in the
    same order (a masked copy of a contiguous array keeps its layout, and so the order numpy sums it in).
    """
    defined = np.isfinite(replicates)
    count = defined.sum(axis=0)
    contiguous = replicates.flags.c_contiguous or replicates.flags.f_contiguous
    if replicates.ndim == 2 and replicates.dtype == np.float64 and contiguous and defined.all():
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = replicates.sum(axis=0) / count
            deviation = replicates - mean
            np.square(deviation, out=deviation)
            return np.where(count > 1, deviation.sum(axis=0) / (count - 1), np.nan)
    filled = np.where(defined, replicates, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = filled.sum(axis=0) / count
        squares = np.where(defined, (replicates - mean) ** 2, 0.0).sum(axis=0)
        return np.where(count > 1, squares / (count - 1), np.nan)
