"""One slicing of a multiclass audit as a marginal of the multiclass cube.

Per group: the K x K confusion matrix, and per class (one-vs-rest) selection rate, base rate, TPR (recall),
FNR, FPR and precision (PPV), plus accuracy; each rate with its Wilson interval. Summaries across groups, per
class and their worst case over classes: ``demographic_parity_difference`` (selection rate),
``demographic_parity_ratio``, ``equal_opportunity_difference`` (TPR), ``equalized_odds_difference`` (the larger
of the TPR and FPR differences, Fairlearn's ``worst_case``) and ``predictive_parity_difference`` (PPV).

Intervals of the summaries are the binary engine's own (``fairgate/engine/slicing.py``): simultaneous intervals
of every pairwise difference of the components over the groups (bootstrap-t max-t, with analytic rate variances),
folded into the range; the worst case over classes takes all classes' components into one family, so its
interval holds its coverage where groups are equal, however many classes there are. Replicates are multinomial
draws over the slicing's (group x true class x predicted class) cells, seeded per slicing.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import polars as pl

from fairgate.engine.bootstrap import draw_counts, slicing_seed
from fairgate.engine.columns import PRED, ROWS, TRUE, WEIGHT, WEIGHT_SQ
from fairgate.engine.groups import declared_for, frame_groups
from fairgate.engine.metrics import difference, effective_size, ratio
from fairgate.engine.multiclass.cube import MulticlassCube
from fairgate.engine.multiclass.metrics import RATES, effective_fraction, rate
from fairgate.engine.planning import candidate_slicings, within_group_limit
from fairgate.engine.stats import PairFamily, wilson_interval, z_value

# The binary engine's interval machinery, so that multiclass summaries get the very same statistics.
from fairgate.engine.summaries import MetricValues, interval_obstacle, summary_bounds, summary_pair_family
from fairgate.engine.text import policy_labels
from fairgate.policy.core import Policy

Slicing = tuple[str, ...]
Group = dict[str, str]
INTERVAL_METHOD = (
    "simultaneous intervals of all pairwise differences (bootstrap-t max-t critical value; the studentized range "
    "when the family is too large for the bootstrap), folded into the range"
)

#: The summaries across groups: name -> (group metrics it takes the worst of, difference or ratio).
SUMMARIES: dict[str, tuple[tuple[str, ...], str]] = {
    "demographic_parity_difference": (("selection_rate",), "difference"),
    "demographic_parity_ratio": (("selection_rate",), "ratio"),
    "equal_opportunity_difference": (("true_positive_rate",), "difference"),
    "equalized_odds_difference": (("true_positive_rate", "false_positive_rate"), "difference"),
    "predictive_parity_difference": (("positive_predictive_value",), "difference"),
}


@dataclass(frozen=True)
class SummaryValue:
    """One summary's value with its simultaneous interval; ``reason`` says why the interval (or value) is missing.

    ``max_group`` and ``min_group`` are the groups with the largest and smallest value of the first component.
    """

    value: float | None
    ci_low: float | None
    ci_high: float | None
    reason: str | None
    max_group: Group | None
    min_group: Group | None
    # The simultaneous pairwise differences behind the interval, for judging (not part of ``to_dict``).
    family: PairFamily | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class ClassSummary:
    """A summary of one slicing: per class, and its worst case over classes (``worst_class`` attains it)."""

    metric: str
    bases: list[str]
    summary: str
    slicing: list[str]
    by_class: dict[str, SummaryValue]
    worst: SummaryValue
    worst_class: str | None
    n_groups_judged: int
    interval_method: str


@dataclass(frozen=True)
class MulticlassSlicingResult:
    """Everything computed for one slicing of a multiclass audit. Plain data (picklable; ``to_dict`` for JSON).

    ``confusion[g]`` is group g's K x K matrix (rows true class, columns prediction, weighted);
    ``metrics[rate][value|ci_low|ci_high][g][c]`` the per-class rates; ``accuracy[value|ci_low|ci_high][g]``;
    ``n`` Kish effective group sizes (the row counts unweighted), ``rows`` the input rows per group.
    """

    slicing: list[str]
    classes: list[str]
    groups: list[Group]
    n: list[float]
    rows: list[int]
    sufficient: list[bool]
    confusion: list[list[list[float]]]
    metrics: dict[str, dict[str, list[list[float | None]]]]
    accuracy: dict[str, list[float | None]]
    summaries: list[ClassSummary]

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON-ready nested dicts and lists (undefined values are None)."""
        return asdict(self, dict_factory=_without_family)

    def summary(self, metric: str) -> ClassSummary:
        """The summary called ``metric`` (KeyError when there is none)."""
        for entry in self.summaries:
            if entry.metric == metric:
                return entry
        raise KeyError(metric)


def plan_multiclass_slicings(cube: MulticlassCube, policy: Policy) -> list[Slicing]:
    """The population, each attribute, the pairs (configured, else all) and, if asked, comparable triples.

    As the binary plan: a triple is audited when at least two of its groups reach ``min_group_size``; a slicing
    with more groups than ``limits.max_groups_per_slicing`` is left out.
    """
    candidates = candidate_slicings(cube.attributes, policy, lambda keys: _group_sizes(cube, keys))
    planned, _ = within_group_limit(candidates, policy, lambda slicing: cube.cells.select(list(slicing)).n_unique())
    return planned


