"""One slicing of a regression audit (an attribute, a pair, ..., or the whole population) from the cube.

Per group: the ``moments.GROUP_METRICS`` with bootstrap intervals (``bootstrap``); per group against the
reference: signed difference and ratio with intervals and a p-value; across groups: the range (max - min) and
ratio (min / max) of each metric with simultaneous max-t intervals (DESIGN.md: a percentile interval of
max - min undercovers), the worst group's loss (bounded group loss: Agarwal, Dudik & Wu 2019) with a
simultaneous interval; and per group the Kolmogorov-Smirnov and Wasserstein-1 distances between its predictions
and those of the rest and of the reference, each with its histogram error bound (``distribution``).
Judging these against a policy is adjudication's job, not this module's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
from scipy import stats as scipy_stats

from fairgate.engine.bootstrap import slicing_seed
from fairgate.engine.reference import reference_index
from fairgate.engine.regression.bootstrap import bucket_replicates
from fairgate.engine.regression.columns import BIN_HIGH, BIN_LOW, BUCKET, ROWS, SUMS, VALUE_BIN, WEIGHT, WEIGHT_SQ
from fairgate.engine.regression.cube import RegressionCube
from fairgate.engine.regression.distribution import Histogram, distances, ks_p_value
from fairgate.engine.regression.moments import GROUP_METRICS, LOSSES, Sums, group_metrics
from fairgate.engine.stats import (
    Component,
    PairFamily,
    finite_list,
    finite_or_none,
    pair_family,
    percentile_interval,
    replicate_se,
)

Slicing = tuple[str, ...]
Group = dict[str, str]
_GROUP = "__group"
#: Metrics whose ratio between groups is read: the losses, and the mean prediction and label where every value
#: is positive (salaries, credit limits: the regression analogue of disparate impact). A mean residual or R^2
#: changes sign, so a ratio of them means nothing.
RATIO_METRICS = ("mean_prediction", "mean_label", *LOSSES)


@dataclass
class RegressionSlicing:
    """Everything computed for one slicing; plain data (lists, None for undefined), picklable."""

    slicing: Slicing
    groups: list[Group]
    n: list[float]  # Kish effective sizes (the row counts when unweighted)
    rows: list[int]
    sufficient: list[bool]
    reference: Group | None
    metrics: dict[str, dict[str, list[float | None]]]  # metric -> value / ci_low / ci_high -> per group
    comparisons: list[dict[str, Any]]
    summaries: list[dict[str, Any]]
    distribution: list[dict[str, Any]]
    grid: dict[str, float] = field(default_factory=dict)


def regression_slicing(
    cube: RegressionCube,
    slicing: Slicing,
    *,
    n_bootstrap: int = 1000,
    seed: int = 0,
    confidence_level: float = 0.95,
    reference: Group | None = None,
    min_group_size: float = 30,
) -> RegressionSlicing:
    """All regression metrics of one slicing, with ``n_bootstrap`` replicates at ``confidence_level``.

    ``reference`` is the reference group (every attribute of the slicing given); absent or not present, the
    largest group (by effective size) is the reference. Groups under ``min_group_size`` (effective size) are
    reported but left out of comparisons and summaries.

    >>> from fairgate.engine.regression.cube import build_regression_cube
    >>> rng = np.random.default_rng(0)
    >>> frame = pl.DataFrame({"g": ["a"] * 200 + ["b"] * 100, "y": rng.normal(size=300)})
    >>> frame = frame.with_columns(p=pl.col("y") + 0.5 * (pl.col("g") == "b"))
    >>> cube = build_regression_cube(frame, attributes=["g"], prediction="p", label="y")
    >>> result = regression_slicing(cube, ("g",), n_bootstrap=200)
    >>> [round(v, 2) for v in result.metrics["mean_residual"]["value"]], result.reference
    ([0.0, 0.5], {'g': 'a'})
    """
    groups, cell_group = _group_index(cube.cells, slicing)
    n_groups = len(groups)
    bucket_sums, bucket_rows = _bucket_sums(cube, cell_group, n_groups)
    point = Sums(bucket_sums.sum(axis=1), cube.grid.shift)
    replicates = Sums(
        bucket_replicates(bucket_sums, bucket_rows, n_bootstrap, slicing_seed(seed, ("regression", *slicing))),
        cube.grid.shift,
    )
    weight_sq = np.bincount(cell_group, cube.cells[WEIGHT_SQ].to_numpy(), n_groups)
    weight = point[WEIGHT]
    with np.errstate(divide="ignore", invalid="ignore"):
        n = np.where(weight_sq > 0, weight**2 / weight_sq, 0.0)
    rows = bucket_rows.sum(axis=1)
    eligible = n >= min_group_size
    ref = reference_index(groups, reference, n)

    values = group_metrics(point)
    reps = group_metrics(replicates)
    metrics: dict[str, dict[str, list[float | None]]] = {}
    # A group in one bucket (one row, mostly) cannot be resampled: no interval rather than one of width 0.
    resamplable = (bucket_rows > 0).sum(axis=1) >= 2
    for name in GROUP_METRICS:
        low, high = percentile_interval(np.where(resamplable, reps[name], np.nan), confidence_level)
        metrics[name] = {"value": finite_list(values[name]), "ci_low": finite_list(low), "ci_high": finite_list(high)}

    return RegressionSlicing(
        slicing=slicing,
        groups=groups,
        n=n.tolist(),
        rows=[int(r) for r in rows],
        sufficient=eligible.tolist(),
        reference=groups[ref] if slicing else None,
        metrics=metrics,
        comparisons=_comparisons(groups, values, reps, ref, eligible, confidence_level) if slicing else [],
        summaries=_summaries(groups, values, reps, eligible, confidence_level),
        distribution=_distribution(cube, groups, weight, weight_sq, ref, eligible) if slicing else [],
        grid={"low": cube.grid.low, "high": cube.grid.high, "bins": cube.grid.bins, "width": cube.grid.width},
    )


def prediction_histograms(
    cube: RegressionCube, slicing: Slicing, *, labels: bool = False
) -> tuple[list[Group], Histogram]:
    """The groups of a slicing and their prediction (or label) histograms on the cube's grid, ``(G, bins)``."""
    groups, _ = _group_index(cube.cells, slicing)
    table = cube.labels if labels else cube.predictions
    _, index = _group_index(table, slicing, groups)
    return groups, _histograms(table, index, len(groups), cube.grid.edges)


