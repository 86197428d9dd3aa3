"""Position discounts: how much attention a position gets (the exposure of an item at that rank).

``log2`` is DCG's 1 / log2(1 + rank), the exposure model of Singh & Joachims (2018, "Fairness of Exposure in
Rankings"); ``reciprocal`` is 1 / rank; ``rbp`` is patience^(rank - 1), rank-biased precision's user who goes on
to the next position with probability ``patience`` (Moffat & Zobel 2008; RBP's constant 1 - patience is left out
so that every discount gives the top position exposure 1 and exposures of different discounts read alike).
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from fairgate.policy.ranking import RankingOptions


def discount_expr(rank: pl.Expr, options: RankingOptions) -> pl.Expr:
    """The discount of each rank as a Polars expression (ranks are integers >= 1)."""
    rank = rank.cast(pl.Float64)
    if options.discount == "log2":
        return 1.0 / (rank + 1.0).log(2)
    if options.discount == "reciprocal":
        return 1.0 / rank
    assert options.patience is not None  # RankingOptions requires it with rbp
    return (math.log(options.patience) * (rank - 1.0)).exp()


def discount(rank: np.ndarray, options: RankingOptions) -> np.ndarray:
    """The discount of each rank (numpy), equal to ``discount_expr``.

    >>> discount(np.array([1, 3]), RankingOptions()).round(4).tolist()
    [1.0, 0.5]
    """
    rank = np.asarray(rank, dtype=np.float64)
    if options.discount == "log2":
        out: np.ndarray = 1.0 / np.log2(rank + 1.0)
        return out
    if options.discount == "reciprocal":
        return 1.0 / rank
    assert options.patience is not None
    return np.exp(math.log(options.patience) * (rank - 1.0))
