"""One slicing of a ranking audit (an attribute, a pair, ..., or the whole population) from the cube.

Per group: every metric of ``metrics`` with a percentile interval from the cluster bootstrap of lists
(``bootstrap``); per group against the reference: the signed difference and the ratio with intervals and a
p-value; across groups: the range (max - min) and ratio (min / max) of the top-k rate (every k), the mean
exposure and the exposure per unit of relevance, each with simultaneous max-t intervals over group pairs
(``fairgate.engine.stats.pair_family``, as every task's summaries: a percentile interval of max - min
undercovers), and the pairwise family the gate tests; and per group the exposure curve over rank positions.
Judging these against a policy is adjudication's job, not this module's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import polars as pl
from scipy import special

from fairgate.engine.bootstrap import slicing_seed
from fairgate.engine.groups import frame_groups
from fairgate.engine.labels import reason_labels
from fairgate.engine.ranking.bootstrap import cluster_replicates
from fairgate.engine.ranking.columns import BUCKET, EXPOSURE, POSITION, ROWS, WEIGHT, WEIGHT_SQ
from fairgate.engine.ranking.cube import RankingCube
from fairgate.engine.ranking.metrics import group_metrics, metric_names, top_rate
from fairgate.engine.reference import reference_index
from fairgate.engine.stats import (
    Component,
    PairFamily,
    finite_list,
    finite_or_none,
    pair_family,
    percentile_interval,
    replicate_se,
)
from fairgate.engine.text import ValueLabels
from fairgate.policy.ranking import RankingOptions

Slicing = tuple[str, ...]
Group = dict[str, str]
SummaryKind = Literal["difference", "ratio"]

#: The judged summaries: name -> (per-group metric, summary kind). ``top_k_rate`` is the top-k rate at the
#: policy's judged k (the document also carries every other k, with its ``k``).
SUMMARIES: dict[str, tuple[str, SummaryKind]] = {
    "top_k_rate_difference": ("top_k_rate", "difference"),
    "top_k_rate_ratio": ("top_k_rate", "ratio"),
    "exposure_difference": ("mean_exposure", "difference"),
    "exposure_ratio": ("mean_exposure", "ratio"),
    "exposure_relevance_difference": ("exposure_per_relevance", "difference"),
    "exposure_relevance_ratio": ("exposure_per_relevance", "ratio"),
}


@dataclass
class RankingSlicing:
    """Everything computed for one slicing.

    Plain data (lists, None for undefined) except the summaries' ``_family`` (the pairwise family the gate
    tests, dropped before the document is written).
    """

    slicing: Slicing
    groups: list[Group]
    n: list[float]  # Kish effective sizes (the row counts when unweighted)
    rows: list[int]
    lists: list[int]  # buckets of lists the group appears in (its resampling units)
    sufficient: list[bool]
    reference: Group | None
    metrics: dict[str, dict[str, list[float | None]]]  # metric -> value / ci_low / ci_high -> per group
    comparisons: list[dict[str, Any]]
    summaries: list[dict[str, Any]]
    curves: list[dict[str, Any]] = field(default_factory=list)

    def summary(self, name: str, k: int | None = None) -> dict[str, Any] | None:
        """The summary called ``name`` (at cut-off ``k`` for the top-k summaries), or None."""
        for entry in self.summaries:
            if entry["metric"] == name and entry.get("k") == k:
                return entry
        return None


def ranking_slicing(
    cube: RankingCube,
    slicing: Slicing,
    *,
    n_bootstrap: int = 1000,
    seed: int = 0,
    confidence_level: float = 0.95,
    reference: Group | None = None,
    min_group_size: float = 30,
    declared: list[str] | None = None,
    labels: ValueLabels | None = None,
) -> RankingSlicing:
    """All ranking metrics of one slicing, with ``n_bootstrap`` replicates at ``confidence_level``.

    ``reference`` is the reference group (absent or not present: the largest group). Groups under
    ``min_group_size`` (effective size) are reported but left out of comparisons and summaries. ``declared``
    (one-attribute slicings) adds declared values without rows as groups of size 0. ``labels``: the policy's value
    labels, for the groups a reason names.

    >>> from fairgate.engine.ranking.cube import build_ranking_cube
    >>> frame = pl.DataFrame({"q": [1, 1, 2, 2], "r": [1, 2, 1, 2], "y": [1.0, 1, 1, 1], "g": ["a", "b", "a", "b"]})
    >>> cube = build_ranking_cube(frame, attributes=["g"], list_id="q", rank="r", relevance="y")
    >>> part = ranking_slicing(cube, ("g",), n_bootstrap=50, min_group_size=1)
    >>> [round(v, 3) for v in part.metrics["mean_exposure"]["value"]]
    [1.0, 0.631]
    """
    options = cube.options
    groups, cell_group = frame_groups(cube.cells, slicing, declared)
    n_groups = len(groups)
    bucket_sums, bucket_rows, group_buckets = _bucket_sums(cube, cell_group, n_groups)
    point = bucket_sums.sum(axis=0)
    replicates = cluster_replicates(bucket_sums, bucket_rows, n_bootstrap, slicing_seed(seed, ("ranking", *slicing)))
    n, rows = _group_sizes(cube, cell_group, point[:, 0], n_groups)
    eligible = n >= min_group_size
    ref = reference_index(groups, reference, n)

    values = group_metrics(point, options)
    reps = group_metrics(replicates, options)
    # A group in a single bucket of lists cannot be resampled: no interval rather than one of width 0.
    resamplable = group_buckets >= 2
    metrics = _metric_intervals(values, reps, resamplable, options, confidence_level)

    with_groups = bool(slicing)
    return RankingSlicing(
        slicing=slicing,
        groups=groups,
        n=n.tolist(),
        rows=[int(r) for r in rows],
        lists=[int(b) for b in group_buckets],
        sufficient=eligible.tolist(),
        reference=groups[ref] if with_groups else None,
        metrics=metrics,
        comparisons=_comparisons(groups, values, reps, ref, eligible, confidence_level, options) if with_groups else [],
        summaries=_summaries(
            groups, values, reps, eligible & resamplable, confidence_level, options, group_buckets, labels
        )
        if with_groups
        else [],
        curves=_curves(cube, slicing, groups),
    )


def _bucket_sums(cube: RankingCube, cell_group: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sums per (bucket, group) ``(buckets, G, m)``, rows per bucket, and the buckets each group appears in."""
    buckets = cube.options.bootstrap_buckets
    slot = cube.cells[BUCKET].to_numpy().astype(np.int64) * n_groups + cell_group
    size = buckets * n_groups
    sums = np.stack([np.bincount(slot, cube.cells[c].to_numpy(), size) for c in cube.sums], axis=-1)
    rows = np.bincount(slot, cube.cells[ROWS].to_numpy().astype(float), size).reshape(buckets, n_groups)
    return sums.reshape(buckets, n_groups, len(cube.sums)), rows.sum(axis=1), (rows > 0).sum(axis=0)


