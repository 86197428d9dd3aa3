"""Interval estimates and tests: Wilson, Newcombe, Katz, Hanley-McNeil, two-proportion tests, BH.

All functions are vectorised over numpy arrays and return NaN where a quantity is undefined.
"""

from __future__ import annotations

import numpy as np
from scipy import stats as _scipy_stats


def z_value(confidence_level: float) -> float:
    """The two-sided normal quantile for a confidence level.

    >>> round(z_value(0.95), 4)
    1.96
    """
    return float(_scipy_stats.norm.ppf(0.5 + confidence_level / 2.0))


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
    """Katz log interval for the ratio (x1/n1) / (x2/n2); NaN when either count of successes is 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        defined = (x1 > 0) & (x2 > 0) & (n1 > 0) & (n2 > 0)
        log_ratio = np.log((x1 / n1) / (x2 / n2))
        se = np.sqrt(1.0 / x1 - 1.0 / n1 + 1.0 / x2 - 1.0 / n2)
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
    out = np.where(defined, 2.0 * _scipy_stats.norm.sf(np.abs(z)), np.nan)
    for i in np.flatnonzero(defined & (smallest_expected < 5.0)):
        table = np.rint([[x1[i], n1[i] - x1[i]], [x2[i], n2[i] - x2[i]]]).astype(int)
        out[i] = _scipy_stats.fisher_exact(table).pvalue
    return out


def hanley_mcneil_se(auc: np.ndarray, n_pos: np.ndarray, n_neg: np.ndarray) -> np.ndarray:
    """Hanley & McNeil (1982) standard error of an AUC."""
    with np.errstate(divide="ignore", invalid="ignore"):
        q1 = auc / (2.0 - auc)
        q2 = 2.0 * auc**2 / (1.0 + auc)
        variance = (auc * (1 - auc) + (n_pos - 1) * (q1 - auc**2) + (n_neg - 1) * (q2 - auc**2)) / (n_pos * n_neg)
        return np.sqrt(np.clip(variance, 0.0, None))


def benjamini_hochberg(p_values: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values; NaN entries stay NaN and do not count as tests.

    >>> benjamini_hochberg(np.array([0.01, np.nan, 0.04, 0.03])).round(3).tolist()
    [0.03, nan, 0.04, 0.04]
    """
    p_values = np.asarray(p_values, dtype=float)
    adjusted = np.full(p_values.shape, np.nan)
    defined = np.isfinite(p_values)
    if defined.any():
        adjusted[defined] = _scipy_stats.false_discovery_control(p_values[defined], method="bh")
    return adjusted


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
    ordered = np.sort(replicates.reshape(replicates.shape[0], -1), axis=0)
    defined = np.isfinite(ordered).sum(axis=0)
    tail = (1.0 - confidence_level) / 2.0
    columns = np.arange(ordered.shape[1])

    def at(quantile: float) -> np.ndarray:
        position = quantile * np.maximum(defined - 1, 0)
        below = np.floor(position).astype(np.int64)
        above = np.minimum(below + 1, np.maximum(defined - 1, 0))
        fraction = position - below
        value = ordered[below, columns] * (1.0 - fraction) + ordered[above, columns] * fraction
        return np.where(defined > 0, value, np.nan).reshape(shape)

    low, high = at(tail), at(1.0 - tail)
    if estimate is not None:
        estimate = np.asarray(estimate, dtype=float)
        defined = np.isfinite(estimate) & np.isfinite(low)
        low = np.where(defined, np.fmin(low, estimate), low)
        high = np.where(defined, np.fmax(high, estimate), high)
    return low, high
