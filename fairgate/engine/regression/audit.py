"""A ``task: regression`` audit, step by step: count -> slicings -> adjudicate (the pipeline's KINDS table).

``count_regression`` applies the policy's attribute rules (missing values, declared values, cardinality) and
builds the regression cube (``cube``) plus a small table of residual sums per prediction decile for the residual
plots; ``slicings_regression`` computes every planned slicing with ``regression_slicing``; and
``adjudicate_regression`` turns the policy's rules (``catalogue``) into judged entries: the moment summaries with
the engine's simultaneous max-t families, the distances with the histogram bound plus the DKW band
(``distance_family``). All are judged together by ``fairgate.engine.adjudicate.judge_results`` (one Holm family
per audit), the same rules as a binary audit's.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from fairgate.document.result import AuditResult
from fairgate.engine.adjudicate import (
    ModelInfo,
    adjust_comparisons,
    document_header,
    group_entries,
    in_slicing_order,
    judge_results,
    kind_diagnostics,
    shared_comparison,
    verdict_of,
    with_context,
    without_binary_extras,
)
from fairgate.engine.cube import apply_missing_attribute_rules, as_lazy, check_cardinality
from fairgate.engine.groups import declared_for
from fairgate.engine.kinds import KindSteps
from fairgate.engine.planning import candidate_slicings, within_group_limit
from fairgate.engine.reference import attribute_entries, configured_reference
from fairgate.engine.regression.catalogue import distance_of
from fairgate.engine.regression.columns import BIN_HIGH, BIN_LOW, ROWS, WEIGHT, WEIGHT_SQ
from fairgate.engine.regression.cube import RegressionCube, build_regression_cube
from fairgate.engine.regression.distance_family import METHOD as DISTANCE_METHOD
from fairgate.engine.regression.distance_family import DistanceFamily
from fairgate.engine.regression.distribution import cdf_at_edges
from fairgate.engine.regression.moments import GROUP_METRICS, LOSSES
from fairgate.engine.regression.slicing import RegressionSlicing, prediction_histograms, regression_slicing
from fairgate.engine.stats import z_value
from fairgate.errors import MISSING_COLUMN, DataError
from fairgate.policy.core import Policy
from fairgate.policy.task import RegressionOptions

Slicing = tuple[str, ...]
Group = dict[str, str]
#: Prediction deciles of the residual plots (bins of the whole audit's predictions, the same for every group).
N_PREDICTION_BINS = 10
#: Points of the prediction CDFs kept in the document (edges of the fine grid, evenly spaced).
N_CDF_POINTS = 129
_BIN = "__prediction_bin"
_BINNED_SUMS = ("__n", "__w", "__w_sq", "__sum_p", "__sum_y", "__sum_r", "__sum_r_sq")
#: Which end of a group metric is worse for the group (None: it depends on the use, e.g. a salary or a risk).
_WORSE = {
    "mean_prediction": None,
    "mean_label": None,
    "mean_residual": "abs",
    "mean_absolute_error": "max",
    "mean_squared_error": "max",
    "root_mean_squared_error": "max",
    "r2_score": "min",
}


@dataclass(frozen=True)
class RegressionCounts:
    """The regression cube, the residual sums per prediction decile, and what the attribute rules left out."""

    cube: RegressionCube
    binned: pl.DataFrame  # attributes x prediction decile: rows, weights and sums of p, y, r, r^2
    bin_edges: list[float]  # the prediction deciles' edges (min, 9 deciles, max)
    excluded_missing: dict[str, int] = field(default_factory=dict)

    @property
    def n_rows(self) -> int:
        """The rows counted (after excluding missing attribute values)."""
        return self.cube.n_rows

    @property
    def weighted(self) -> bool:
        """Whether the rows carry weights other than 1."""
        cells = self.cube.cells
        return not (cells[WEIGHT].equals(cells[ROWS].cast(pl.Float64)) and cells[WEIGHT_SQ].equals(cells[WEIGHT]))


@dataclass(frozen=True)
class RegressionParts:
    """The computed slicings and the candidate slicings left out for having too many groups."""

    slicings: list[RegressionSlicing]
    skipped: list[dict[str, Any]]


def options_of(policy: Policy) -> RegressionOptions:
    """The policy's ``regression:`` section, or the defaults (the section is optional)."""
    return policy.regression or RegressionOptions()


