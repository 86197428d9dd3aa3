"""Exact ROC AUC and ROC curves per group, from the cube's score table (counts per distinct score).

AUC = P(score of a favourable case > score of an unfavourable one) + 1/2 P(tie), which is what sklearn's
``roc_auc_score`` computes. Per group, with scores sorted ascending, each favourable count at a score beats
the unfavourable weight strictly below it and ties with the unfavourable weight at that score.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from fairgate.cube import SCORE, TRUE, WEIGHT, Cube

MAX_CURVE_POINTS = 101


def score_table(cube: Cube, slicing: tuple[str, ...], groups: pl.DataFrame) -> pl.DataFrame:
    """Favourable and unfavourable weight per (group index ``g``, score), sorted by group and score."""
    assert cube.scores is not None
    scores = cube.scores
    if slicing:
        scores = scores.join(groups, on=list(slicing), how="left")
    else:
        scores = scores.with_columns(pl.lit(0, pl.UInt32).alias("g"))
    return (
        scores.group_by("g", SCORE)
        .agg(
            (pl.col(WEIGHT) * pl.col(TRUE)).sum().alias("positive"),
            (pl.col(WEIGHT) * (1 - pl.col(TRUE))).sum().alias("negative"),
        )
        .sort("g", SCORE)
    )


def exact_auc(table: pl.DataFrame, n_groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """AUC, favourable weight and unfavourable weight per group; AUC is NaN where a class is absent."""
    g = table["g"].to_numpy().astype(np.int64)
    positive = table["positive"].to_numpy()
    negative = table["negative"].to_numpy()
    n_pos = np.bincount(g, weights=positive, minlength=n_groups)
    n_neg = np.bincount(g, weights=negative, minlength=n_groups)
    # Unfavourable weight strictly below each score, within its group (rows are sorted by group, score).
    running = np.cumsum(negative)
    group_start = np.concatenate([[0.0], np.cumsum(n_neg)])[g]
    below = running - negative - group_start
    wins = np.bincount(g, weights=positive * (below + 0.5 * negative), minlength=n_groups)
    with np.errstate(divide="ignore", invalid="ignore"):
        auc = np.where((n_pos > 0) & (n_neg > 0), wins / (n_pos * n_neg), np.nan)
    return auc, n_pos, n_neg


def roc_curves(table: pl.DataFrame, groups: list[dict[str, str]], slicing: tuple[str, ...]) -> list[dict[str, Any]]:
    """ROC points per group (thresholds from high to low score), thinned to at most 101 points."""
    curves = []
    for index, group in enumerate(groups):
        part = table.filter(pl.col("g") == index).sort(SCORE, descending=True)
        positive = part["positive"].to_numpy()
        negative = part["negative"].to_numpy()
        if positive.sum() <= 0 or negative.sum() <= 0:
            continue
        tpr = np.concatenate([[0.0], np.cumsum(positive) / positive.sum()])
        fpr = np.concatenate([[0.0], np.cumsum(negative) / negative.sum()])
        keep = np.unique(np.linspace(0, tpr.size - 1, min(tpr.size, MAX_CURVE_POINTS)).round().astype(int))
        curves.append(
            {"slicing": list(slicing), "group": group, "fpr": fpr[keep].round(6).tolist(), "tpr": tpr[keep].round(6).tolist()}
        )
    return curves
