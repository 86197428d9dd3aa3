"""Exact ROC AUC and ROC curves per group, from the cube's score table (the scored rows, sorted by score).

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

from fairgate.engine.columns import SCORE, TRUE, WEIGHT

MAX_CURVE_POINTS = 101


@dataclass(frozen=True)
class ScoreArrays:
    """The score table as arrays sorted by score: attribute codes, score, favourable and unfavourable weight."""

    codes: dict[str, np.ndarray]
    levels: dict[str, list[str]]
    score: np.ndarray
    positive: np.ndarray
    negative: np.ndarray
    ties: bool  # whether two rows share a score; without ties every row is its own run (the fast path)

    @classmethod
    def from_table(cls, table: pl.DataFrame, levels: dict[str, list[str]]) -> ScoreArrays:
        """From the cube's score table (already sorted by score, attributes coded into ``levels``)."""
        codes = {a: table[a].to_numpy() for a in levels}  # int16: small, and cheap to combine
        weight = table[WEIGHT].to_numpy()
        y = table[TRUE].to_numpy()
        score = table[SCORE].to_numpy()
        ties = bool(score.size > 1 and (score[1:] == score[:-1]).any())
        return cls(codes, levels, score, weight * y, weight * (1 - y), ties)


@dataclass(frozen=True)
class ScoreRuns:
    """Per slicing: runs of equal (group, score), ordered by group then score.

    Group g's runs are ``bounds[g]:bounds[g + 1]``.
    """

    bounds: np.ndarray
    positive: np.ndarray
    negative: np.ndarray
    single_rows: bool = False  # every run is one row: a run is then favourable or unfavourable, never both


def score_runs(arrays: ScoreArrays, slicing: tuple[str, ...], groups: list[dict[str, str]]) -> ScoreRuns:
    """The score table regrouped by the slicing's groups (score order kept), equal scores collapsed to runs."""
    if slicing:
        group_index = _row_groups(arrays, slicing, groups)
        # Small integer codes let numpy's stable sort run as a radix sort: linear in the rows.
        order = np.argsort(group_index, kind="stable")  # keeps score order within each group
        counts = np.bincount(group_index, minlength=len(groups))
        del group_index  # rows-long arrays are freed as soon as possible: slicings run side by side
        positive, negative = arrays.positive[order], arrays.negative[order]
    else:
        order, counts = None, np.array([arrays.score.size])
        positive, negative = arrays.positive, arrays.negative
    bounds = np.concatenate([[0], np.cumsum(counts)])
    if not arrays.ties:
        return ScoreRuns(bounds, positive, negative, single_rows=True)
    score = arrays.score if order is None else arrays.score[order]
    del order
    starts = np.ones(score.size, dtype=bool)
    np.not_equal(score[1:], score[:-1], out=starts[1:])
    starts[bounds[1:-1][bounds[1:-1] < score.size]] = True  # a group's first row starts a run
    del score
    run_starts = np.flatnonzero(starts)
    del starts
    return ScoreRuns(
        bounds=np.searchsorted(run_starts, bounds),  # runs before each group's first row
        positive=np.add.reduceat(positive, run_starts),
        negative=np.add.reduceat(negative, run_starts),
    )


def _row_groups(arrays: ScoreArrays, slicing: tuple[str, ...], groups: list[dict[str, str]]) -> np.ndarray:
    """Each scored row's group index in ``groups``, as the smallest integer type that holds it."""
    if len(slicing) == 1:
        combined = arrays.codes[slicing[0]]  # a single attribute's codes index the lookup as they are
    else:
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
    row_groups: np.ndarray = lookup.astype(np.int16 if len(groups) < 2**15 else np.int64)[combined]
    return row_groups


def _block_sums(values: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Sum of ``values[bounds[g]:bounds[g + 1]]`` for every g (0 for an empty block)."""
    sums = np.zeros(bounds.size - 1)
    nonempty = bounds[:-1] < bounds[1:]
    if nonempty.any():
        sums[nonempty] = np.add.reduceat(values, bounds[:-1][nonempty])
    return sums


def exact_auc(runs: ScoreRuns) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """AUC, favourable weight and unfavourable weight per group; AUC is NaN where a class is absent."""
    bounds = runs.bounds
    n_pos = _block_sums(runs.positive, bounds)
    n_neg = _block_sums(runs.negative, bounds)
    running = np.cumsum(runs.negative)
    before_group = np.concatenate([[0.0], running])[bounds[:-1]]  # unfavourable weight of earlier groups
    if runs.single_rows:
        # A favourable row has no unfavourable weight of its own, so the running total at it is exactly
        # the unfavourable weight below it (plus earlier groups'): one pass instead of several.
        running *= runs.positive
        wins = _block_sums(running, bounds) - before_group * n_pos
    else:
        # Per run: the unfavourable weight strictly below it within its group, plus half of its own (ties).
        # Computed in place: at 10M rows every temporary is 80 MB.
        for group, offset in enumerate(before_group):
            running[bounds[group] : bounds[group + 1]] -= offset
        running -= 0.5 * runs.negative
        running *= runs.positive
        wins = _block_sums(running, bounds)
    with np.errstate(divide="ignore", invalid="ignore"):
        auc = np.where((n_pos > 0) & (n_neg > 0), wins / (n_pos * n_neg), np.nan)
    return auc, n_pos, n_neg


def roc_curves(runs: ScoreRuns, groups: list[dict[str, str]], slicing: tuple[str, ...]) -> list[dict[str, Any]]:
    """ROC points per group (thresholds from high to low score), thinned to at most 101 points."""
    curves = []
    for index, group in enumerate(groups):
        part = slice(runs.bounds[index], runs.bounds[index + 1])
        positive, negative = runs.positive[part][::-1], runs.negative[part][::-1]
        total_positive, total_negative = positive.sum(), negative.sum()
        if total_positive <= 0 or total_negative <= 0:
            continue
        # Cumulative sums at the kept thresholds only: sums of the segments between them, then a short cumsum.
        keep = np.unique(np.linspace(0, positive.size, min(positive.size + 1, MAX_CURVE_POINTS)).round().astype(int))
        tpr = np.concatenate([[0.0], np.cumsum(np.add.reduceat(positive, keep[:-1]))]) / total_positive
        fpr = np.concatenate([[0.0], np.cumsum(np.add.reduceat(negative, keep[:-1]))]) / total_negative
        curves.append(
            {
                "slicing": list(slicing),
                "group": group,
                "fpr": fpr.round(6).tolist(),
                "tpr": tpr.round(6).tolist(),
            }
        )
    return curves