# ----------------------------------------------------------------------------------------------- counting
def count_regression(rows: Any, policy: Policy, *, source: str = "the aligned rows") -> RegressionCounts:
    """The regression cube of the aligned rows (which carry the policy's column names).

    Raises
    ------
    DataError
        A missing column, non-finite predictions/labels/weights, an undeclared attribute value, too many values
        of an undeclared attribute, or no rows left after excluding missing attribute values.
    """
    lazy = as_lazy(rows)
    columns = policy.columns
    attributes = list(policy.attribute_names)
    present = lazy.collect_schema().names()
    for name in attributes:
        if name not in present:
            fix = "rename the column in the data or set its name in the policy"
            raise DataError(MISSING_COLUMN.format(column=name, source=source, present=present, fix=fix))
    check_cardinality(lazy, policy, source)
    counts = lazy.group_by(attributes).agg(pl.len().cast(pl.Int64).alias(ROWS)).collect()
    # Validates the declared values and counts the excluded rows.
    _, excluded = apply_missing_attribute_rules(counts, policy, source)
    kept = lazy.with_columns(pl.col(a).cast(pl.String) for a in attributes)
    for attribute in policy.sensitive_attributes:
        if attribute.missing == "unknown":
            kept = kept.with_columns(pl.col(attribute.name).fill_null(attribute.unknown_label))
        else:
            kept = kept.filter(pl.col(attribute.name).is_not_null())
    cube = build_regression_cube(
        kept,
        attributes=attributes,
        prediction=columns.y_pred,
        label=columns.y_true,
        weight=columns.weight,
        # The aligned rows carry the contract's ``id``; a frame handed to the engine, the policy's id column.
        row_id=next((c for c in (columns.id, "id") if c in present), None),
        options=options_of(policy),
        source=source,
    )
    binned, edges = _binned_residuals(kept, attributes, columns.y_pred, columns.y_true, columns.weight)
    return RegressionCounts(cube, binned, edges, excluded)


def _binned_residuals(
    rows: pl.LazyFrame, attributes: list[str], prediction: str, label: str, weight: str | None
) -> tuple[pl.DataFrame, list[float]]:
    """Sums per (attributes, prediction decile): a marginal table like the cube's, for the residual plots."""
    p = pl.col(prediction).cast(pl.Float64)
    y = pl.col(label).cast(pl.Float64)
    quantiles = [k / N_PREDICTION_BINS for k in range(N_PREDICTION_BINS + 1)]
    found = rows.select(p.quantile(q, interpolation="linear").alias(str(i)) for i, q in enumerate(quantiles))
    edges = [float(v) for v in found.collect().row(0)]
    inner = sorted(set(edges[1:-1]))
    # A row's bin counts the inner edges at or below its prediction (ties of many equal predictions share a bin).
    bin_of = pl.sum_horizontal([(p >= edge).cast(pl.Int16) for edge in inner]) if inner else pl.lit(0)
    # A column, not a literal: a literal's sum in an aggregation is not multiplied by the rows.
    weights = pl.col(weight).cast(pl.Float64) if weight else pl.lit(1.0)
    w = pl.col("__row_weight")
    residual = p - y
    binned = (
        rows.with_columns(bin_of.cast(pl.Int16).alias(_BIN), weights.alias("__row_weight"))
        .group_by([*attributes, _BIN])
        .agg(
            pl.len().cast(pl.Int64).alias("__n"),
            w.sum().alias("__w"),
            (w * w).sum().alias("__w_sq"),
            (w * p).sum().alias("__sum_p"),
            (w * y).sum().alias("__sum_y"),
            (w * residual).sum().alias("__sum_r"),
            (w * residual * residual).sum().alias("__sum_r_sq"),
        )
        .collect()
    )
    return binned, [edges[0], *inner, edges[-1]]


