"""A ``task: multiclass`` audit, step by step: count -> slicings -> adjudicate (the pipeline's KINDS table).

The judged results are the policy's rules of ``fairgate.engine.multiclass.catalogue``: each per-class summary
on its worst case over classes, and with ``multiclass.adverse_classes`` the ``adverse.<metric>`` rules on the
binary decision "adverse class or not", which the binary engine computes from the cube's binary marginal. All
results are judged together by ``fairgate.engine.adjudicate.judge_results`` (one Holm family per audit), so a
multiclass audit obeys the same statistical rules as a binary one.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from fairgate.document.result import AuditResult
from fairgate.engine.adjudicate import (
    ModelInfo,
    adjust_comparisons,
    document_header,
    group_entry,
    in_slicing_order,
    judge_results,
    verdict_of,
    with_context,
    without_binary_extras,
)
from fairgate.engine.cube import Cube
from fairgate.engine.kinds import KindSteps
from fairgate.engine.metrics import GroupMetric, policy_metric
from fairgate.engine.multiclass.catalogue import ADVERSE_PREFIX, binary_name
from fairgate.engine.multiclass.cube import MulticlassCube, build_multiclass_cube, to_binary_cube
from fairgate.engine.multiclass.metrics import RATES
from fairgate.engine.multiclass.slicing import (
    SUMMARIES,
    ClassSummary,
    MulticlassSlicingResult,
    SummaryValue,
    compute_multiclass_slicing,
    plan_multiclass_slicings,
)
from fairgate.engine.reference import Referenced, attribute_entries, configured_reference, reference_index
from fairgate.engine.slicing import SlicingResult, compute_slicing, skipped_slicings
from fairgate.engine.summaries import value_range
from fairgate.policy.core import MetricRule, Policy
from fairgate.policy.sections import Override
from fairgate.policy.task import MulticlassOptions

#: The per-class rates each group carries in the document, in report order (accuracy is per group).
CLASS_RATES = tuple(name for name, r in RATES.items() if r.per_class)
#: Whether a larger value of a summary's first component is better for the person, for a favourable class and
#: for an adverse one (None: no direction). Being predicted a favourable class is good, an adverse one bad;
#: recall of a favourable class is good (fewer people wrongly given an adverse tier); precision of an adverse
#: class is good (fewer of those given it wrongly).
_HIGHER_IS_BETTER: dict[str, tuple[bool | None, bool | None]] = {
    "selection_rate": (True, False),
    "true_positive_rate": (True, None),
    "positive_predictive_value": (None, True),
}


@dataclass(frozen=True)
class MulticlassParts:
    """The computed slicings of a multiclass audit and, with adverse classes, the binary decision's slicings."""

    slicings: list[MulticlassSlicingResult]
    adverse: list[SlicingResult]


def options_of(policy: Policy) -> MulticlassOptions:
    """The policy's ``multiclass:`` section (a ``task: multiclass`` policy always has one)."""
    if policy.multiclass is None:
        raise ValueError("a multiclass audit needs a policy with task: multiclass and a multiclass: section")
    return policy.multiclass


def count_multiclass(rows: Any, policy: Policy, *, source: str = "the aligned rows") -> MulticlassCube:
    """The multiclass cube of the aligned rows (K x K confusion counts per cell of the attributes)."""
    return build_multiclass_cube(rows, policy, options_of(policy), source=source)


def slicings_multiclass(cube: MulticlassCube, policy: Policy) -> MulticlassParts:
    """Every planned slicing of the cube; with adverse classes also the binary decision's slicings."""
    planned = plan_multiclass_slicings(cube, policy)
    # Slicings are independent (each draws its own replicates) and numpy releases the GIL: two threads.
    with ThreadPoolExecutor(max_workers=2) as pool:
        slicings = list(pool.map(partial(compute_multiclass_slicing, cube, policy=policy), planned))
        adverse: list[SlicingResult] = []
        binary_policy = adverse_policy(policy)
        if binary_policy is not None:
            binary = binary_cube(cube, policy)
            adverse = list(pool.map(partial(compute_slicing, binary, policy=binary_policy), planned))
    return MulticlassParts(slicings, adverse)


