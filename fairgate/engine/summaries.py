"""A binary slicing's summaries across groups and its policy metrics' values, with their intervals.

The difference/ratio of every group metric (simultaneous max-t families, bootstrap or analytic), the judged
policy metrics' values with intervals and the reason when a value is undefined (engine/slicing.py calls these).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fairgate.engine.exact import log_rate, log_rate_variance, rate_variance
from fairgate.engine.labels import reason_label, spelled
from fairgate.engine.metrics import (
    PolicyMetric,
    PopulationIndex,
    SummaryOf,
    difference,
    policy_metric,
    ratio,
)
from fairgate.engine.pairs import pair_differences, pair_se, range_ends, studentizable
from fairgate.engine.stats import (
    Component,
    PairFamily,
    nan_variance,
    pair_bootstrap_fits,
    pair_family,
)
from fairgate.engine.text import ValueLabels, fmt_count, policy_labels
from fairgate.policy.core import Policy

Slicing = tuple[str, ...]
Group = dict[str, str]


@dataclass
class MetricValues:
    """One group metric over the groups of a slicing."""

    value: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    replicates: np.ndarray  # (replicates, groups); dropped before the result leaves the task
    events: np.ndarray | None = None  # people each group's value rests on (the rate's denominator)
    # Rates only: the successes and trials of the point estimate and of every replicate, for log-ratios and
    # the analytic variance floors of the simultaneous intervals.
    fraction: tuple[np.ndarray, np.ndarray] | None = None
    replicate_fraction: tuple[np.ndarray, np.ndarray] | None = None


def group_summaries(
    slicing: Slicing,
    groups: list[Group],
    values: dict[str, MetricValues],
    eligible: np.ndarray,
    level: float,
    min_events: int,
    labels: ValueLabels | None = None,
) -> list[dict[str, Any]]:
    """Difference (max - min) and ratio (min / max) of every group metric over eligible groups.

    Each comes with a simultaneous (max-t) interval folded into the range; no interval where a group has too
    few events. The critical value is the studentized range's (``bootstrap=False`` in :func:`summary_pair_family`),
    and every metric's family is found at once (:func:`_descriptive_bounds`: the same values as one family at a time).
    """
    if len(groups) < 2:
        return []
    names = list(values)
    value = np.stack([values[name].value for name in names])
    masked = eligible_only(value, eligible)
    use = eligible & np.isfinite(value)
    points = {"difference": difference(masked), "ratio": ratio(masked)}
    obstacles = [interval_obstacle(groups, {n: values[n]}, use[m], min_events, labels) for m, n in enumerate(names)]
    todo = [m for m, reason in enumerate(obstacles) if reason is None]
    bounds = {s: _descriptive_bounds(values, names, use, todo, s, level) for s in points}
    shown = np.isfinite(masked).any(axis=1)
    out = []
    for m, name in enumerate(names):
        entry: dict[str, Any] = {"metric": name, "slicing": list(slicing)}
        reason = obstacles[m]
        for summary, point in ((s, float(points[s][m])) for s in ("difference", "ratio")):
            low = high = None
            if reason is None and np.isfinite(point):
                found = bounds[summary].get(m)
                if found is None:
                    reason = "the bootstrap replicates are degenerate (no spread), so no interval is given"
                else:
                    low, high = fold_bounds(*found, summary, (name,), point)
            elif reason is None:
                reason = f"the {summary} is undefined (fewer than 2 groups with a value, or a largest value of 0)"
            entry[summary] = as_number(point)
            entry[f"{summary}_ci_low"], entry[f"{summary}_ci_high"] = low, high
        entry["n_groups_judged"] = int(use[m].sum())
        entry["interval_method"] = _method(None)
        if reason is not None:
            entry["interval_reason"] = reason
        if shown[m]:
            entry["max_group"] = groups[int(np.nanargmax(masked[m]))]
            entry["min_group"] = groups[int(np.nanargmin(masked[m]))]
        out.append(entry)
    return out


def _descriptive_bounds(
    values: dict[str, MetricValues], names: list[str], use: np.ndarray, todo: list[int], summary: str, level: float
) -> dict[int, tuple[float, float]]:
    """The family bounds (before folding) of each metric ``todo`` over its groups in ``use``, at the studentized range.

    What ``summary_pair_family([v], use[m], summary, bootstrap=False)`` and ``PairFamily.bounds`` give, metric by
    metric (absent where that family is None), with the elementwise steps done for all metrics over the same
    groups at once: the same values.
    """
    found: dict[int, tuple[float, float]] = {}
    by_groups: dict[bytes, list[int]] = {}
    for m in todo:
        by_groups.setdefault(use[m].tobytes(), []).append(m)
    for members in by_groups.values():
        index = np.flatnonzero(use[members[0]])
        rates = [m for m in members if _is_rate(values[names[m]])]
        rate_centre, rate_variance = _rate_scales([values[names[m]] for m in rates], index, summary)
        scales = {m: (rate_centre[row], rate_variance[row]) for row, m in enumerate(rates)}
        scales |= {m: _scale_of(values[names[m]], index, summary) for m in members if m not in scales}
        centre, variance = np.stack([scales[m][0] for m in members]), np.stack([scales[m][1] for m in members])
        d, se = pair_differences(centre), pair_se(variance)
        valid = studentizable(d, se)
        gap = np.abs(d)
        critical = PairFamily(gap[0], se[0], None, (index.size,)).critical(level)
        lows, highs = range_ends(gap, se, critical)
        for row, m in enumerate(members):
            if valid[row]:
                found[m] = max(0.0, float(lows[row])), float(highs[row])
    return found


def _is_rate(v: MetricValues) -> bool:
    """Whether a metric's values are a rate's, with successes and trials (:func:`summary_component`'s analytic case)."""
    return v.fraction is not None and v.replicate_fraction is not None


def _rate_scales(rates: list[MetricValues], index: np.ndarray, summary: str) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_scale_of` of several rates at once: (rates x groups) values and variances (empty without rates).

    The rates side by side as the columns of one rate (the scale's formulas are elementwise: the same values).
    """
    if not rates:
        return np.empty((0, index.size)), np.empty((0, index.size))
    value = np.stack([v.value for v in rates], axis=1)
    fraction = tuple(np.stack([v.fraction[part] for v in rates if v.fraction is not None], axis=1) for part in (0, 1))
    together = MetricValues(value, value, value, np.empty((0, value.shape[0])), None, fraction, fraction)  # type: ignore[arg-type]
    component = summary_component(together, index, summary, bootstrap=False)
    assert component.variance is not None  # a rate's scale has its analytic variance
    return component.value.T, component.variance.T


def _scale_of(v: MetricValues, index: np.ndarray, summary: str) -> tuple[np.ndarray, np.ndarray]:
    """A metric's values over the groups ``index`` on the summary's scale and their variances, without replicates.

    As :func:`summary_component` builds them with ``bootstrap=False`` (and ``pair_family`` reads a component
    without variances: the bootstrap variance of each group).
    """
    component = summary_component(v, index, summary, bootstrap=False)
    if component.variance is not None:
        return component.value, component.variance
    return component.value, nan_variance(component.replicates)


def _method(family: PairFamily | None) -> str:
    critical = "bootstrap-t max-t" if family is not None and family.null is not None else "studentized range"
    return f"simultaneous intervals of all pairwise differences ({critical} critical value), folded into the range"


def interval_obstacle(
    groups: list[Group],
    values: dict[str, MetricValues],
    use: np.ndarray,
    min_events: int,
    labels: ValueLabels | None = None,
) -> str | None:
    """Why no valid interval can be given over the groups in ``use`` (None when one can).

    Groups named by the one group name through the policy's value ``labels``, counts by the one count rule.
    """
    if int(use.sum()) < 2:
        return f"fewer than 2 groups can be compared ({int(use.sum())} judged)"
    judged = np.flatnonzero(use)
    for name, v in values.items():
        if v.events is None:
            continue
        short = judged[v.events[judged] < min_events].tolist()
        if short:
            listed = ", ".join(f"{reason_label(groups[i], labels)} ({fmt_count(v.events[i])})" for i in short[:5])
            more = f" and {len(short) - 5} more" if len(short) > 5 else ""
            return (
                f"{spelled(name)} rests on fewer than min_events={min_events} people in {listed}{more}: "
                "its interval would be unreliable"
            )
        undefined = judged[~np.isfinite(v.value[judged])].tolist()
        if undefined:
            return f"{spelled(name)} is undefined in {reason_label(groups[undefined[0]], labels)}"
    return None


def summary_pair_family(
    components: list[MetricValues], use: np.ndarray, summary: str, *, bootstrap: bool = True
) -> PairFamily | None:
    """The pairwise family of the components over the groups in ``use``.

    Differences of the values, or differences of their logarithms for a ratio. Rates carry analytic variances
    (of the rate with one success and one failure added: never 0, even with no events), in the data and, for
    the bootstrap-t critical value, in every replicate; other metrics use bootstrap standard errors.
    ``bootstrap=False``: the studentized range gives the critical value (the descriptive ``summaries`` of every
    group metric, to stay fast). The components' replicates are selected (and a rate's analytic variance found in
    each) only where the family reads them: with enough replicates for few enough pairs (``pair_bootstrap_fits``).
    """
    index = np.flatnonzero(use)
    if bootstrap and components:
        bootstrap = pair_bootstrap_fits([index.size] * len(components), components[0].replicates.shape[0])
    return pair_family([summary_component(v, index, summary, bootstrap) for v in components], bootstrap=bootstrap)


def summary_component(v: MetricValues, index: np.ndarray, summary: str, bootstrap: bool = True) -> Component:
    """One group metric over the groups in ``index`` as a family component.

    Its values, or its log-values for a ratio, with analytic variances for rates (in every replicate too when
    ``bootstrap``).
    """
    if v.fraction is not None and v.replicate_fraction is not None:  # a rate (_is_rate)
        point = tuple(a[index] for a in v.fraction)
        replicated = tuple(a[:, index] for a in v.replicate_fraction) if bootstrap else None
        # Without the bootstrap a rate's family reads only its analytic variances: no replicates to select.
        reps = v.replicates[:, index] if bootstrap else np.empty((0, index.size))
        if summary == "difference":
            return Component(
                v.value[index],
                reps,
                rate_variance(*point),
                rate_variance(*replicated) if replicated else None,
                counts=point,
            )
        return Component(
            log_rate(*point),
            log_rate(*replicated) if replicated else reps,
            log_rate_variance(*point),
            log_rate_variance(*replicated) if replicated else None,
            counts=point,
            log=True,
        )
    reps = v.replicates[:, index]
    if summary == "difference":
        return Component(v.value[index], reps)
    return Component(_log(v.value[index]), _log(reps))


def _log(values: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(values > 0, np.log(values), np.nan)


# Group metrics not confined to [0, 1] (inequality indices); every other one is a rate, AUC or calibration error.
_UNBOUNDED_METRICS = frozenset({"theil_index", "generalized_entropy_index"})


def value_range(summary: str, bases: Sequence[str] = ()) -> tuple[float, float]:
    """The range a summarised value lies in, and so every interval of it (reporting and deciding).

    A largest gap between rates (``difference``) lies in [0, 1], a ratio of the smallest to the largest in [0, 1];
    a gap of an unbounded index (Theil) in [0, inf).

    >>> value_range("difference", ("true_positive_rate",)), value_range("difference", ("theil_index",))
    ((0.0, 1.0), (0.0, inf))
    """
    if summary == "difference" and _UNBOUNDED_METRICS.intersection(bases):
        return 0.0, math.inf
    return 0.0, 1.0


def within_range(low: float, high: float, limits: tuple[float, float] | None) -> tuple[float, float]:
    """An interval cut to a value's range (``limits``; None: unbounded): its ends never pass what the value can be.

    >>> within_range(-0.02, 1.19, (0.0, 1.0)), within_range(-0.5, 2.0, None)
    ((0.0, 1.0), (-0.5, 2.0))
    """
    if limits is None:
        return low, high
    lowest, highest = limits
    return min(max(low, lowest), highest), max(min(high, highest), lowest)


def summary_bounds(
    family: PairFamily,
    critical: float,
    summary: str,
    bases: Sequence[str] = (),
    value: float | None = None,
    members: Sequence[int] | None = None,
) -> tuple[float, float]:
    """The folded interval of a difference, or of a ratio from the interval of its log range.

    A gap between values in [0, 1] is at most 1: the normal bound is cut there (it can pass 1 when a group is
    small), as a ratio's is cut at 1 by construction. The interval always holds the point estimate ``value``:
    a group without events enters the log range with half an event added (a finite log), so a ratio of exactly
    0 would otherwise get an interval such as [0.03, 1.00]. ``members``: of those components of the family only.
    """
    low, high = family.bounds(critical) if members is None else family.member_bounds(critical, members)
    return fold_bounds(low, high, summary, bases, value)


def fold_bounds(
    low: float, high: float, summary: str, bases: Sequence[str] = (), value: float | None = None
) -> tuple[float, float]:
    """A family's bounds of the range as the summary's interval (:func:`summary_bounds`).

    A ratio's from the bounds of its log range; cut to the range the value lies in and widened to hold the value.
    """
    if summary != "difference":
        low, high = float(np.exp(-high)), float(np.exp(-low))
    low, high = within_range(low, high, value_range(summary, bases))
    if value is not None and math.isfinite(value):
        low, high = min(low, value), max(high, value)
    return low, high


def policy_results(
    slicing: Slicing,
    groups: list[Group],
    values: dict[str, MetricValues],
    eligible: np.ndarray,
    policy: Policy,
    level: float,
) -> list[dict[str, Any]]:
    """The policy's metrics on this slicing.

    Each has its value and simultaneous interval, and the pairwise family the gate tests (``_family``, dropped
    when judged). Why a result cannot be judged goes to ``reason``.
    """
    out = []
    for rule in policy.metrics:
        metric = policy_metric(rule.name)
        if not judged_on(metric, slicing):
            continue
        resolved = policy.rule_for(rule.name, slicing)
        patterns = resolved.excluded_groups
        excluded = np.array([bool(patterns) and matches_any(g, patterns) for g in groups], dtype=bool)
        use = eligible & ~excluded
        missing = [b for b in metric.bases if b not in values]
        entry: dict[str, Any] = {
            "metric": rule.name,
            "slicing": list(slicing),
            "bases": list(metric.bases),
            "n_groups_judged": int(use.sum()),
            "excluded_groups": [g for g, x in zip(groups, excluded, strict=True) if x],
            "insufficient_groups": [g for g, ok in zip(groups, eligible, strict=True) if not ok],
            "override_reasons": resolved.override_reasons,
        }
        if missing:
            entry.update(value=None, ci_low=None, ci_high=None, unavailable=f"needs {missing}: give scores")
            entry["reason"] = f"needs {missing}: the audited data has no scores"
            out.append(entry)
            continue
        point = metric.evaluate({b: eligible_only(values[b].value, use) for b in metric.bases})
        entry.update(value=as_number(point), ci_low=None, ci_high=None)
        _attach_interval(entry, metric, groups, values, use, policy, level)
        base = values[metric.bases[0]].value
        masked = eligible_only(base, use)
        if slicing and np.isfinite(masked).any():
            entry["max_group"] = groups[int(np.nanargmax(masked))]
            entry["min_group"] = groups[int(np.nanargmin(masked))]
        out.append(entry)
    return out


def judged_on(metric: PolicyMetric, slicing: Slicing) -> bool:
    """Whether a policy metric is judged on a slicing: a population index on the population, the others elsewhere."""
    return metric.population_level == (not slicing)


def judged_bases(slicing: Slicing, policy: Policy) -> frozenset[str]:
    """The group metrics the policy's metrics judged on this slicing are computed from (:func:`policy_results`)."""
    metrics = (policy_metric(rule.name) for rule in policy.metrics)
    return frozenset(base for metric in metrics if judged_on(metric, slicing) for base in metric.bases)


def _attach_interval(
    entry: dict[str, Any],
    metric: PolicyMetric,
    groups: list[Group],
    values: dict[str, MetricValues],
    use: np.ndarray,
    policy: Policy,
    level: float,
) -> None:
    """The result's interval at the reporting level and the family the gate tests; or the reason there is none."""
    components = {b: values[b] for b in metric.bases}
    if isinstance(metric, PopulationIndex):
        family = _population_family(values[metric.bases[0]])
        summary = "difference"
        reason = None if family is not None else "the bootstrap replicates are degenerate"
    else:
        summary = metric.summary if isinstance(metric, SummaryOf) else "difference"
        reason = interval_obstacle(groups, components, use, policy.statistics.min_events, policy_labels(policy))
        if reason is None and entry["value"] is None:
            reason = _undefined_reason(metric, summary)
        family = summary_pair_family(list(components.values()), use, summary) if reason is None else None
        if reason is None and family is None:
            reason = "the bootstrap replicates are degenerate (no spread), so no valid interval exists"
    if family is None:
        entry["reason"] = reason
        return
    entry["ci_low"], entry["ci_high"] = summary_bounds(
        family, family.critical(level), summary, metric.bases, entry["value"]
    )
    entry["standard_error"] = _bootstrap_se(metric, values, use)
    population = isinstance(metric, PopulationIndex)
    entry["interval_method"] = "normal, bootstrap standard error" if population else _method(family)
    entry["_family"] = family
    entry["_summary"] = summary
    entry["_range"] = value_range(summary, metric.bases)


def _bootstrap_se(metric: PolicyMetric, values: dict[str, MetricValues], use: np.ndarray) -> float | None:
    """The bootstrap standard deviation of the judged value itself.

    The trend tests a change between runs with it: the simultaneous interval is wider than the value's spread.
    """
    replicates = metric.evaluate({b: eligible_only(values[b].replicates, use) for b in metric.bases})
    replicates = replicates[np.isfinite(replicates)]
    return float(np.std(replicates, ddof=1)) if replicates.size > 1 else None


def _undefined_reason(metric: PolicyMetric, summary: str) -> str:
    if summary == "ratio":
        base = metric.bases[0]
        return f"the ratio is undefined: no judged group has a non-zero {base} (e.g. no favourable prediction)"
    return f"{metric.name} is undefined: a component ({', '.join(metric.bases)}) is undefined in a judged group"


def _population_family(v: MetricValues) -> PairFamily | None:
    """A population index (one value) as a one-member family: its bootstrap standard error, normal interval."""
    value = float(v.value[0])
    reps = v.replicates[:, 0]
    reps = reps[np.isfinite(reps)]
    se = float(np.std(reps, ddof=1)) if reps.size > 1 else 0.0
    if not (math.isfinite(value) and se > 0):
        return None
    return PairFamily(np.array([value]), np.array([se]), None, (2,))


def eligible_only(values: np.ndarray, eligible: np.ndarray) -> np.ndarray:
    """The values of the eligible groups; NaN for the others (the values themselves, not a copy, when all are)."""
    if np.all(eligible):
        return values
    return np.where(eligible, values, np.nan)


def matches_any(group: Group, patterns: list[Group]) -> bool:
    """Whether a group matches an override's group pattern ({"gender": "x"} matches every gender=x subgroup)."""
    return any(all(group.get(k) == v for k, v in pattern.items()) for pattern in patterns)


def as_number(value: Any) -> float | None:
    """A JSON number, or None where undefined."""
    number = float(value if np.ndim(value) == 0 else np.asarray(value).reshape(-1)[0])
    return number if math.isfinite(number) else None