# ----------------------------------------------------------------------------------------------- slicings
def plan_regression_slicings(counts: RegressionCounts, policy: Policy) -> tuple[list[Slicing], list[dict[str, Any]]]:
    """The population, each attribute, the pairs (configured, else all) and comparable triples; and those left out.

    As the binary audit: a triple is audited when two of its groups reach ``min_group_size``; a slicing with more
    groups than ``limits.max_groups_per_slicing`` is left out and listed.
    """
    cells = counts.cube.cells
    candidates = candidate_slicings(counts.cube.attributes, policy, lambda keys: _effective_sizes(cells, tuple(keys)))
    return within_group_limit(candidates, policy, lambda slicing: cells.select(list(slicing)).n_unique())


def _effective_sizes(cells: pl.DataFrame, slicing: Slicing) -> np.ndarray:
    sums = cells.group_by(list(slicing)).agg(pl.col(WEIGHT, WEIGHT_SQ).sum())
    weight, weight_sq = sums[WEIGHT].to_numpy(), sums[WEIGHT_SQ].to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        sizes: np.ndarray = np.where(weight_sq > 0, weight**2 / weight_sq, 0.0)
    return sizes


def slicings_regression(counts: RegressionCounts, policy: Policy) -> RegressionParts:
    """Every planned slicing of the cube, with the policy's bootstrap, seed, level and reference groups."""
    planned, skipped = plan_regression_slicings(counts, policy)

    def compute(slicing: Slicing) -> RegressionSlicing:
        return regression_slicing(
            counts.cube,
            slicing,
            n_bootstrap=policy.statistics.n_bootstrap,
            seed=policy.statistics.seed,
            confidence_level=policy.reporting.confidence_level,
            reference=configured_reference(slicing, policy),
            min_group_size=policy.intersectional_analysis.min_group_size,
            declared=declared_for(policy, slicing),
        )

    # Slicings are independent (each draws its own replicates) and numpy releases the GIL: two threads.
    with ThreadPoolExecutor(max_workers=2) as pool:
        return RegressionParts(list(pool.map(compute, planned)), skipped)


# ----------------------------------------------------------------------------------------------- adjudication
def adjudicate_regression(
    counts: RegressionCounts,
    parts: RegressionParts,
    policy: Policy,
    *,
    model: ModelInfo | None = None,
    run_id: str | None = None,
    context: dict[str, Any] | None = None,
) -> AuditResult:
    """Judge the policy's regression rules and assemble the regression document."""
    model = model or ModelInfo()
    slicings = in_slicing_order(parts.slicings)
    distances = {tuple(p.slicing): _distances(counts, p) for p in slicings if p.slicing}
    comparisons = [_comparison(p, c) for p in slicings for c in p.comparisons]
    adjust_comparisons(comparisons, policy.statistics.significance_level)
    entries = [e for p in slicings if p.slicing for e in _entries(p, distances[tuple(p.slicing)], counts, policy)]
    results = judge_results(entries, policy)
    verdict, detail = verdict_of(results, policy)
    document: dict[str, Any] = {
        **document_header(counts.n_rows, counts.weighted, policy, model, run_id, verdict),
        "attributes": _attributes(counts, slicings),
        "slicings": [list(p.slicing) for p in slicings],
        "groups": group_entries(slicings),
        "comparisons": comparisons,
        "summaries": [s for p in slicings for s in _summaries(p)],
        "results": results,
        "verdict_detail": detail,
        "diagnostics": kind_diagnostics(
            slicings, policy, excluded_missing=counts.excluded_missing, skipped=parts.skipped
        ),
        **without_binary_extras(),
        "regression": _block(counts, slicings, distances, policy),
    }
    return with_context(document, context)


def _entries(
    part: RegressionSlicing, distances: list[dict[str, Any]], counts: RegressionCounts, policy: Policy
) -> list[dict[str, Any]]:
    """One judged entry per (policy rule, slicing with attributes)."""
    summaries = {s["metric"]: s for s in part.summaries}
    entries = []
    for rule in policy.metrics:
        distance = distance_of(rule.name)
        if distance is not None:
            entries.append(_distance_entry(rule.name, part, distances, distance, counts, policy))
            continue
        entry: dict[str, Any] = {
            "metric": rule.name,
            "slicing": list(part.slicing),
            "n_groups_judged": int(sum(part.sufficient)),
            "worst_group": None,
            "best_group": None,
        }
        summary = summaries.get(rule.name)
        if summary is None or summary["_family"] is None:
            entry.update(value=summary["value"] if summary else None, ci_low=None, ci_high=None, _family=None)
            entry["_summary"] = "ratio" if rule.name.endswith("_ratio") else "difference"
            entry["reason"] = _why_not(rule.name, part, summary)
            entries.append(entry)
            continue
        entry.update(
            value=summary["value"],
            ci_low=summary["ci_low"],
            ci_high=summary["ci_high"],
            _family=summary["_family"],
            _summary=summary["_summary"],
            n_groups_judged=len(summary["groups"]),
            interval_method=_moment_method(summary),
        )
        entry["worst_group"], entry["best_group"] = _worst_and_best(rule.name, part, summary["groups"])
        entries.append(entry)
    return entries


