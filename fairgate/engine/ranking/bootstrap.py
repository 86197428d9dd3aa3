"""Bootstrap replicates of a ranking slicing: a cluster bootstrap of whole lists, from the cube's bucket sums.

Why lists. The items of one list are not independent: a list has k top positions to share, so one group's
gain in a list is another's loss, and lists differ (an easy query, a strong cohort). The unit of a ranking audit
is the list (query, job opening), as in the evaluation of retrieval systems, and the bootstrap resamples lists.

The cube hashes each list into one of ``ranking.bootstrap_buckets`` buckets, independently of its content: a
bucket is a random cluster of whole lists, and the non-empty buckets are exchangeable units. A replicate draws
as many buckets as there are, with replacement and equal probabilities, and sums their per-group sums: every
group of a slicing is resampled *jointly* (lists hold several groups), the groups' sizes vary between replicates
as they do between samples of lists, and no pass over the rows is needed. Every ranking metric is a ratio of
sums, a smooth function of the buckets' mean sums, so the cluster bootstrap approximates its sampling
distribution as the number of units grows (Davison & Hinkley 1997, section 3.8); with fewer lists than buckets
a bucket is (nearly) one list, which is the list bootstrap itself. Its variance carries the factor (K - 1) / K of
any bootstrap over K units. Coverage is checked by a seeded simulation in ``tests/engine/test_ranking_engine.py``.
"""

from __future__ import annotations

import numpy as np


def cluster_replicates(
    bucket_sums: np.ndarray, bucket_rows: np.ndarray, n_bootstrap: int, seed: np.random.SeedSequence
) -> np.ndarray:
    """Per-group sums of ``n_bootstrap`` cluster-bootstrap replicates.

    ``bucket_sums`` is ``(buckets, G, m)``, ``bucket_rows`` ``(buckets,)`` (rows per bucket: empty buckets are
    not units); returns ``(n_bootstrap, G, m)``.

    >>> sums = np.arange(12.0).reshape(3, 2, 2)
    >>> cluster_replicates(sums, np.array([1, 0, 1]), 4, np.random.SeedSequence(0)).shape
    (4, 2, 2)
    """
    _, groups, m = bucket_sums.shape
    units = np.flatnonzero(bucket_rows > 0)
    if n_bootstrap == 0 or units.size == 0:
        return np.zeros((n_bootstrap, groups, m))
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, units.size, size=(n_bootstrap, units.size))
    # How often each unit is drawn in each replicate (a multinomial count, without its slow loop).
    replicate = np.arange(n_bootstrap)[:, None]
    draws = np.bincount((replicate * units.size + picks).ravel(), minlength=n_bootstrap * units.size)
    flat = bucket_sums[units].reshape(units.size, groups * m)
    out: np.ndarray = (draws.reshape(n_bootstrap, units.size).astype(np.float64) @ flat).reshape(n_bootstrap, groups, m)
    return out