def _group_sizes(cube: MulticlassCube, keys: list[str]) -> np.ndarray:
    sums = cube.cells.group_by(keys).agg(pl.col(WEIGHT, WEIGHT_SQ).sum())
    return effective_size(sums[WEIGHT].to_numpy(), sums[WEIGHT_SQ].to_numpy())


def compute_multiclass_slicing(cube: MulticlassCube, slicing: Slicing, policy: Policy) -> MulticlassSlicingResult:
    """All multiclass metrics and summaries of one slicing, with ``statistics.n_bootstrap`` replicates.

    ``policy`` gives the statistics settings (replicates, seed, ``min_events``), ``min_group_size``, the
    confidence level and declared attribute values (a declared value without rows is a group with n = 0).
    """
    stats = policy.statistics
    declared = declared_for(policy, slicing)
    groups, index = frame_groups(cube.cells, slicing, declared)
    k = cube.n_classes
    point, point_sq, replicates = _confusions(cube, index, len(groups), stats.n_bootstrap, stats.seed, slicing)
    totals = point.sum(axis=(-1, -2))
    n = totals if point_sq is None else effective_size(totals, point_sq.sum(axis=(-1, -2)))
    rows = np.bincount(index, weights=cube.cells[ROWS].to_numpy(), minlength=len(groups))
    sufficient = n >= policy.intersectional_analysis.min_group_size
    level = policy.reporting.confidence_level
    values = _rate_values(point, point_sq, replicates, z_value(level))
    per_class = {
        name: {
            part: _table(getattr(values[name][c], part) for c in range(k)) for part in ("value", "ci_low", "ci_high")
        }
        for name, r in RATES.items()
        if r.per_class
    }
    accuracy = values["accuracy"][0]
    return MulticlassSlicingResult(
        slicing=list(slicing),
        classes=list(cube.classes),
        groups=groups,
        n=n.tolist(),
        rows=[int(r) for r in rows],
        sufficient=sufficient.tolist(),
        confusion=point.tolist(),
        metrics=per_class,
        accuracy={part: _list(getattr(accuracy, part)) for part in ("value", "ci_low", "ci_high")},
        summaries=[
            _summary(name, bases, kind, slicing, groups, list(cube.classes), values, sufficient, policy)
            for name, (bases, kind) in SUMMARIES.items()
        ],
    )


def _rate_values(
    point: np.ndarray, point_sq: np.ndarray | None, replicates: np.ndarray, z: float
) -> dict[str, list[MetricValues]]:
    """Every rate, per class: value, Wilson interval, replicates and (successes, trials) of point and replicates."""
    out: dict[str, list[MetricValues]] = {}
    for name in RATES:
        value, reps = rate(point, name), rate(replicates, name)
        successes, trials = effective_fraction(point, point_sq, name)
        rep_successes, rep_trials = effective_fraction(replicates, None, name)  # replicates are in effective units
        low, high = wilson_interval(successes, trials, z)
        out[name] = [
            MetricValues(
                value[:, c],
                low[:, c],
                high[:, c],
                reps[:, :, c],
                trials[:, c],
                (successes[:, c], trials[:, c]),
                (rep_successes[:, :, c], rep_trials[:, :, c]),
            )
            for c in range(value.shape[-1])
        ]
    return out


def _summary(
    metric: str,
    bases: tuple[str, ...],
    kind: str,
    slicing: Slicing,
    groups: list[Group],
    classes: list[str],
    values: dict[str, list[MetricValues]],
    use: np.ndarray,
    policy: Policy,
) -> ClassSummary:
    """The summary per class and its worst case over classes, each with its simultaneous interval."""
    by_class = {
        label: _judged(metric, {f"{b} of class {label!r}": values[b][c] for b in bases}, kind, groups, use, policy)
        for c, label in enumerate(classes)
    }
    everything = {f"{b} of class {label!r}": values[b][c] for c, label in enumerate(classes) for b in bases}
    worst = _judged(metric, everything, kind, groups, use, policy)
    per_class = [v.value for v in by_class.values()]
    worst_class = None
    if worst.value is not None and all(v is not None for v in per_class):
        pick = max if kind == "difference" else min
        worst_class = classes[per_class.index(pick(v for v in per_class if v is not None))]
        worst = SummaryValue(
            worst.value,
            worst.ci_low,
            worst.ci_high,
            worst.reason,
            *_extremes(values[bases[0]][classes.index(worst_class)], groups, use),
            worst.family,
        )
    return ClassSummary(
        metric=metric,
        bases=list(bases),
        summary=kind,
        slicing=list(slicing),
        by_class=by_class,
        worst=worst,
        worst_class=worst_class,
        n_groups_judged=int(use.sum()),
        interval_method=INTERVAL_METHOD,
    )


