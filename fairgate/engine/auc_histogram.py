"""ROC AUC from a fine score histogram, with a rigorous error bound (issue 13: AUC at scale).

Exact AUC needs every scored row in score order; summed cubes of partitions or days cannot keep that, but
they can keep, per group and label, the weight in each of B equal score bins (bins add across partitions).
From those counts, AUC is the Mann-Whitney statistic on bins: a favourable case beats every unfavourable case
in a lower bin, and pairs sharing a bin count as ties (1/2):

    AUC_hist = (sum_b pos_b * neg_below_b + 1/2 sum_b pos_b * neg_b) / (P * N).

Pairs in different bins are ordered by their bins exactly as by their scores (the bin rule is monotone), so
only pairs sharing a bin are uncertain: each contributes 1 (win), 1/2 (tie) or 0 (loss) to the exact AUC and
1/2 here, hence

    |AUC_exact - AUC_hist| <= (sum_b pos_b * neg_b) / (2 * P * N)        (the error bound).

The bound is 0 when no bin holds both classes, and AUC_hist is exact (whatever the bound says) when every bin
holds one distinct score: exact AUC then counts those pairs as ties too. With 65536 bins on [0, 1] and
continuous scores the bound is typically below 1e-4. Weights (probabilistic membership) enter as pos_b and
neg_b weight sums; the argument is unchanged.

The cube stores the histogram (``Cube.score_histogram``); the slicing code turns it into score runs (one run
per group and bin) and computes AUC with ``engine/auc.py``'s exact algorithm on them, which is this formula;
:func:`error_bounds` gives the bound per group from the same runs.
"""

from __future__ import annotations

import numpy as np

from fairgate.engine.auc import ScoreRuns


def histogram_auc(positive: np.ndarray, negative: np.ndarray) -> tuple[float, float]:
    """AUC and its error bound for one group from per-bin favourable and unfavourable weights (bins in score order).

    >>> histogram_auc(np.array([0.0, 1.0, 2.0]), np.array([2.0, 1.0, 0.0]))
    (0.9444444444444444, 0.05555555555555555)
    """
    positive, negative = np.asarray(positive, dtype=float), np.asarray(negative, dtype=float)
    n_pos, n_neg = positive.sum(), negative.sum()
    if n_pos <= 0 or n_neg <= 0:
        return float("nan"), float("nan")
    below = np.cumsum(negative) - negative
    wins = float(np.dot(positive, below) + 0.5 * np.dot(positive, negative))
    return float(wins / (n_pos * n_neg)), float(np.dot(positive, negative) / (2.0 * n_pos * n_neg))


def error_bounds(runs: ScoreRuns, n_pos: np.ndarray, n_neg: np.ndarray) -> np.ndarray:
    """Per group, the bound on |exact AUC - histogram AUC| (NaN where a class is absent).

    Shared-bin pairs over twice all pairs; ``runs`` are the histogram's runs (one per group and bin).
    """
    shared = runs.positive * runs.negative
    bounds = runs.bounds
    per_group = np.zeros(bounds.size - 1)
    nonempty = bounds[:-1] < bounds[1:]
    if nonempty.any():
        per_group[nonempty] = np.add.reduceat(shared, bounds[:-1][nonempty])
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((n_pos > 0) & (n_neg > 0), per_group / (2.0 * n_pos * n_neg), np.nan)