def _moment_method(summary: dict[str, Any]) -> str:
    interval: str = summary["interval"]
    return f"{interval}; replicates from a stratified cluster bootstrap over the cube's hash buckets"


def _why_not(name: str, part: RegressionSlicing, summary: dict[str, Any] | None) -> str:
    judged = int(sum(part.sufficient))
    if judged < 2 and not name.startswith("worst_group_"):
        return f"fewer than 2 groups reach min_group_size ({judged} judged): nothing to compare"
    if judged < 1:
        return "no group reaches min_group_size: nothing to judge"
    if summary is None and name.endswith("_ratio"):
        return f"{name} is undefined: a judged group's value is 0 or negative (a ratio needs positive values)"
    if summary is None:
        return f"{name} is undefined in a judged group (e.g. R^2 of a group whose labels are all equal)"
    return "the bootstrap replicates are degenerate (no spread), so no valid interval exists"


def _worst_and_best(name: str, part: RegressionSlicing, compared: list[Group]) -> tuple[Group | None, Group | None]:
    """The worst- and best-off groups on the rule's group metric, where a direction is known."""
    base = name.removeprefix("worst_group_").removesuffix("_difference").removesuffix("_ratio")
    worse = _WORSE.get(base)
    if worse is None:
        return None, None
    values = np.array([part.metrics[base]["value"][part.groups.index(g)] for g in compared], dtype=float)  # None -> nan
    if worse == "abs":
        values = np.abs(values)
    if not np.isfinite(values).any():
        return None, None
    high, low = compared[int(np.nanargmax(values))], compared[int(np.nanargmin(values))]
    return (low, high) if worse == "min" else (high, low)


def _distance_entry(
    name: str,
    part: RegressionSlicing,
    distances: list[dict[str, Any]],
    distance: tuple[str, str],
    counts: RegressionCounts,
    policy: Policy,
) -> dict[str, Any]:
    """The largest distance of a judged group's predictions from the rest's (or the reference's)."""
    kind, against = distance
    rows = [d for d in distances if d["against"] == against and d["sufficient"] and d[kind] is not None]
    entry: dict[str, Any] = {
        "metric": name,
        "slicing": list(part.slicing),
        "n_groups_judged": len(rows),
        "worst_group": None,
        "best_group": None,
        "_summary": "difference",
        "_family": None,
        "interval_method": DISTANCE_METHOD,
    }
    if not rows:
        entry.update(value=None, ci_low=None, ci_high=None)
        entry["reason"] = (
            "no group can be compared: fewer than 2 groups, or the reference group is under min_group_size"
            if against == "reference"
            else "fewer than 2 groups in the slicing: nothing to compare"
        )
        return entry
    value = np.array([d[kind] for d in rows])
    short = kind.removesuffix("_distance")  # the engine's keys: ks_error_bound, wasserstein_error_bound
    bound = np.array([d[f"{short}_error_bound"] for d in rows])
    length = 1.0 if kind == "ks_distance" else _support_length(counts, policy)
    family = DistanceFamily.of(
        value - bound,
        value + bound,
        np.array([d["_n"] for d in rows]),
        np.array([d["_n_other"] for d in rows]),
        length=length,
    )
    low, high = family.bounds(family.critical(policy.reporting.confidence_level))
    entry.update(value=float(value.max()), ci_low=low, ci_high=high, _family=family)
    entry["worst_group"] = rows[int(np.argmax(value))]["group"]
    entry["best_group"] = rows[int(np.argmin(value))]["group"]
    return entry