def _judged(
    metric: str, components: dict[str, MetricValues], kind: str, groups: list[Group], use: np.ndarray, policy: Policy
) -> SummaryValue:
    """The worst difference (or ratio) over the components and groups in ``use``, with its interval.

    As the binary engine: each component's difference is taken over the groups where it is defined, the worst
    case is undefined when any component's is (fewer than 2 groups with a value), and no interval is given when
    a component is undefined in a judged group or rests on fewer than ``min_events`` people there (``reason``).
    """
    if len(groups) < 2:
        return SummaryValue(None, None, None, "a slicing with one group has no differences", None, None)
    summarise = difference if kind == "difference" else ratio
    each = np.array([float(summarise(np.where(use, v.value, np.nan))) for v in components.values()])
    value = float(each.max() if kind == "difference" else each.min())  # NaN when any component is NaN
    extremes = _extremes(next(iter(components.values())), groups, use)
    reason = interval_obstacle(groups, components, use, policy.statistics.min_events, policy_labels(policy))
    if reason is None and not np.isfinite(value):
        reason = f"{metric} is undefined: fewer than 2 judged groups have a value (or the largest is 0)"
    if reason is not None:
        return SummaryValue(_number(value), None, None, reason, *extremes)
    family = summary_pair_family(list(components.values()), use, kind)
    if family is None:
        degenerate = "the bootstrap replicates are degenerate (no spread), so no valid interval exists"
        return SummaryValue(_number(value), None, None, degenerate, *extremes)
    low, high = summary_bounds(family, family.critical(policy.reporting.confidence_level), kind, value=value)
    return SummaryValue(_number(value), low, high, None, *extremes, family)


def _extremes(values: MetricValues, groups: list[Group], use: np.ndarray) -> tuple[Group | None, Group | None]:
    masked = np.where(use, values.value, np.nan)
    if not np.isfinite(masked).any():
        return None, None
    return groups[int(np.nanargmax(masked))], groups[int(np.nanargmin(masked))]


# ----------------------------------------------------------------------------------------------- counting
def _confusions(
    cube: MulticlassCube, index: np.ndarray, n_groups: int, n_bootstrap: int, seed: int, slicing: Slicing
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """Per-group confusion matrices: the point estimate ``(G, K, K)``, its squared weights, and the replicates.

    Unweighted, a replicate resamples the rows: a multinomial draw over the slicing's cells. With weights, each
    cell is drawn in Kish effective units (W^2 / W2 units of weight W2 / W), as the binary engine does, and the
    replicates are rescaled per group to effective units so that rate variances see people, not weight sums.
    """
    k = cube.n_classes
    cells = cube.cells
    flat = (index * k + cells[TRUE].to_numpy()) * k + cells[PRED].to_numpy()
    size = n_groups * k * k
    weight = np.bincount(flat, weights=cells[WEIGHT].to_numpy(), minlength=size)
    rows = np.bincount(flat, weights=cells[ROWS].to_numpy(), minlength=size)
    weight_sq = np.bincount(flat, weights=cells[WEIGHT_SQ].to_numpy(), minlength=size)
    unit_weights = np.array_equal(weight, rows) and np.array_equal(weight_sq, rows)
    if unit_weights:
        occupied = np.flatnonzero(rows)
        units, unit_weight = rows[occupied], np.ones(occupied.size)
    else:
        occupied = np.flatnonzero((weight > 0) & (weight_sq > 0))
        # Rounded so that rescaled weights (equal up to the last bits) give the very same draws.
        units = np.round(weight[occupied] ** 2 / weight_sq[occupied], 6)
        unit_weight = weight[occupied] / units
    drawn = draw_counts(units, n_bootstrap, slicing_seed(seed, slicing))
    flat_replicates = np.zeros((n_bootstrap, size))
    flat_replicates[:, occupied] = drawn * unit_weight
    shape = (n_groups, k, k)
    point = weight.reshape(shape)
    replicates = flat_replicates.reshape(n_bootstrap, *shape)
    if unit_weights:
        return point, None, replicates
    point_sq = weight_sq.reshape(shape)
    totals = point.sum(axis=(-1, -2))
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(totals > 0, effective_size(totals, point_sq.sum(axis=(-1, -2))) / totals, 1.0)
    replicates *= scale[None, :, None, None]
    return point, point_sq, replicates


def _without_family(items: list[tuple[str, Any]]) -> dict[str, Any]:
    return {key: value for key, value in items if key != "family"}


def _table(columns: Any) -> list[list[float | None]]:
    """Per-class arrays of shape (G,) as a [group][class] table, undefined values as None."""
    stacked = np.stack(list(columns), axis=-1)
    return [[float(v) if np.isfinite(v) else None for v in row] for row in stacked]


def _list(values: np.ndarray) -> list[float | None]:
    return [float(v) if np.isfinite(v) else None for v in values]


def _number(value: float) -> float | None:
    return value if np.isfinite(value) else None


__all__ = [
    "SUMMARIES",
    "ClassSummary",
    "MulticlassSlicingResult",
    "SummaryValue",
    "compute_multiclass_slicing",
    "plan_multiclass_slicings",
]
