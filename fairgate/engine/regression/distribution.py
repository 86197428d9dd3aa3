"""Distances between two prediction distributions from their histograms on one grid, with rigorous bounds.

Between bin edges a histogram does not say where its rows lie, but it fixes each empirical CDF F at every edge
and F is monotone. So on bin k, F_a(x) lies in [C_a(k), C_a(k + 1)] where C(k) is the mass below edge k, and:

- Kolmogorov-Smirnov, sup_x |F_a(x) - F_b(x)|: at least max_k |C_a(k) - C_b(k)| (the CDFs' values just below
  each edge) and at most max_k max(C_a(k + 1) - C_b(k), C_b(k + 1) - C_a(k)). The two differ by at most the
  largest within-bin mass of both distributions together.
- Wasserstein-1, the integral of |F_a - F_b|: each bin contributes between width * max(0, C_a(k) - C_b(k + 1),
  C_b(k) - C_a(k + 1)) and width * max(C_a(k + 1) - C_b(k), C_b(k + 1) - C_a(k)); the interval is at most two bin
  widths long, so its midpoint is within one bin width of the truth.

Each distance is returned as the midpoint of that interval with half its length as ``error_bound``: the distance
computed from the rows themselves (scipy's ``ks_2samp`` statistic, ``wasserstein_distance``) lies within it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Distance:
    """A distance known to lie in [``low``, ``high``]: ``value`` is the midpoint, ``error_bound`` half the length."""

    value: np.ndarray
    low: np.ndarray
    high: np.ndarray

    @property
    def error_bound(self) -> np.ndarray:
        """The largest possible error of ``value``: half the interval's length."""
        half: np.ndarray = (self.high - self.low) / 2.0
        return half


def cdf_at_edges(weights: np.ndarray) -> np.ndarray:
    """The share of mass below each edge, shape ``(..., bins + 1)``; NaN for an empty histogram.

    >>> cdf_at_edges(np.array([1.0, 0.0, 3.0])).tolist()
    [0.0, 0.25, 0.25, 1.0]
    """
    total = weights.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        below = np.cumsum(weights, axis=-1) / total
    zeros = np.zeros((*weights.shape[:-1], 1))
    return np.where(total > 0, np.concatenate([zeros, below], axis=-1), np.nan)


def ks_distance(a: np.ndarray, b: np.ndarray) -> Distance:
    """The two-sample Kolmogorov-Smirnov statistic of histograms ``a`` and ``b`` (``(..., bins)``), bounded.

    >>> d = ks_distance(np.array([2.0, 2.0, 0.0]), np.array([0.0, 2.0, 2.0]))
    >>> float(d.low), float(d.high), float(d.value)
    (0.5, 1.0, 0.75)
    """
    ca, cb = cdf_at_edges(a), cdf_at_edges(b)
    low = np.abs(ca - cb).max(axis=-1)
    high = np.maximum(ca[..., 1:] - cb[..., :-1], cb[..., 1:] - ca[..., :-1]).max(axis=-1)
    return Distance((low + high) / 2.0, low, high)


def wasserstein_distance(a: np.ndarray, b: np.ndarray, width: float) -> Distance:
    """The Wasserstein-1 distance of histograms ``a`` and ``b`` on bins of ``width``, bounded.

    >>> d = wasserstein_distance(np.array([1.0, 0.0, 0.0]), np.array([0.0, 0.0, 1.0]), 1.0)
    >>> float(d.low), float(d.high), float(d.value)
    (1.0, 3.0, 2.0)
    """
    ca, cb = cdf_at_edges(a), cdf_at_edges(b)
    upper = np.maximum(ca[..., 1:] - cb[..., :-1], cb[..., 1:] - ca[..., :-1])
    lower = np.maximum(0.0, np.maximum(ca[..., :-1] - cb[..., 1:], cb[..., :-1] - ca[..., 1:]))
    low, high = width * lower.sum(axis=-1), width * upper.sum(axis=-1)
    return Distance((low + high) / 2.0, low, high)


def ks_p_value(statistic: np.ndarray, n_a: np.ndarray, n_b: np.ndarray) -> np.ndarray:
    """Asymptotic two-sided p-value of a two-sample KS statistic with (effective) sizes ``n_a``, ``n_b``.

    The Kolmogorov limit with Stephens' small-sample correction, (sqrt(m) + 0.12 + 0.11 / sqrt(m)) * D with
    m = n_a n_b / (n_a + n_b). Pass the *lower* end of the histogram's interval to keep the test conservative.

    >>> round(float(ks_p_value(np.array(0.1), np.array(500.0), np.array(500.0))), 4)
    0.0124
    """
    from scipy.stats import kstwobign

    with np.errstate(divide="ignore", invalid="ignore"):
        m = n_a * n_b / (n_a + n_b)
        root = np.sqrt(m)
        scaled = (root + 0.12 + 0.11 / root) * statistic
    p: np.ndarray = np.clip(kstwobign.sf(scaled), 0.0, 1.0)
    return np.where((n_a > 0) & (n_b > 0) & np.isfinite(statistic), p, np.nan)