def _group_index(
    frame: pl.DataFrame, slicing: Slicing, groups: list[Group] | None = None
) -> tuple[list[Group], np.ndarray]:
    """The slicing's groups (sorted) and each row's group index."""
    if not slicing:
        return [{}], np.zeros(frame.height, dtype=np.int64)
    keys = list(slicing)
    frame_groups = frame.select(keys).unique().sort(keys)
    if groups is not None:
        frame_groups = pl.DataFrame(groups, schema=dict.fromkeys(keys, pl.String))
    indexed = frame_groups.with_row_index(_GROUP)
    index = frame.select(keys).join(indexed, on=keys, how="left", maintain_order="left")[_GROUP].to_numpy()
    return [{k: str(v) for k, v in row.items()} for row in frame_groups.iter_rows(named=True)], index.astype(np.int64)


def _bucket_sums(cube: RegressionCube, cell_group: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Sums per (group, bucket): ``(G, buckets, len(SUMS))`` and rows ``(G, buckets)``."""
    buckets = cube.buckets
    slot = cell_group * buckets + cube.cells[BUCKET].to_numpy().astype(np.int64)
    size = n_groups * buckets
    sums = np.stack([np.bincount(slot, cube.cells[c].to_numpy(), size) for c in SUMS], axis=-1)
    rows = np.bincount(slot, cube.cells[ROWS].to_numpy().astype(float), size)
    return sums.reshape(n_groups, buckets, len(SUMS)), rows.reshape(n_groups, buckets)


def _comparisons(
    groups: list[Group],
    values: dict[str, np.ndarray],
    reps: dict[str, np.ndarray],
    ref: int,
    eligible: np.ndarray,
    level: float,
) -> list[dict[str, Any]]:
    """Each eligible group against the reference: difference (and ratio for losses) with bootstrap intervals."""
    out: list[dict[str, Any]] = []
    if not eligible[ref]:
        return out
    for name in GROUP_METRICS:
        difference = values[name] - values[name][ref]
        rep_difference = reps[name] - reps[name][:, ref : ref + 1]
        low, high = percentile_interval(rep_difference, level)
        se = replicate_se(rep_difference)
        with np.errstate(divide="ignore", invalid="ignore"):
            p_value = np.where(se > 0, 2.0 * scipy_stats.norm.sf(np.abs(difference) / se), np.nan)
            ratio, rep_ratio = _ratios(values[name], reps[name], ref, name in RATIO_METRICS)
        ratio_low, ratio_high = percentile_interval(rep_ratio, level)
        for g, group in enumerate(groups):
            if g == ref or not eligible[g]:
                continue
            out.append(
                {
                    "metric": name,
                    "group": group,
                    "reference": groups[ref],
                    "difference": finite_or_none(difference[g]),
                    "difference_ci": [finite_or_none(low[g]), finite_or_none(high[g])],
                    "ratio": finite_or_none(ratio[g]),
                    "ratio_ci": [finite_or_none(ratio_low[g]), finite_or_none(ratio_high[g])],
                    "p_value": finite_or_none(p_value[g]),
                }
            )
    return out


def _ratios(value: np.ndarray, rep: np.ndarray, ref: int, wanted: bool) -> tuple[np.ndarray, np.ndarray]:
    """m_g / m_ref for the point estimate and replicates; NaN unless wanted and the reference value is positive."""
    if not wanted:
        return np.full(value.shape, np.nan), np.full(rep.shape, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where((value[ref] > 0) & (value > 0), value / value[ref], np.nan)
        reference = rep[:, ref : ref + 1]
        rep_ratio = np.where((reference > 0) & (rep > 0), rep / reference, np.nan)
    return ratio, rep_ratio


def _summaries(
    groups: list[Group], values: dict[str, np.ndarray], reps: dict[str, np.ndarray], eligible: np.ndarray, level: float
) -> list[dict[str, Any]]:
    """Range and ratio of every metric over the eligible groups, and the worst group's loss."""
    out: list[dict[str, Any]] = []
    chosen = np.flatnonzero(eligible)
    if chosen.size < 1:
        return out
    for name in GROUP_METRICS:
        value, rep = values[name][chosen], reps[name][:, chosen]
        defined = np.isfinite(value)
        value, rep = value[defined], rep[:, defined]
        compared = [groups[i] for i in chosen[defined]]
        if value.size >= 2:
            out.append(_range_summary(name, value, rep, level, compared))
            if name in RATIO_METRICS and (value > 0).all():
                out.append(_ratio_summary(name, value, rep, level, compared))
        if name in LOSSES and value.size >= 1:
            out.append(_worst_group(name, value, rep, level, compared))
    return out


def _range_summary(name: str, value: np.ndarray, rep: np.ndarray, level: float, groups: list[Group]) -> dict[str, Any]:
    family = pair_family([Component(value, rep)])
    low, high = family.bounds(family.critical(level)) if family is not None else (np.nan, np.nan)
    return {
        "metric": f"{name}_difference",
        "value": float(value.max() - value.min()),
        "ci_low": finite_or_none(low),
        "ci_high": finite_or_none(high),
        "groups": groups,
        "interval": "simultaneous max-t over group pairs (bootstrap)",
        "_family": family,  # what the gate tests (fairgate.engine.adjudicate); not part of the document
        "_summary": "difference",
    }


def _ratio_summary(name: str, value: np.ndarray, rep: np.ndarray, level: float, groups: list[Group]) -> dict[str, Any]:
    # min/max = exp(-(range of log values)): the range's simultaneous interval on the log scale, mapped back.
    with np.errstate(divide="ignore", invalid="ignore"):
        log_rep = np.where(rep > 0, np.log(rep), np.nan)
    family = pair_family([Component(np.log(value), log_rep)])
    low, high = family.bounds(family.critical(level)) if family is not None else (np.nan, np.nan)
    return {
        "metric": f"{name}_ratio",
        "value": float(value.min() / value.max()),
        "ci_low": finite_or_none(np.exp(-high)),
        "ci_high": finite_or_none(np.exp(-low)),
        "groups": groups,
        "interval": "simultaneous max-t over group pairs of log values (bootstrap)",
        "_family": family,
        "_summary": "ratio",
    }


def _worst_group(name: str, value: np.ndarray, rep: np.ndarray, level: float, groups: list[Group]) -> dict[str, Any]:
    """max_g loss_g with an interval that holds when all groups' simultaneous intervals do (max-t over groups).

    The family the gate tests holds the groups' losses as its "gaps": "the worst loss exceeds the limit" is
    "some group's loss exceeds it", whose max-t p-value ``PairFamily.p_beyond`` gives (its studentized-range
    tail bounds the one-sided maximum over the groups; at least two groups' worth, so a lone group is judged).
    """
    worst = int(np.argmax(value))
    se = replicate_se(rep)
    low = high = np.nan
    family = None
    if np.isfinite(se).all() and (se > 0).all():
        with np.errstate(invalid="ignore"):
            t = np.nanmax(np.abs(rep - value) / se, axis=1)
        null = np.sort(t[np.isfinite(t)])
        family = PairFamily(value, se, null, (max(2, value.size),))
        low, high = family.bounds(family.critical(level))
    return {
        "metric": f"worst_group_{name}",
        "value": float(value[worst]),
        "ci_low": finite_or_none(low),
        "ci_high": finite_or_none(high),
        "group": groups[worst],
        "groups": groups,
        "interval": "simultaneous max-t over groups (bootstrap)",
        "_family": family,
        "_summary": "difference",
    }


def _distribution(
    cube: RegressionCube,
    groups: list[Group],
    weight: np.ndarray,
    weight_sq: np.ndarray,
    ref: int,
    eligible: np.ndarray,
) -> list[dict[str, Any]]:
    """Per group: KS and Wasserstein-1 distances of its predictions to the rest's and to the reference's."""
    _, histograms = prediction_histograms(cube, tuple(groups[0]))
    rest = _rest(histograms)
    reference = Histogram(histograms.weight[[ref]], histograms.low[[ref]], histograms.high[[ref]], histograms.edges)
    rest_weight, rest_sq = weight.sum() - weight, weight_sq.sum() - weight_sq
    with np.errstate(divide="ignore", invalid="ignore"):
        n = np.where(weight_sq > 0, weight**2 / weight_sq, 0.0)
        n_rest = np.where(rest_sq > 0, rest_weight**2 / rest_sq, 0.0)
    out: list[dict[str, Any]] = []
    for against, other, n_other in (("rest", rest, n_rest), ("reference", reference, np.full(len(groups), n[ref]))):
        ks, w1 = distances(histograms, other)
        p_value = ks_p_value(ks.low, n, n_other)
        for g, group in enumerate(groups):
            if (against == "reference" and g == ref) or len(groups) < 2:
                continue
            out.append(
                {
                    "group": group,
                    "against": against,
                    "sufficient": bool(eligible[g] and (eligible[ref] if against == "reference" else True)),
                    "ks_distance": finite_or_none(ks.value[g]),
                    "ks_error_bound": finite_or_none(ks.error_bound[g]),
                    "ks_p_value": finite_or_none(p_value[g]),
                    "wasserstein_distance": finite_or_none(w1.value[g]),
                    "wasserstein_error_bound": finite_or_none(w1.error_bound[g]),
                }
            )
    return out


def _rest(histograms: Histogram) -> Histogram:
    """For each group, the histogram of all the other groups together (bin extremes over the others)."""
    low, high = histograms.low, histograms.high
    if low.shape[0] < 2:
        return histograms
    ordered_low, ordered_high = np.sort(low, axis=0), np.sort(high, axis=0)
    groups = np.arange(low.shape[0])[:, None]
    # The others' minimum is the overall minimum unless this group holds it, then the second smallest.
    rest_low = np.where(groups == np.argmin(low, axis=0), ordered_low[1], ordered_low[0])
    rest_high = np.where(groups == np.argmax(high, axis=0), ordered_high[-2], ordered_high[-1])
    return Histogram(histograms.weight.sum(axis=0) - histograms.weight, rest_low, rest_high, histograms.edges)


def _histograms(table: pl.DataFrame, index: np.ndarray, n_groups: int, edges: np.ndarray) -> Histogram:
    bins = edges.size - 1
    slot = index * bins + table[VALUE_BIN].to_numpy().astype(np.int64)
    weight = np.bincount(slot, table[WEIGHT].to_numpy(), n_groups * bins)
    low, high = np.full(n_groups * bins, np.inf), np.full(n_groups * bins, -np.inf)
    np.minimum.at(low, slot, table[BIN_LOW].to_numpy())
    np.maximum.at(high, slot, table[BIN_HIGH].to_numpy())
    shape = (n_groups, bins)
    return Histogram(weight.reshape(shape), low.reshape(shape), high.reshape(shape), edges)