def _comparisons(
    groups: list[Group],
    values: dict[str, np.ndarray],
    reps: dict[str, np.ndarray],
    ref: int,
    eligible: np.ndarray,
    level: float,
    options: Any,
) -> list[dict[str, Any]]:
    """Each eligible group against the reference: difference and ratio with bootstrap intervals and a p-value."""
    out: list[dict[str, Any]] = []
    if not eligible[ref]:
        return out
    for name in metric_names(options):
        if name == "population_share":
            continue
        difference = values[name] - values[name][ref]
        rep_difference = reps[name] - reps[name][:, ref : ref + 1]
        low, high = percentile_interval(rep_difference, level)
        se = replicate_se(rep_difference)
        with np.errstate(divide="ignore", invalid="ignore"):
            p_value = np.where(se > 0, 2.0 * special.ndtr(-np.abs(difference) / se), np.nan)
            ratio = np.where(values[name][ref] > 0, values[name] / values[name][ref], np.nan)
            rep_ratio = reps[name] / reps[name][:, ref : ref + 1]
        ratio_low, ratio_high = percentile_interval(np.where(np.isfinite(rep_ratio), rep_ratio, np.nan), level)
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


def _summaries(
    groups: list[Group],
    values: dict[str, np.ndarray],
    reps: dict[str, np.ndarray],
    eligible: np.ndarray,
    level: float,
    options: Any,
    units: np.ndarray,
    labels: ValueLabels | None = None,
) -> list[dict[str, Any]]:
    """Range and ratio of the top-k rate (each k), mean exposure and exposure per relevance over eligible groups."""
    out: list[dict[str, Any]] = []
    for name, (base, kind) in SUMMARIES.items():
        cutoffs: list[int | None] = list(options.top_k) if base == "top_k_rate" else [None]
        for k in cutoffs:
            column = top_rate(k) if k is not None else base
            entry = _summary(name, kind, values[column], reps[column], eligible, groups, level, units, labels)
            if k is not None:
                entry["k"] = k
            out.append(entry)
    return out