def binary_cube(cube: MulticlassCube, policy: Policy) -> Cube:
    """The binary cube of "adverse class or not" (favourable = 1 = not adverse)."""
    return to_binary_cube(cube, options_of(policy).adverse_classes or [])


def adverse_policy(policy: Policy) -> Policy | None:
    """The binary policy the decision "adverse or not" is computed under (None without adverse classes).

    The ``adverse.`` rules without their prefix (thresholds, overrides and critical metrics carried over), and
    favourable label 1: the favourable outcome is a class outside the adverse ones.
    """
    if not options_of(policy).adverse_classes:
        return None
    rules = [
        MetricRule(name=name, threshold=r.threshold, direction=r.direction)
        for r in policy.metrics
        if (name := binary_name(r.name)) is not None
    ]
    overrides = [
        Override.model_validate(o.model_dump() | {"metric": binary_name(o.metric) if o.metric else None})
        for o in policy.overrides
        if o.metric is None or binary_name(o.metric) is not None
    ]
    critical = [n for m in policy.ci_cd_gate.critical_metrics if (n := binary_name(m)) is not None]
    return policy.model_copy(
        update={
            "task": "binary",
            "multiclass": None,
            "favorable_label": 1,
            "metrics": rules or [MetricRule(name="disparate_impact_ratio", threshold=0.8)],
            "overrides": overrides,
            "ci_cd_gate": policy.ci_cd_gate.model_copy(update={"critical_metrics": critical}),
        }
    )


# ----------------------------------------------------------------------------------------------- adjudication
def adjudicate_multiclass(
    cube: MulticlassCube,
    parts: MulticlassParts,
    policy: Policy,
    *,
    model: ModelInfo | None = None,
    run_id: str | None = None,
    context: dict[str, Any] | None = None,
) -> AuditResult:
    """Judge the multiclass rules and the ``adverse.`` rules together and assemble the multiclass document."""
    model = model or ModelInfo()
    slicings = in_slicing_order(parts.slicings)
    adverse = in_slicing_order(parts.adverse)
    comparisons = [c for part in adverse for c in part.comparisons]
    adjust_comparisons(comparisons, policy.statistics.significance_level)  # under the binary names
    entries = [*_class_entries(slicings, policy), *_adverse_entries(adverse, policy)]
    results = judge_results(entries, policy)
    verdict, detail = verdict_of(results, policy)
    options = options_of(policy)
    document: dict[str, Any] = {
        **document_header(cube.n_rows, _weighted(cube), policy, model, run_id, verdict),
        "attributes": _attributes(cube, slicings, policy),
        "slicings": [list(p.slicing) for p in slicings],
        "groups": _groups(slicings, adverse),
        "comparisons": [_prefixed(c) for c in comparisons],
        "summaries": [_prefixed(s) for part in adverse for s in part.summaries],
        "results": results,
        "verdict_detail": detail,
        "diagnostics": _diagnostics(cube, slicings, policy),
        **without_binary_extras(),
        "multiclass": {
            "classes": list(options.classes),
            "adverse_classes": options.adverse_classes,
            "rates": list(CLASS_RATES),
            "groups": [_class_group(part, i) for part in slicings for i in range(len(part.groups))],
            "summaries": [_class_summary(s) for part in slicings for s in part.summaries],
        },
    }
    return with_context(document, context)


def _class_entries(slicings: list[MulticlassSlicingResult], policy: Policy) -> list[dict[str, Any]]:
    """One entry per (per-class rule, slicing with attributes): the worst case over classes, as judged."""
    entries = []
    rules = [r.name for r in policy.metrics if binary_name(r.name) is None]
    for part in slicings:
        if not part.slicing:
            continue  # the population has one group: nothing to compare
        for name in rules:
            summary = part.summary(name)
            worst, best = _worst_and_best(summary, policy)
            value = summary.worst
            entry: dict[str, Any] = {
                "metric": name,
                "slicing": list(part.slicing),
                "value": value.value,
                "ci_low": value.ci_low,
                "ci_high": value.ci_high,
                "_family": value.family,
                "_summary": SUMMARIES[name][1],
                "_range": value_range(SUMMARIES[name][1], SUMMARIES[name][0]),
                "n_groups_judged": summary.n_groups_judged,
                "interval_method": summary.interval_method,
                "worst_group": worst,
                "best_group": best,
            }
            if value.reason is not None:
                entry["reason"] = value.reason
            entries.append(entry)
    return entries


