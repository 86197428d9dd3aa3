"""One binary slicing of the audit (an attribute, a pair, a triple, or the whole population) as a marginal of the cube.

``compute_slicing`` is the unit of work a metric task runs: group values with intervals, comparisons with
the reference group, the difference/ratio summaries of every group metric, and the policy metrics' values
with bootstrap intervals. Judging them (thresholds, verdict, multiple-testing adjustment) is adjudication's job.
Which slicings to compute is planning's (engine/planning.py, re-exported here); the summaries and policy
metrics' values are engine/summaries.py's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np

from fairgate.engine import auc as auc_module
from fairgate.engine.auc_histogram import error_bounds
from fairgate.engine.bootstrap import draw_counts, slicing_seed
from fairgate.engine.collection import paused_collection
from fairgate.engine.comparison_families import adjust_comparisons
from fairgate.engine.cube import ROWS, SCORE_SUM, WEIGHT, Cube
from fairgate.engine.groups import declared_for
from fairgate.engine.metrics import (
    GroupCounts,
    Rate,
    count_metrics,
    policy_metric,
)
from fairgate.engine.planning import (
    GROUP,
    candidate_slicings,
    plan_slicings,
    skipped_slicings,
    slicing_group_count,
    within_group_limit,
)
from fairgate.engine.reference import configured_reference, reference_index
from fairgate.engine.replicate_sources import replicate_source
from fairgate.engine.slicing_cells import flat_cells, slicing_groups, summing_matrix
from fairgate.engine.stats import (
    hanley_mcneil_se,
    katz_ratio_interval,
    newcombe_interval,
    percentile_intervals,
    two_proportion_p_value,
    wilson_interval,
    z_value,
)
from fairgate.engine.summaries import MetricValues, as_number, group_summaries, judged_bases, policy_results
from fairgate.engine.text import policy_labels
from fairgate.policy.core import Policy

__all__ = [
    "GROUP",
    "MetricValues",
    "SlicingResult",
    "bootstrap_group_counts",
    "candidate_slicings",
    "compute_slicing",
    "plan_slicings",
    "reference_group_index",
    "skipped_slicings",
    "slicing_group_count",
    "slicing_groups",
    "wants_auc",
    "within_group_limit",
]

Slicing = tuple[str, ...]
Group = dict[str, str]


@dataclass
class SlicingResult:
    """Everything computed for one slicing. Plain data: picklable, so Prefect tasks can return it."""

    slicing: Slicing
    groups: list[Group]
    n: list[float]
    rows: list[int]
    sufficient: list[bool]
    reference: Group | None
    metrics: dict[str, dict[str, list[float | None]]]  # metric -> value/ci_low/ci_high -> per group
    comparisons: list[dict[str, Any]]
    summaries: list[dict[str, Any]]
    results: list[dict[str, Any]]
    counts: dict[str, list[float]]  # tp/fp/tn/fn per group, for diagnostics
    roc: list[dict[str, Any]] = field(default_factory=list)
    calibration: list[dict[str, Any]] = field(default_factory=list)
    # The significance level the comparisons' Benjamini-Hochberg families were adjusted at (None: not adjusted).
    adjusted_at: float | None = None


@paused_collection
def compute_slicing(cube: Cube, slicing: Slicing, policy: Policy) -> SlicingResult:
    """All metrics of one slicing from the cube, with ``statistics.n_bootstrap`` bootstrap replicates."""
    stats = policy.statistics
    declared = declared_for(policy, slicing)
    groups_frame, group_index = slicing_groups(cube, slicing, declared)
    groups = [{k: str(v) for k, v in row.items() if k != GROUP} for row in groups_frame.iter_rows(named=True)]
    n_groups = len(groups)
    point, boot = bootstrap_group_counts(  # [weights] the slicing picks per-row or per-person squared weights
        cube,
        group_index,
        n_groups,
        stats.n_bootstrap,
        slicing_seed(stats.seed, slicing),
        slicing,
        source=replicate_source(cube, slicing, policy),
    )
    n = point.n_effective  # [weights] Kish effective group sizes: equal to point.n when unweighted
    rows = np.bincount(group_index, weights=cube.cells[ROWS].to_numpy(), minlength=n_groups)
    sufficient = n >= policy.intersectional_analysis.min_group_size
    z = z_value(policy.reporting.confidence_level)
    level = policy.reporting.confidence_level

    values = _count_metric_values(cube, point, boot, z, level, judged_bases(slicing, policy))
    roc_curves: list[dict[str, Any]] = []
    auc_bound: np.ndarray | None = None
    if cube.auc_method is not None and wants_auc(slicing, policy):
        values["roc_auc"], roc_curves, auc_bound = _auc_values(cube, slicing, groups, point, policy, z)

    reference_index = reference_group_index(groups, slicing, policy, point.n)  # [weights] largest expected size
    eligible = sufficient.copy()
    result = SlicingResult(
        slicing=slicing,
        groups=groups,
        n=n.tolist(),
        rows=[int(r) for r in rows],
        sufficient=sufficient.tolist(),
        reference=groups[reference_index] if reference_index is not None else None,
        metrics={
            name: {"value": _list(v.value), "ci_low": _list(v.ci_low), "ci_high": _list(v.ci_high)}
            | ({"error_bound": _list(auc_bound)} if name == "roc_auc" and auc_bound is not None else {})
            for name, v in values.items()
        },
        comparisons=_comparisons(slicing, groups, values, reference_index, eligible, z, level),
        summaries=group_summaries(slicing, groups, values, eligible, level, stats.min_events, policy_labels(policy)),
        results=policy_results(slicing, groups, values, eligible, policy, level),
        counts={k: getattr(point, k).tolist() for k in ("tp", "fp", "tn", "fn")},
        roc=roc_curves,
        calibration=_calibration_curves(slicing, groups, point, cube) if len(slicing) <= 1 else [],
        adjusted_at=stats.significance_level,
    )
    adjust_comparisons(result.comparisons, stats.significance_level)  # here, beside the other slicings
    return result


def _count_metric_values(
    cube: Cube, point: GroupCounts, boot: GroupCounts, z: float, level: float, judged: frozenset[str]
) -> dict[str, MetricValues]:
    """Every group metric computed from counts: value, interval (Wilson for rates, else bootstrap) and replicates.

    A rate's replicates are read only by the families and standard errors of the policy metrics judged on it
    (``judged``); the other rates get none (an empty replicate axis).
    """
    values: dict[str, MetricValues] = {}
    rates, others = [], []
    point_totals: dict[tuple[str, ...], np.ndarray] = {}  # sums of counts shared by the rates (added once)
    replicate_totals: dict[tuple[str, ...], np.ndarray] = {}
    for name, metric in count_metrics().items():
        if metric.needs_scores and not cube.has_scores:
            continue
        if isinstance(metric, Rate):
            value, fraction = metric.value_and_fraction(point, point_totals)
            if name in judged:
                reps, replicate_fraction = metric.value_and_fraction(boot, replicate_totals)
            else:
                reps = np.empty((0, value.size))
                replicate_fraction = reps, reps
            # a rate rests on its trials (Rate.events); its Wilson interval is set below, with the other rates'
            values[name] = MetricValues(value, value, value, reps, fraction[1], fraction, replicate_fraction)
            rates.append(values[name])
        else:
            value = metric.compute(point)
            values[name] = MetricValues(value, value, value, metric.compute(boot), metric.events(point))
            others.append(values[name])
    # every other metric's percentile interval in one call (each column's interval reads only that column)
    bounds = percentile_intervals([v.replicates for v in others], level, [v.value for v in others])
    for v, (low, high) in zip(others, bounds, strict=True):
        v.ci_low, v.ci_high = low, high
    if rates:  # every rate's Wilson interval in one call on the stacked counts (the same values, elementwise)
        successes, trials = (np.stack([v.fraction[part] for v in rates if v.fraction is not None]) for part in (0, 1))
        lows, highs = wilson_interval(successes, trials, z)
        for v, low, high in zip(rates, lows, highs, strict=True):
            v.ci_low, v.ci_high = low, high
    return values


def _auc_values(
    cube: Cube, slicing: Slicing, groups: list[Group], point: GroupCounts, policy: Policy, z: float
) -> tuple[MetricValues, list[dict[str, Any]], np.ndarray | None]:
    """Per-group AUC with its Hanley-McNeil interval and parametric replicates, and the error bound.

    Exact from the score table (bound None); from the score histogram otherwise, with the bound of
    engine/auc_histogram.py per group, by which the interval is widened on both sides (it then covers the
    exact AUC's interval). The ROC curves come with it for the population and single attributes.
    """
    stats = policy.statistics
    runs = auc_module.score_runs(cube.score_arrays, slicing, groups)
    auc, n_pos, n_neg = auc_module.exact_auc(runs)
    bound = error_bounds(runs, n_pos, n_neg) if cube.auc_method == "histogram" else None
    slack = np.nan_to_num(bound) if bound is not None else 0.0
    class_sizes = point.effective_class_sizes(n_pos, n_neg)  # [weights] Kish class sizes
    se = hanley_mcneil_se(auc, *class_sizes)
    rng = np.random.default_rng(slicing_seed(stats.seed, slicing))  # the slicing's own stream, as for counts
    # Parametric replicates from the normal approximation, kept inside AUC's range.
    reps = np.clip(auc + se * rng.standard_normal((stats.n_bootstrap, len(groups))), 0.0, 1.0)
    events = np.minimum(*(np.asarray(size, dtype=float) for size in class_sizes))
    low, high = np.clip(auc - z * se - slack, 0, 1), np.clip(auc + z * se + slack, 0, 1)
    values = MetricValues(auc, low, high, reps, events)
    curves = auc_module.roc_curves(runs, groups, slicing) if len(slicing) <= 1 else []
    return values, curves, bound


def wants_auc(slicing: Slicing, policy: Policy) -> bool:
    """Whether this slicing gets exact AUC.

    Exact AUC reads every scored row once per slicing, so intersections get it only when the policy judges
    AUC; the population and single attributes always do (with their ROC curves).
    """
    return len(slicing) <= 1 or any(policy_metric(m.name).bases == ("roc_auc",) for m in policy.metrics)


# ----------------------------------------------------------------------------------------------- counting
def bootstrap_group_counts(
    cube: Cube,
    group_index: np.ndarray,
    n_groups: int,
    n_bootstrap: int,
    seed: np.random.SeedSequence,
    slicing: Slicing = (),
    *,
    source: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
) -> tuple[GroupCounts, GroupCounts]:
    """Group counts for the point estimate and for every bootstrap replicate.

    Unweighted, a replicate resamples rows: a multinomial draw of the rows over the slicing's cells. With
    weights (probabilistic membership), resampling the expanded rows would be wrong twice over: a cell's
    weights vary (0.6 for one person, 0.1 for another), so drawing rows at their mean weight understates the
    variance, and the number of rows depends on how finely membership is split. Instead each cell is drawn
    in Kish effective units: n_eff = W^2 / W2 units of weight W2 / W. Its total then has the mean (W) and the
    variance (sum of squared weights, W2) that resampling persons gives, whatever the weights' scale. What it
    leaves out is the positive covariance between groups that share a person (a person counts in several
    groups), so intervals of between-group differences are conservative rather than too narrow. A slicing
    without the probabilistic attribute holds all of a person's rows in one cell: its squared weights are
    per person (``Cube.squares_column``), so a person split in three rows still counts once.

    ``source`` (unweighted cubes: ``fairgate.engine.replicate_sources``) gives the replicates' row counts per
    occupied cell from a larger slicing's draws, for the cube cells' flat slicing cells and the occupied ones.
    """
    bins = cube.calibration_bins
    cells = cube.cells
    flat = flat_cells(cube, group_index)
    size = n_groups * 4 * bins
    weight = np.bincount(flat, weights=cells[WEIGHT].to_numpy(), minlength=size)
    score = np.bincount(flat, weights=cells[SCORE_SUM].to_numpy(), minlength=size)
    rows = np.bincount(flat, weights=cells[ROWS].to_numpy(), minlength=size)
    squares = cube.squares_column(slicing)
    weight_sq = np.bincount(flat, weights=cells[squares].to_numpy(), minlength=size) if squares in cells else None
    # Every weight exactly 1 (sum w = sum w^2 = rows): the plain row counts, bit for bit as without weights.
    unit_weights = weight_sq is None or (np.array_equal(weight, rows) and np.array_equal(weight_sq, rows))
    squared_positive = weight_sq > 0 if weight_sq is not None else True
    occupied = np.flatnonzero(rows) if unit_weights else np.flatnonzero((weight > 0) & squared_positive)
    # The point estimate: every occupied cell counted once, with its whole weight and score sum.
    once = _replicate_counts(np.ones((1, occupied.size)), occupied, weight[occupied], score[occupied], n_groups, bins)
    point = GroupCounts(**{f.name: getattr(once, f.name)[0] for f in fields(once) if not f.name.endswith("_sq")})
    units: np.ndarray = rows[occupied]
    unit_weight, unit_score = np.ones(occupied.size), score[occupied] / rows[occupied]
    if not unit_weights:
        assert weight_sq is not None
        point = _with_squares(point, weight_sq[occupied], occupied, n_groups, bins)
        # Kish effective units per cell, rounded so that rescaled weights (equal up to the last bits) give the
        # very same draws: one differing bit changes the multinomial's path and every later draw.
        units = np.round(weight[occupied] ** 2 / weight_sq[occupied], 6)
        unit_weight = weight[occupied] / units
        unit_score = score[occupied] / units
    drawn = source(flat, occupied) if source is not None and unit_weights else draw_counts(units, n_bootstrap, seed)
    replicates = _replicate_counts(drawn, occupied, unit_weight, unit_score, n_groups, bins)
    # Replicates in effective units (rates unchanged), so that the interval code reading counts from them
    # (bootstrap-t rate variances, the debiased calibration error) sees people, not sums of weights.
    return point, replicates if unit_weights else replicates.scaled(point.effective_scale())


def _with_squares(
    point: GroupCounts, weight_sq: np.ndarray, occupied: np.ndarray, n_groups: int, bins: int
) -> GroupCounts:
    """The point counts with their cells' sums of squared weights (what Kish's effective sizes need)."""
    squared = _replicate_counts(
        np.ones((1, occupied.size)), occupied, weight_sq, np.zeros(occupied.size), n_groups, bins
    )
    return replace(point, **{f"{k}_sq": getattr(squared, k)[0] for k in ("tp", "fp", "tn", "fn")})


def _replicate_counts(
    drawn: np.ndarray, cells: np.ndarray, mean_weight: np.ndarray, mean_score: np.ndarray, n_groups: int, bins: int
) -> GroupCounts:
    """Group counts of every replicate from its row counts per slicing cell, in one sparse product.

    ``drawn`` is (replicates x cells); ``cells`` are the flat (group, y_true, y_pred, bin) indices of its
    columns, each count carrying ``mean_weight`` and ``mean_score``. The product sums them straight into the
    confusion counts and the per-bin calibration sums (shapes ``(replicates, G)`` and ``(replicates, G, bins)``).
    """
    n_cells = cells.size
    group, rest = np.divmod(cells, 4 * bins)
    outcome, score_bin = np.divmod(rest, bins)  # outcome = 2 * y_true + y_pred
    y_true = outcome // 2
    per_bin = group * bins + score_bin
    confusion_size, bin_size = 4 * n_groups, n_groups * bins
    columns = np.concatenate(
        [
            group * 4 + outcome,  # tn, fp, fn, tp per group
            confusion_size + per_bin,  # rows per bin
            confusion_size + bin_size + per_bin,  # favourable labels per bin
            confusion_size + 2 * bin_size + per_bin,  # score sum per bin
        ]
    )
    values = np.concatenate([mean_weight, mean_weight, mean_weight * y_true, mean_score])
    aggregate = summing_matrix(
        columns, np.tile(np.arange(n_cells), 4), values, (confusion_size + 3 * bin_size, n_cells)
    )
    sums = (aggregate @ np.ascontiguousarray(drawn.T)).T  # (replicates, outputs)
    replicates = drawn.shape[0]
    confusion = sums[:, :confusion_size].reshape(replicates, n_groups, 2, 2)
    calibration = sums[:, confusion_size:].reshape(replicates, 3, n_groups, bins)
    # Contiguous copies: every metric reads these many times, and a strided view costs each reading more.
    return GroupCounts(
        tp=np.ascontiguousarray(confusion[..., 1, 1]),
        fp=np.ascontiguousarray(confusion[..., 0, 1]),
        tn=np.ascontiguousarray(confusion[..., 0, 0]),
        fn=np.ascontiguousarray(confusion[..., 1, 0]),
        bin_n=calibration[:, 0],
        bin_positive=calibration[:, 1],
        bin_score=calibration[:, 2],
    )


# ----------------------------------------------------------------------------------------------- comparing
def reference_group_index(groups: list[Group], slicing: Slicing, policy: Policy, n: np.ndarray) -> int | None:
    """The reference group (fairgate/engine/reference.py's rule); None for the population's slicing."""
    if not slicing:
        return None
    return reference_index(groups, configured_reference(slicing, policy), n)


_Contrasts = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _comparisons(
    slicing: Slicing,
    groups: list[Group],
    values: dict[str, MetricValues],
    ref: int | None,
    eligible: np.ndarray,
    z: float,
    level: float,
) -> list[dict[str, Any]]:
    """Each group against the reference: signed difference and ratio with intervals, and a raw p-value.

    Rates use Newcombe (difference), Katz (ratio) and a two-proportion test; other metrics use the bootstrap.
    All groups of one metric are computed at once.
    """
    if ref is None:
        return []
    metrics = count_metrics()
    others = np.array([g for g in range(len(groups)) if g != ref], dtype=np.int64)
    if others.size == 0:
        return []
    names = list(values)
    rate_contrasts = _rate_contrasts([n for n in names if isinstance(metrics.get(n), Rate)], values, others, ref, z)
    value = np.stack([values[name].value for name in names])  # every metric's difference and ratio at once
    with np.errstate(divide="ignore", invalid="ignore"):
        diff = value[:, others] - value[:, [ref]]
        rat = np.where(value[:, [ref]] > 0, value[:, others] / value[:, [ref]], np.nan)
    booted = [n for n in names if n not in rate_contrasts]
    at = {n: i for i, n in enumerate(names)}
    contrasts = rate_contrasts | _bootstrap_contrasts(
        booted, values, others, ref, diff[[at[n] for n in booted]], rat[[at[n] for n in booted]], level
    )
    methods, rows = zip(
        *(_contrast_rows(n in rate_contrasts, contrasts[n], d, r) for n, d, r in zip(names, diff, rat, strict=True)),
        strict=True,
    )
    table = _list(np.stack(rows))  # (metrics, 7, others), None where not finite
    reference, compared = groups[ref], [groups[g] for g in others]
    sufficient = (eligible[others] & eligible[ref]).tolist()
    return [
        {
            "metric": name,
            "slicing": list(slicing),
            "group": group,
            "reference": reference,
            "difference": d[i],
            "difference_ci_low": dl[i],
            "difference_ci_high": dh[i],
            "ratio": r[i],
            "ratio_ci_low": rl[i],
            "ratio_ci_high": rh[i],
            "p_value": p[i],
            "method": method,
            "sufficient": sufficient[i],
        }
        for name, method, (d, dl, dh, r, rl, rh, p) in zip(names, methods, table, strict=True)
        for i, group in enumerate(compared)
    ]


def _contrast_rows(analytic: bool, contrasts: _Contrasts, diff: np.ndarray, rat: np.ndarray) -> tuple[str, np.ndarray]:
    """One metric's comparisons as rows (difference, its interval, ratio, its interval, p-value), and the method.

    ``contrasts``: the rate's analytic ones (``analytic``, :func:`_rate_contrasts`) or the bootstrap's
    (:func:`_bootstrap_contrasts`).
    """
    method = "newcombe/katz/two-proportion" if analytic else "bootstrap"
    d_low, d_high, r_low, r_high, p_values = contrasts
    p_values = np.where(np.isfinite(diff), p_values, np.nan)
    return method, np.stack([diff, d_low, d_high, rat, r_low, r_high, p_values]).astype(float, copy=False)


def _rate_contrasts(
    names: list[str], values: dict[str, MetricValues], others: np.ndarray, ref: int, z: float
) -> dict[str, _Contrasts]:
    """Each group against the reference for the rates ``names``: Newcombe, Katz and the two-proportion test.

    Per rate, the difference's low and high, the ratio's low and high, and the p-values; every rate at once on
    its (successes, trials) stacked (the formulas are elementwise: the same values as one rate at a time).
    """
    if not names:
        return {}
    x, m = (np.stack([f[part] for f in (values[n].fraction for n in names) if f is not None]) for part in (0, 1))
    x1, m1, x2, m2 = x[:, others], m[:, others], x[:, [ref]], m[:, [ref]]
    d_low, d_high = newcombe_interval(x1, m1, x2, m2, z)
    r_low, r_high = katz_ratio_interval(x1, m1, x2, m2, z)
    x2, m2 = np.broadcast_to(x2, x1.shape), np.broadcast_to(m2, x1.shape)
    p_values = two_proportion_p_value(x1.ravel(), m1.ravel(), x2.ravel(), m2.ravel()).reshape(x1.shape)
    return {n: (d_low[i], d_high[i], r_low[i], r_high[i], p_values[i]) for i, n in enumerate(names)}


def _bootstrap_contrasts(
    names: list[str],
    values: dict[str, MetricValues],
    others: np.ndarray,
    ref: int,
    diff: np.ndarray,
    rat: np.ndarray,
    level: float,
) -> dict[str, _Contrasts]:
    """Percentile intervals of the difference and ratio to the reference, and bootstrap p-values, per metric.

    ``diff`` and ``rat``: the metrics' point differences and ratios (metrics x others). Every interval is found
    in one call (each column's interval reads only that column: the same values as one call per metric).
    """
    differences, ratios = [], []
    for name in names:
        replicates = values[name].replicates
        boot_ref = replicates[:, [ref]]
        with np.errstate(divide="ignore", invalid="ignore"):
            differences.append(replicates[:, others] - boot_ref)
            ratios.append(np.where(boot_ref > 0, replicates[:, others] / boot_ref, np.nan))
    bounds = percentile_intervals([*differences, *ratios], level, [*diff, *rat])
    k = len(names)
    return {name: (*bounds[i], *bounds[k + i], _bootstrap_p_values(differences[i])) for i, name in enumerate(names)}


def _bootstrap_p_values(replicate_differences: np.ndarray) -> np.ndarray:
    """Two-sided bootstrap p-values for a difference of zero, per column (twice the smaller tail, at most 1)."""
    defined = np.isfinite(replicate_differences)
    count = defined.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        below = (defined & (replicate_differences <= 0)).sum(axis=0) / count
        above = (defined & (replicate_differences >= 0)).sum(axis=0) / count
    return np.where(count > 0, np.minimum(1.0, 2.0 * np.minimum(below, above)), np.nan)


def _calibration_curves(slicing: Slicing, groups: list[Group], point: GroupCounts, cube: Cube) -> list[dict[str, Any]]:
    if not cube.has_scores:
        return []
    bins = cube.calibration_bins
    curves = []
    for g, group in enumerate(groups):
        entries = []
        for b in range(bins):
            count = float(point.bin_n[g, b])
            entries.append(
                {
                    "lower": b / bins,
                    "upper": (b + 1) / bins,
                    "n": count,
                    "mean_score": as_number(point.bin_score[g, b] / count) if count > 0 else None,
                    "fraction_positive": as_number(point.bin_positive[g, b] / count) if count > 0 else None,
                }
            )
        curves.append({"slicing": list(slicing), "group": group, "bins": entries})
    return curves


def _list(values: np.ndarray) -> Any:
    """The values as (nested) lists of Python floats, None where not finite (checked once for the whole array)."""
    values = np.asarray(values, dtype=float)
    listed = values.tolist()
    finite = np.isfinite(values)
    if finite.all():
        return listed
    if values.ndim == 1:
        return [v if ok else None for v, ok in zip(listed, finite.tolist(), strict=True)]
    for index in zip(*np.nonzero(~finite), strict=True):
        *outer, last = (int(i) for i in index)
        row = listed
        for i in outer:
            row = row[i]
        row[last] = None
    return listed
