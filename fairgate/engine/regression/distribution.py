"""Distances between two prediction distributions from their histograms on one grid, with rigorous bounds.

A histogram bin k (edges e_k <= v < e_k+1) records the weight of its values and their smallest and largest value
(lo, hi). The empirical CDF F is then known exactly outside [lo, hi): F = C(k) (the mass below e_k) for x < lo,
F = C(k + 1) for x >= hi, and only between lo and hi is it unknown, though monotone and within
[C(k), C(k + 1)]. A bin holding one distinct value (lo = hi: discrete or rounded predictions) leaves nothing
unknown. Splitting each bin at both distributions' lo and hi gives at most five pieces on which each CDF is a
known constant or confined to a known interval, hence bounds on |F_a - F_b| on each piece:

- Kolmogorov-Smirnov, sup_x |F_a(x) - F_b(x)|, lies between the largest lower bound of a piece (and the CDFs'
  difference just below each edge) and the largest upper bound. The two differ by at most the largest
  within-bin mass of both distributions together, and by nothing where the bins hold single values.
- Wasserstein-1, the integral of |F_a - F_b|, lies between the sums of piece length x lower / upper bound. The
  interval is at most two bin widths long (each bin adds at most its width x its masses), so its midpoint is
  within one bin width of the truth; again exact where bins hold single values.

Each distance is returned as the midpoint of its interval with half its length as ``error_bound``: the distance
computed from the rows themselves (scipy's ``ks_2samp`` statistic, ``wasserstein_distance``) lies within it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Histogram:
    """Weights per bin and the smallest and largest value in each bin, arrays shaped ``(..., bins)``.

    Empty bins may hold anything in ``low``/``high`` (they are ignored); ``edges`` has ``bins + 1`` entries.
    """

    weight: np.ndarray
    low: np.ndarray
    high: np.ndarray
    edges: np.ndarray


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


def distances(a: Histogram, b: Histogram) -> tuple[Distance, Distance]:
    """The Kolmogorov-Smirnov and Wasserstein-1 distances of two histograms on the same grid, bounded.

    >>> edges = np.array([0.0, 1.0, 2.0, 3.0])
    >>> a = Histogram(np.array([1.0, 1.0, 0.0]), np.array([0.5, 1.5, 2.0]), np.array([0.5, 1.5, 2.0]), edges)
    >>> b = Histogram(np.array([0.0, 0.0, 2.0]), np.array([0.0, 1.0, 2.2]), np.array([0.0, 1.0, 2.8]), edges)
    >>> ks, w1 = distances(a, b)
    >>> [round(float(x), 9) for x in (ks.low, ks.high, w1.low, w1.high)]
    [1.0, 1.0, 1.2, 1.8]
    """
    lower, upper, length, edge_gap = _pieces(a, b)
    # An empty histogram (a group of weight 0) has no CDF: its distances are NaN.
    empty = ~np.isfinite(edge_gap)
    ks_low = np.where(empty, np.nan, np.maximum(_max(lower), edge_gap))
    ks_high = np.where(empty, np.nan, _max(upper))
    w1_low = np.where(empty, np.nan, np.where(length > 0, length * np.nan_to_num(lower), 0.0).sum(axis=(-2, -1)))
    w1_high = np.where(empty, np.nan, np.where(length > 0, length * np.nan_to_num(upper), 0.0).sum(axis=(-2, -1)))
    return (
        Distance((ks_low + ks_high) / 2.0, ks_low, ks_high),
        Distance((w1_low + w1_high) / 2.0, w1_low, w1_high),
    )


def ks_distance(a: Histogram, b: Histogram) -> Distance:
    """The two-sample Kolmogorov-Smirnov statistic of two histograms on the same grid, bounded.

    >>> edges = np.array([0.0, 1.0, 2.0])
    >>> a = Histogram(np.array([1.0, 1.0]), np.array([0.5, 1.5]), np.array([0.5, 1.5]), edges)
    >>> b = Histogram(np.array([0.0, 2.0]), np.array([0.0, 1.2]), np.array([0.0, 1.8]), edges)
    >>> d = ks_distance(a, b)
    >>> float(d.low), float(d.high)
    (0.5, 1.0)
    """
    return distances(a, b)[0]


def wasserstein_distance(a: Histogram, b: Histogram) -> Distance:
    """The Wasserstein-1 distance of two histograms on the same grid, bounded.

    >>> edges = np.array([0.0, 1.0, 2.0, 3.0])
    >>> a = Histogram(np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 2.0]), np.array([0.0, 1.0, 2.0]), edges)
    >>> b = Histogram(np.array([0.0, 0.0, 1.0]), np.array([0.0, 1.0, 2.5]), np.array([0.0, 1.0, 2.5]), edges)
    >>> d = wasserstein_distance(a, b)
    >>> float(d.low), float(d.high)
    (2.5, 2.5)
    """
    return distances(a, b)[1]


def _pieces(a: Histogram, b: Histogram) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Lower and upper bounds of |F_a - F_b| and the length of every piece ``(..., bins, 5)``; the edge gap."""
    ca, cb = cdf_at_edges(a.weight), cdf_at_edges(b.weight)
    left, right = a.edges[:-1], a.edges[1:]
    a_low, a_high = _span(a, left)
    b_low, b_high = _span(b, left)
    shape = np.broadcast_shapes(a_low.shape, b_low.shape)
    points = np.empty((*shape, 6))
    # The six points in increasing order: left <= each bin's low <= its high <= right, so sorting them is merging
    # the pairs (a_low, a_high) and (b_low, b_high) (a sorting network: the very values np.sort would give).
    points[..., 0], points[..., 5] = left, right
    points[..., 1], points[..., 4] = np.minimum(a_low, b_low), np.maximum(a_high, b_high)
    inner_low, inner_high = np.maximum(a_low, b_low), np.minimum(a_high, b_high)
    points[..., 2], points[..., 3] = np.minimum(inner_low, inner_high), np.maximum(inner_low, inner_high)
    start, end = points[..., :-1], points[..., 1:]
    middle = (start + end) / 2.0
    bounds = []
    for c, low, high in ((ca, a_low, a_high), (cb, b_low, b_high)):
        below, above = c[..., :-1, None], c[..., 1:, None]
        # Below the bin's smallest value F is the mass below the bin; from its largest value on, all of it.
        bounds.append(
            (
                np.where(middle >= high[..., None], above, below),
                np.where(middle < low[..., None], below, above),
            )
        )
    (a0, a1), (b0, b1) = bounds
    length = end - start
    valid = length > 0
    lower = np.where(valid, np.maximum(0.0, np.maximum(a0 - b1, b0 - a1)), np.nan)
    upper = np.where(valid, np.maximum(a1 - b0, b1 - a0), np.nan)
    edge_gap = np.abs(ca - cb).max(axis=-1)
    return lower, upper, length, edge_gap


def _max(values: np.ndarray) -> np.ndarray:
    """The largest defined value over the pieces of every bin (pieces of length 0 are NaN); 0 if none."""
    largest: np.ndarray = np.where(np.isfinite(values), values, 0.0).max(axis=(-2, -1))
    return largest


def _span(histogram: Histogram, left: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The bins' smallest and largest values, collapsed onto the left edge where a bin is empty."""
    empty = histogram.weight <= 0
    return np.where(empty, left, histogram.low), np.where(empty, left, histogram.high)


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