def _group_sizes(
    cube: RankingCube, cell_group: np.ndarray, weight: np.ndarray, n_groups: int
) -> tuple[np.ndarray, np.ndarray]:
    """Each group's Kish effective size (from its summed weights and squared weights) and its row count."""
    weight_sq = np.bincount(cell_group, cube.cells[WEIGHT_SQ].to_numpy(), n_groups)
    with np.errstate(divide="ignore", invalid="ignore"):
        n = np.where(weight_sq > 0, weight**2 / weight_sq, 0.0)
    rows = np.bincount(cell_group, cube.cells[ROWS].to_numpy().astype(float), n_groups)
    return n, rows


def _metric_intervals(
    values: dict[str, np.ndarray],
    reps: dict[str, np.ndarray],
    resamplable: np.ndarray,
    options: RankingOptions,
    level: float,
) -> dict[str, dict[str, list[float | None]]]:
    """Each group metric's values with percentile intervals (none for a group that cannot be resampled)."""
    metrics: dict[str, dict[str, list[float | None]]] = {}
    for name in metric_names(options):
        low, high = percentile_interval(np.where(resamplable, reps[name], np.nan), level)
        metrics[name] = {"value": finite_list(values[name]), "ci_low": finite_list(low), "ci_high": finite_list(high)}
    return metrics


def _left_out_entry(
    value: np.ndarray,
    eligible: np.ndarray,
    left_out: list[int],
    groups: list[Group],
    kind: SummaryKind,
    labels: ValueLabels | None = None,
) -> dict[str, Any]:
    """What a summary reports when eligible groups have no usable value.

    A ratio of 0 is reported but not judged (its log-scale interval does not exist); otherwise the groups for
    which the metric is undefined are named.
    """
    zero = [g for g in left_out if kind == "ratio" and value[g] == 0]
    if zero and len(zero) == len(left_out) and np.nanmax(value[np.flatnonzero(eligible)]) > 0:
        return {
            "value": 0.0,
            "worst_group": groups[zero[0]],
            "best_group": groups[int(np.flatnonzero(eligible)[np.nanargmax(value[eligible])])],
            "reason": f"the value is 0 for {reason_labels([groups[g] for g in zero], labels)}: the ratio is 0, but "
            "it has no interval (the simultaneous intervals of a ratio are built on the log scale); judge the "
            "difference instead",
        }
    return {
        "reason": f"the metric is undefined for group(s) {reason_labels([groups[g] for g in left_out], labels)} (no "
        "relevance or no items in the data); a summary over the other groups would hide them"
    }