def _support_length(counts: RegressionCounts, policy: Policy) -> float:
    """The length of the range assumed to hold every prediction: the fixed histogram range, else the data's."""
    grid = counts.cube.grid
    if options_of(policy).histogram_range is not None:
        return float(grid.high - grid.low)
    predictions = counts.cube.predictions
    low = predictions.filter(pl.col(WEIGHT) > 0)[BIN_LOW].min()
    high = predictions.filter(pl.col(WEIGHT) > 0)[BIN_HIGH].max()
    return float(high - low) if isinstance(low, float) and isinstance(high, float) else float(grid.high - grid.low)


def _distances(counts: RegressionCounts, part: RegressionSlicing) -> list[dict[str, Any]]:
    """The engine's distances with the slicing, where KS is reached, and each side's effective size."""
    cube = counts.cube
    _, histograms = prediction_histograms(cube, part.slicing, part.groups)
    cdf = cdf_at_edges(histograms.weight)
    totals = histograms.weight.sum(axis=0)
    weight, weight_sq = _group_weights(cube, part)
    ref = part.groups.index(part.reference) if part.reference in part.groups else 0
    out = []
    for d in part.distribution:
        g = part.groups.index(d["group"])
        if d["against"] == "rest":
            other = cdf_at_edges(totals - histograms.weight[g])
            w_other, sq_other = weight.sum() - weight[g], weight_sq.sum() - weight_sq[g]
        else:
            other = cdf[ref]
            w_other, sq_other = weight[ref], weight_sq[ref]
        gap = np.abs(cdf[g] - other)
        at = float(cube.grid.edges[int(np.nanargmax(gap))]) if np.isfinite(gap).any() else None
        out.append(
            {
                **d,
                "slicing": list(part.slicing),
                "ks_at": at,
                "_n": _kish(weight[g], weight_sq[g]),
                "_n_other": _kish(w_other, sq_other),
            }
        )
    return out


def _group_weights(cube: RegressionCube, part: RegressionSlicing) -> tuple[np.ndarray, np.ndarray]:
    keys = list(part.slicing)
    sums = cube.cells.group_by(keys).agg(pl.col(WEIGHT, WEIGHT_SQ).sum())
    order = pl.DataFrame(part.groups, schema=dict.fromkeys(keys, pl.String)).join(
        sums, on=keys, how="left", maintain_order="left"
    )
    return order[WEIGHT].fill_null(0.0).to_numpy(), order[WEIGHT_SQ].fill_null(0.0).to_numpy()


def _kish(weight: float, weight_sq: float) -> float:
    return float(weight**2 / weight_sq) if weight_sq > 0 else 0.0


# ----------------------------------------------------------------------------------------------- the document
def _attributes(counts: RegressionCounts, slicings: list[RegressionSlicing]) -> list[dict[str, Any]]:
    return attribute_entries(counts.cube.attributes, slicings, counts.excluded_missing)


def _comparison(part: RegressionSlicing, c: dict[str, Any]) -> dict[str, Any]:
    """An engine comparison in the shared shape (``Comparison`` of the document)."""
    method = "bootstrap percentile interval; normal p-value from the bootstrap standard error"
    return shared_comparison(c, part.slicing, method, sufficient=True)


def _summaries(part: RegressionSlicing) -> list[dict[str, Any]]:
    """Difference and ratio of each group metric in the shared ``Summary`` shape."""
    if not part.slicing:
        return []
    found = {s["metric"]: s for s in part.summaries}
    out = []
    for name in GROUP_METRICS:
        difference, ratio = found.get(f"{name}_difference"), found.get(f"{name}_ratio")
        if difference is None:
            continue
        values = np.array([part.metrics[name]["value"][part.groups.index(g)] for g in difference["groups"]], float)
        out.append(
            {
                "metric": name,
                "slicing": list(part.slicing),
                "difference": difference["value"],
                "difference_ci_low": difference["ci_low"],
                "difference_ci_high": difference["ci_high"],
                "ratio": ratio["value"] if ratio else None,
                "ratio_ci_low": ratio["ci_low"] if ratio else None,
                "ratio_ci_high": ratio["ci_high"] if ratio else None,
                "max_group": difference["groups"][int(np.nanargmax(values))],
                "min_group": difference["groups"][int(np.nanargmin(values))],
                "n_groups_judged": len(difference["groups"]),
                "interval_method": _moment_method(difference),
            }
        )
    return out


