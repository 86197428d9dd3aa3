"""Exact ROC AUC and ROC curves per group, from the cube's score table (weights per distinct score).

AUC = P(score of a favourable case > score of an unfavourable one) + 1/2 P(tie), which is what sklearn's
``roc_auc_score`` computes. The score table is sorted by score once per cube; each slicing then needs only a
stable (radix) sort by group code and linear passes: within a group, each favourable weight at a score
beats the unfavourable weight strictly below it and ties with the unfavourable weight at that score.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from fairgate.cube import SCORE, TRUE, WEIGHT

MAX_CURVE_POINTS = 101


@dataclass(frozen=True)
class ScoreArrays:
    """The score table as arrays sorted by score: attribute codes, score, favourable and unfavourable weight."""

    codes: dict[str, np.ndarray]
    levels: dict[str, list[str]]
    score: np.ndarray
    positive: np.ndarray
    negative: np.ndarray

    @classmethod
    def from_table(cls, table: pl.DataFrame, levels: dict[str, list[str]]) -> ScoreArrays:
        """From the cube's score table (already sorted by score, attributes coded into ``levels``)."""
        codes = {a: table[a].to_numpy() for a in levels}  # int16: small, and cheap to combine
        weight = table[WEIGHT].to_numpy()
        y = table[TRUE].to_numpy()
        return cls(codes, levels, table[SCORE].to_numpy(), weight * y, weight * (1 - y))


@dataclass(frozen=True)
class ScoreRuns:
    """Per slicing: runs of equal (group, score), ordered by group then score."""

    group: np.ndarray
    score: np.ndarray
    positive: np.ndarray
    negative: np.ndarray


def score_runs(arrays: ScoreArrays, slicing: tuple[str, ...], groups: list[dict[str, str]]) -> ScoreRuns:
    """Collapse the score table to runs of equal score within each group of the slicing."""
    if slicing:
        combined = np.zeros(arrays.score.size, dtype=np.int32)
        for attribute in slicing:
            combined *= len(arrays.levels[attribute])
            combined += arrays.codes[attribute]
        lookup = np.full(int(np.prod([len(arrays.levels[a]) for a in slicing])), -1, dtype=np.int64)
        for index, group in enumerate(groups):
            if any(group[a] not in arrays.levels[a] for a in slicing):
                continue  # a declared value with no rows: no score belongs to it
            code = 0
            for attribute in slicing:
                code = code * len(arrays.levels[attribute]) + arrays.levels[attribute].index(group[attribute])
            lookup[code] = index
        # Small integer codes let numpy's stable sort run as a radix sort: linear in the rows.
        group_index = lookup.astype(np.int16 if len(groups) < 2**15 else np.int64)[combined]
        order = np.argsort(group_index, kind="stable")  # keeps score order within each group
        g, s = group_index[order], arrays.score[order]
        positive, negative = arrays.positive[order], arrays.negative[order]
    else:
        g = np.zeros(arrays.score.size, dtype=np.int64)
        s, positive, negative = arrays.score, arrays.positive, arrays.negative
    if s.size == 0:
        empty = np.zeros(0)
        return ScoreRuns(empty.astype(np.int64), empty, empty, empty)
    starts = np.empty(s.size, dtype=bool)
    starts[0] = True
    np.not_equal(s[1:], s[:-1], out=starts[1:])
    starts[1:] |= g[1:] != g[:-1]
    if starts.all():  # continuous scores: every row is its own run
        return ScoreRuns(group=g.astype(np.int64), score=s, positive=positive, negative=negative)
    run = np.cumsum(starts) - 1
    return ScoreRuns(
        group=g[starts].astype(np.int64),
        score=s[starts],
        positive=np.bincount(run, weights=positive),
        negative=np.bincount(run, weights=negative),
    )


def exact_auc(runs: ScoreRuns, n_groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """AUC, favourable weight and unfavourable weight per group; AUC is NaN where a class is absent."""
    g = runs.group.astype(np.int64)
    n_pos = np.bincount(g, weights=runs.positive, minlength=n_groups)
    n_neg = np.bincount(g, weights=runs.negative, minlength=n_groups)
    # Unfavourable weight strictly below each run, within its group (runs are sorted by group, score).
    group_start = np.concatenate([[0.0], np.cumsum(n_neg)])[g]
    below = np.cumsum(runs.negative) - runs.negative - group_start
    wins = np.bincount(g, weights=runs.positive * (below + 0.5 * runs.negative), minlength=n_groups)
    with np.errstate(divide="ignore", invalid="ignore"):
        auc = np.where((n_pos > 0) & (n_neg > 0), wins / (n_pos * n_neg), np.nan)
    return auc, n_pos, n_neg


def roc_curves(
    runs: ScoreRuns, groups: list[dict[str, str]], slicing: tuple[str, ...]
) -> list[dict[str, Any]]:
    """ROC points per group (thresholds from high to low score), thinned to at most 101 points."""
    curves = []
    bounds = np.searchsorted(runs.group, np.arange(len(groups) + 1))
    for index, group in enumerate(groups):
        part = slice(bounds[index], bounds[index + 1])
        positive, negative = runs.positive[part][::-1], runs.negative[part][::-1]
        if positive.sum() <= 0 or negative.sum() <= 0:
            continue
        tpr = np.concatenate([[0.0], np.cumsum(positive) / positive.sum()])
        fpr = np.concatenate([[0.0], np.cumsum(negative) / negative.sum()])
        keep = np.unique(np.linspace(0, tpr.size - 1, min(tpr.size, MAX_CURVE_POINTS)).round().astype(int))
        curves.append(
            {
                "slicing": list(slicing),
                "group": group,
                "fpr": fpr[keep].round(6).tolist(),
                "tpr": tpr[keep].round(6).tolist(),
            }
        )
    return curves