def _summary(
    name: str,
    kind: SummaryKind,
    value: np.ndarray,
    rep: np.ndarray,
    eligible: np.ndarray,
    groups: list[Group],
    level: float,
    units: np.ndarray,
    labels: ValueLabels | None = None,
) -> dict[str, Any]:
    """One summary over the eligible groups with a defined value: point, simultaneous interval, family.

    ``units``: the buckets of lists each group appears in; the pair standard errors come from resampling them, so
    the family's tails are Student-t with (the fewest of the judged groups' units - 1) degrees of freedom.
    """
    chosen = np.flatnonzero(eligible & np.isfinite(value) & ((value > 0) if kind == "ratio" else True))
    entry: dict[str, Any] = {
        "metric": name,
        "summary": kind,
        "value": None,
        "ci_low": None,
        "ci_high": None,
        "worst_group": None,
        "best_group": None,
        "n_groups_judged": int(chosen.size),
        "excluded_groups": [groups[g] for g in np.flatnonzero(~eligible)],
        "interval_method": "none",
        "_family": None,
        "_summary": kind,
    }
    left_out = sorted(set(np.flatnonzero(eligible).tolist()) - set(chosen.tolist()))
    if left_out:
        entry.update(_left_out_entry(value, eligible, left_out, groups, kind, labels))
        return entry
    if chosen.size < 2:
        entry["reason"] = "fewer than two groups reach min_group_size in enough lists; nothing to compare"
        return entry
    v, r = value[chosen], rep[:, chosen]
    df = max(1.0, float(units[chosen].min()) - 1.0)
    worst, best = int(np.argmin(v)), int(np.argmax(v))
    entry["worst_group"], entry["best_group"] = groups[chosen[worst]], groups[chosen[best]]
    if kind == "difference":
        entry["value"] = float(v.max() - v.min())
        family = pair_family([Component(v, r)], df=df)
    else:
        entry["value"] = float(v.min() / v.max())
        with np.errstate(divide="ignore", invalid="ignore"):
            family = pair_family([Component(np.log(v), np.where(r > 0, np.log(r), np.nan))], df=df)
    if family is None:
        entry["reason"] = "no interval: some pair of groups does not vary over the resampled lists (too few lists)"
        return entry
    low, high = family.bounds(family.critical(level))
    if kind == "ratio":  # min/max = exp(-(range of log values)): the log range's interval mapped back
        low, high = float(np.exp(-high)), float(np.exp(-low))
    entry["ci_low"], entry["ci_high"] = finite_or_none(low), finite_or_none(high)
    entry["interval_method"] = _method(family, kind)
    entry["_family"] = family
    return entry


def _method(family: PairFamily, kind: SummaryKind) -> str:
    scale = " of log values" if kind == "ratio" else ""
    critical = "bootstrap max-t" if family.null is not None else "studentized range"
    return f"simultaneous intervals over group pairs{scale} ({critical}; cluster bootstrap of lists)"


def _curves(cube: RankingCube, slicing: Slicing, groups: list[Group]) -> list[dict[str, Any]]:
    """Per group: its share of the items at each position 1..P (P + 1 pools the rest) and cumulative exposure."""
    keys = list(slicing)
    table = cube.positions.group_by([*keys, POSITION]).agg(pl.col(WEIGHT, EXPOSURE).sum())
    positions = cube.options.curve_positions + 1
    lookup = {tuple(g[k] for k in keys): i for i, g in enumerate(groups)}
    index = np.array([lookup[tuple(str(v) for v in row)] for row in table.select(keys).iter_rows()], dtype=np.int64)
    if not keys:
        index = np.zeros(table.height, dtype=np.int64)
    slot = index * positions + table[POSITION].to_numpy().astype(np.int64) - 1
    size = len(groups) * positions
    weight = np.bincount(slot, table[WEIGHT].to_numpy(), size).reshape(len(groups), positions)
    exposure = np.bincount(slot, table[EXPOSURE].to_numpy(), size).reshape(len(groups), positions)
    total_weight, total_exposure = weight.sum(axis=0), exposure.sum()
    out = []
    for g, group in enumerate(groups):
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(total_weight > 0, weight[g] / total_weight, np.nan)
        cumulative = np.cumsum(exposure[g]) / total_exposure if total_exposure > 0 else np.full(positions, np.nan)
        out.append(
            {
                "group": group,
                "positions": list(range(1, positions + 1)),
                "share_at_position": finite_list(share),
                "cumulative_exposure_share": finite_list(cumulative),
                "items": finite_list(weight[g]),
            }
        )
    return out