def _worst_and_best(summary: ClassSummary, policy: Policy) -> tuple[dict[str, str] | None, dict[str, str] | None]:
    """The worst- and best-off groups on the worst class's first component, where the direction is known.

    Whether a larger value is better for the person depends on whether the class is adverse: without adverse
    classes (or where the rate has no direction for that class) no group is named worst.
    """
    worst = summary.worst
    adverse = options_of(policy).adverse_classes
    if not adverse or summary.worst_class is None:
        return None, None
    favourable, unfavourable = _HIGHER_IS_BETTER.get(summary.bases[0], (None, None))
    higher = unfavourable if summary.worst_class in adverse else favourable
    if higher is None:
        return None, None
    return (worst.min_group, worst.max_group) if higher else (worst.max_group, worst.min_group)


def _adverse_entries(adverse: list[SlicingResult], policy: Policy) -> list[dict[str, Any]]:
    """The binary decision's results under their ``adverse.`` names, worst and best group named."""
    judged = {r.name for r in policy.metrics}
    entries = []
    for part in adverse:
        for result in part.results:
            if ADVERSE_PREFIX + result["metric"] not in judged:
                continue  # computed only so that the groups carry the decision's rates
            entry = dict(result)
            name = entry["metric"]
            entry["metric"] = ADVERSE_PREFIX + name
            maximum, minimum = entry.pop("max_group", None), entry.pop("min_group", None)
            base = GroupMetric.registry.get(policy_metric(name).bases[0])
            worst_is_min = base is None or base.higher_is_better is not False
            entry["worst_group"] = minimum if worst_is_min else maximum
            entry["best_group"] = maximum if worst_is_min else minimum
            entries.append(entry)
    return entries


def _prefixed(entry: dict[str, Any]) -> dict[str, Any]:
    return {**entry, "metric": ADVERSE_PREFIX + entry["metric"]}


def _weighted(cube: MulticlassCube) -> bool:
    cells = cube.cells
    return not (
        cells["__weight"].equals(cells["__rows"].cast(float)) and cells["__weight_sq"].equals(cells["__weight"])
    )


def _attributes(cube: MulticlassCube, slicings: list[MulticlassSlicingResult], policy: Policy) -> list[dict[str, Any]]:
    """Multiclass compares groups across classes, not with a reference; the block names it by the one rule."""
    referenced = [
        Referenced(
            p.slicing,
            p.groups,
            p.groups[reference_index(p.groups, configured_reference(tuple(p.slicing), policy), np.array(p.n))],
        )
        for p in slicings
        if len(p.slicing) == 1 and p.groups
    ]
    return attribute_entries(cube.attributes, referenced, cube.excluded_missing)


def _estimate(values: dict[str, list[Any]], g: int, c: int | None = None) -> dict[str, float | None]:
    parts = ("value", "ci_low", "ci_high")
    if c is None:
        return {part: values[part][g] for part in parts}
    return {part: values[part][g][c] for part in parts}


def _groups(slicings: list[MulticlassSlicingResult], adverse: list[SlicingResult]) -> list[dict[str, Any]]:
    """The shared ``groups``: accuracy, each class's rates as ``<rate>[<class>]``, the adverse decision's rates."""
    binary = {(tuple(p.slicing), tuple(sorted(g.items()))): (p, i) for p in adverse for i, g in enumerate(p.groups)}
    entries = []
    for part in slicings:
        for g, group in enumerate(part.groups):
            metrics = {"accuracy": _estimate(part.accuracy, g)}
            for name in CLASS_RATES:
                for c, label in enumerate(part.classes):
                    metrics[f"{name}[{label}]"] = _estimate(part.metrics[name], g, c)
            found = binary.get((tuple(part.slicing), tuple(sorted(group.items()))))
            if found is not None:
                bpart, i = found
                for name, values in bpart.metrics.items():
                    metrics[ADVERSE_PREFIX + name] = {k: v[i] for k, v in values.items()}
            entries.append(group_entry(part, g, group, metrics))
    return entries