def _block(
    counts: RegressionCounts,
    slicings: list[RegressionSlicing],
    distances: dict[Slicing, list[dict[str, Any]]],
    policy: Policy,
) -> dict[str, Any]:
    """The ``regression`` block: grid, residual bins and prediction CDFs per group, worst losses, distances."""
    cube = counts.cube
    confidence = policy.reporting.confidence_level
    points = np.unique(np.linspace(0, cube.grid.bins, N_CDF_POINTS).round().astype(int))
    return {
        "metrics": list(GROUP_METRICS),
        "losses": list(LOSSES),
        "residual": "prediction - label",
        "grid": {
            "low": cube.grid.low,
            "high": cube.grid.high,
            "bins": cube.grid.bins,
            "width": cube.grid.width,
            "range_from": "histogram_range" if options_of(policy).histogram_range else "data",
        },
        "bootstrap_buckets": cube.buckets,
        "prediction_bins": counts.bin_edges,
        "cdf_points": [float(x) for x in cube.grid.edges[points]],
        "groups": [g for p in slicings for g in _block_groups(counts, p, points, z_value(confidence))],
        "worst_group_losses": [
            {
                "metric": s["metric"],
                "slicing": list(p.slicing),
                "value": s["value"],
                "ci_low": s["ci_low"],
                "ci_high": s["ci_high"],
                "group": s["group"],
                "n_groups_judged": len(s["groups"]),
                "interval_method": _moment_method(s),
            }
            for p in slicings
            for s in p.summaries
            if s["metric"].startswith("worst_group_")
        ],
        "distances": [
            {k: v for k, v in d.items() if not k.startswith("_")}
            for p in slicings
            for d in distances.get(p.slicing, [])
        ],
        "distance_method": DISTANCE_METHOD,
    }


def _block_groups(
    counts: RegressionCounts, part: RegressionSlicing, points: np.ndarray, z: float
) -> list[dict[str, Any]]:
    """Per group: the residual by prediction decile (mean and normal interval) and the prediction CDF."""
    _, histograms = prediction_histograms(counts.cube, part.slicing, part.groups)
    cdf = cdf_at_edges(histograms.weight)[:, points]
    keys = list(part.slicing)
    binned = counts.binned
    if keys:
        binned = binned.group_by([*keys, _BIN]).agg(pl.col(_BINNED_SUMS).sum())
    else:
        binned = binned.group_by(_BIN).agg(pl.col(_BINNED_SUMS).sum())
    out = []
    for g, group in enumerate(part.groups):
        rows = binned.filter(*[pl.col(k) == v for k, v in group.items()]) if group else binned
        out.append(
            {
                "slicing": keys,
                "group": group,
                "binned": [_residual_bin(r, z) for r in rows.sort(_BIN).iter_rows(named=True)],
                "cdf": [float(v) if np.isfinite(v) else None for v in cdf[g]],
            }
        )
    return out


def _residual_bin(row: dict[str, Any], z: float) -> dict[str, Any]:
    """One prediction decile of one group: means and the mean residual's normal interval (Kish size)."""
    w, w_sq = row["__w"], row["__w_sq"]
    n = w * w / w_sq if w_sq > 0 else 0.0
    mean_r = row["__sum_r"] / w if w > 0 else None
    low = high = None
    if mean_r is not None and n > 1:
        variance = max(row["__sum_r_sq"] / w - mean_r**2, 0.0) * n / (n - 1)
        half = z * (variance / n) ** 0.5
        low, high = mean_r - half, mean_r + half
    return {
        "bin": int(row[_BIN]),
        "n": n,
        "mean_prediction": row["__sum_p"] / w if w > 0 else None,
        "mean_label": row["__sum_y"] / w if w > 0 else None,
        "mean_residual": mean_r,
        "ci_low": low,
        "ci_high": high,
    }


#: The kind registry's entry point (fairgate/engine/kinds.py).
STEPS = KindSteps(count=count_regression, slicings=slicings_regression, adjudicate=adjudicate_regression)
