"""Bootstrap replicates of a regression slicing from the cube's bucket sums (no pass over the rows).

Why buckets. The binary cube's cells hold identical rows (same group, label, decision, score bin), so drawing
how many rows fall in each cell (a multinomial over cells) *is* resampling the rows. A regression cell holds
rows with different predictions and labels summarised by sums: a multinomial over cells would only rescale each
group's sums, leaving every group mean unchanged, and give intervals of width zero. The bootstrap needs units
inside a group that can be drawn with replacement.

The cube therefore splits each cell into ``buckets`` sub-cells by a hash of the row (id or position), which is
independent of the row's values: the rows of one group in one bucket are a simple random subset of the group,
and the group's buckets are exchangeable clusters. Resampling a group's K non-empty buckets with replacement
(K draws, equal probabilities: a stratified cluster bootstrap, strata = the slicing's groups) resamples the
group's rows in clusters. Every metric here is a smooth function of the group's *mean* moments (a ratio of
sums), and the sums of random clusters are (nearly) i.i.d. draws, so the bootstrap distribution of the metric
approximates its sampling distribution as K grows, exactly as the row bootstrap does as n grows (resampling
clusters: Davison & Hinkley 1997, section 3.8; online-experiment platforms use the same random buckets). Its
variance carries the factor (K - 1) / K of any bootstrap over K units, under 1% at the default 100 buckets;
a group with fewer rows than buckets has almost one row per bucket, which is the row bootstrap itself.

What it does not do: keep the slicing's group sizes random (they are fixed, as in a stratified bootstrap: the
audit conditions on who is in which group), or resample the histograms (the distribution distances carry a
deterministic bin-width bound and a p-value instead of a bootstrap interval).
Coverage is checked by a seeded simulation in ``tests/engine/test_regression_oracles.py``.
"""

from __future__ import annotations

import numpy as np


def bucket_replicates(
    bucket_sums: np.ndarray, bucket_rows: np.ndarray, n_bootstrap: int, seed: np.random.SeedSequence
) -> tuple[np.ndarray, np.ndarray]:
    """Sums per group for ``n_bootstrap`` stratified cluster-bootstrap replicates, with their covariance.

    ``bucket_sums`` is ``(G, buckets, k)``, ``bucket_rows`` ``(G, buckets)`` (rows per bucket: empty buckets are
    not units); returns the sums ``(n_bootstrap, G, k)`` and, per replicate and group, the covariance of the
    group's total sums estimated from its drawn buckets ``(n_bootstrap, G, k, k)`` (what studentises each
    replicate: ``moments.metric_variances``).

    >>> sums = np.arange(12.0).reshape(2, 3, 2)
    >>> reps, covariance = bucket_replicates(sums, np.array([[1, 1, 1], [1, 0, 1]]), 4, np.random.SeedSequence(0))
    >>> reps.shape, covariance.shape
    ((4, 2, 2), (4, 2, 2, 2))
    """
    groups, _, k = bucket_sums.shape
    out = np.zeros((n_bootstrap, groups, k))
    covariance = np.full((n_bootstrap, groups, k, k), np.nan)
    if n_bootstrap == 0:
        return out, covariance
    rng = np.random.default_rng(seed)
    replicate = np.arange(n_bootstrap)[:, None]
    for g in range(groups):
        units = np.flatnonzero(bucket_rows[g] > 0)
        if units.size == 0:
            continue
        # K draws with replacement from the K units, counted per replicate (a multinomial, without its slow loop).
        picks = rng.integers(0, units.size, size=(n_bootstrap, units.size))
        draws = np.bincount((replicate * units.size + picks).ravel(), minlength=n_bootstrap * units.size)
        counts = draws.reshape(n_bootstrap, units.size).astype(np.float64)
        out[:, g, :] = counts @ bucket_sums[g, units, :]
        covariance[:, g] = cluster_covariance(counts, bucket_sums[g, units, :])
    return out, covariance


def cluster_covariance(counts: np.ndarray, unit_sums: np.ndarray) -> np.ndarray:
    """Covariance of a group's total sums from its K cluster totals, each drawn ``counts`` times (rows: draws).

    K / (K - 1) * sum_k c_k (s_k - S / K)(s_k - S / K)', with S = sum_k c_k s_k: the textbook variance of a total
    over K i.i.d. clusters (NaN with one cluster). ``counts`` is ``(B, K)``, ``unit_sums`` ``(K, k)``.

    >>> float(cluster_covariance(np.ones((1, 3)), np.array([[1.0], [2.0], [3.0]]))[0, 0, 0])  # 3/2 * (1 + 0 + 1)
    3.0
    """
    units, k = unit_sums.shape
    if units < 2:
        return np.full((counts.shape[0], k, k), np.nan)
    outer = (unit_sums[:, :, None] * unit_sums[:, None, :]).reshape(units, k * k)
    total = counts @ unit_sums
    second = (counts @ outer).reshape(-1, k, k)
    spread: np.ndarray = (second - total[:, :, None] * total[:, None, :] / units) * (units / (units - 1))
    return spread