def _class_group(part: MulticlassSlicingResult, g: int) -> dict[str, Any]:
    return {
        "slicing": list(part.slicing),
        "group": part.groups[g],
        "n": part.n[g],
        "rows": part.rows[g],
        "sufficient": part.sufficient[g],
        "confusion": part.confusion[g],
        "rates": {
            name: [_estimate(part.metrics[name], g, c) for c in range(len(part.classes))] for name in CLASS_RATES
        },
        "accuracy": _estimate(part.accuracy, g),
    }


def _summary_value(value: SummaryValue) -> dict[str, Any]:
    return {
        "value": value.value,
        "ci_low": value.ci_low,
        "ci_high": value.ci_high,
        "reason": value.reason,
        "max_group": value.max_group,
        "min_group": value.min_group,
    }


def _class_summary(summary: ClassSummary) -> dict[str, Any]:
    return {
        "metric": summary.metric,
        "slicing": summary.slicing,
        "summary": summary.summary,
        "bases": summary.bases,
        "worst": _summary_value(summary.worst),
        "worst_class": summary.worst_class,
        "by_class": {label: _summary_value(v) for label, v in summary.by_class.items()},
        "n_groups_judged": summary.n_groups_judged,
        "interval_method": summary.interval_method,
    }


def _diagnostics(cube: MulticlassCube, slicings: list[MulticlassSlicingResult], policy: Policy) -> dict[str, Any]:
    minimum = policy.intersectional_analysis.min_group_size
    insufficient = [
        {"slicing": list(p.slicing), "group": group, "n": p.n[g], "min_group_size": minimum}
        for p in slicings
        if p.slicing
        for g, group in enumerate(p.groups)
        if not p.sufficient[g]
    ]
    # The binary marginal has the same attribute cells: it counts the groups of each candidate slicing.
    marginal = to_binary_cube(cube, [cube.classes[-1]])
    return {
        "base_rates": class_base_rates(cube, [p.slicing for p in slicings if len(p.slicing) == 1], policy),
        "worst_subgroups": [],
        "simpson": [],
        "insufficient_groups": insufficient,
        "excluded_missing": dict(cube.excluded_missing),
        "skipped_slicings": skipped_slicings(marginal, policy),
    }


def class_base_rates(cube: MulticlassCube, singles: list[Any], policy: Policy) -> list[dict[str, Any]]:
    """Each class's base rates against the rest, per single attribute, with the binary audit's test and note.

    The share of each group whose true class is ``c`` is the base rate of the binary decision "class c or not";
    its test of equal base rates and the impossibility note are the binary audit's own
    (:func:`fairgate.engine.diagnostics.base_rates`), read per class (``outcome_class``).
    """
    from fairgate.engine import diagnostics  # the binary diagnostics, shared

    out = []
    for klass in cube.classes:
        binary = to_binary_cube(cube, [c for c in cube.classes if c != klass])  # favourable: class ``klass``
        one = _one_vs_rest_policy(policy)
        parts = [compute_slicing(binary, slicing, one) for slicing in singles]
        out += [entry | {"outcome_class": klass} for entry in diagnostics.base_rates(parts, [], one)]
    return out


def _one_vs_rest_policy(policy: Policy) -> Policy:
    """The binary policy a class's one-vs-rest base rates are computed under (no rule of its own is judged)."""
    return policy.model_copy(
        update={
            "task": "binary",
            "multiclass": None,
            "favorable_label": 1,
            "metrics": [MetricRule(name="demographic_parity_difference", threshold=1.0)],
            "overrides": [],
            "ci_cd_gate": policy.ci_cd_gate.model_copy(update={"critical_metrics": []}),
        }
    )


#: The kind registry's entry point (fairgate/engine/kinds.py).
STEPS = KindSteps(count=count_multiclass, slicings=slicings_multiclass, adjudicate=adjudicate_multiclass)
