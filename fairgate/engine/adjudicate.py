"""Judge the computed slicings against the policy and assemble the audit result (DESIGN.md, "Verdicts")."""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from fairgate.document.result import SCHEMA_VERSION, AuditResult, fairgate_version
from fairgate.engine import diagnostics
from fairgate.engine.collection import paused_collection
from fairgate.engine.comparison_families import adjust_comparisons as adjust_comparisons
from fairgate.engine.cube import Cube
from fairgate.engine.kinds import kind_of
from fairgate.engine.label_checks import LabelEvidence, without_label_numbers
from fairgate.engine.metrics import GroupMetric, policy_metric
from fairgate.engine.reference import attribute_entries
from fairgate.engine.slicing import SlicingResult, skipped_slicings
from fairgate.engine.stats import PairFamily, holm, holm_multipliers
from fairgate.engine.summaries import within_range
from fairgate.engine.text import fmt, interval_text, p_is, policy_labels
from fairgate.mitigation import advice as mitigation
from fairgate.policy.core import Policy, ResolvedRule
from fairgate.verdicts import exit_code_for

if TYPE_CHECKING:  # the individual engine loads scikit-learn: only audits with features import it
    from fairgate.engine.individual import IndividualResult

_TOLERANCE = 1e-12


@dataclass(frozen=True)
class ModelInfo:
    """The audited model's name and version, as the document and the audit trail record them."""

    name: str = "model"
    version: str = "unversioned"


@paused_collection
def adjudicate(
    cube: Cube,
    parts: list[SlicingResult],
    policy: Policy,
    *,
    model: ModelInfo | None = None,
    run_id: str | None = None,
    context: dict[str, Any] | None = None,
    individual: IndividualResult | None = None,
    labels: LabelEvidence | None = None,
) -> AuditResult:
    """Turn computed slicings into the judged, serialisable audit result.

    ``individual``: the audit's individual-fairness checks (consistency, counterfactual flips); their entries are
    judged in the same Holm family as every other result, their block joins ``individual_fairness``.
    ``labels``: estimated results (no labels yet) and label-bias findings (external labels), engine/label_checks.py.
    """
    model = model or ModelInfo()
    parts = in_slicing_order(parts)
    level = policy.statistics.significance_level
    for part in parts:  # each slicing's families, where compute_slicing did not adjust them at this level
        if getattr(part, "adjusted_at", None) != level:
            adjust_comparisons(part.comparisons, level)
    comparisons = [c for part in parts for c in part.comparisons]

    entries = [entry for part in parts for entry in part.results] + (individual.entries if individual else [])
    labels = labels or LabelEvidence()
    results = judge_results(labels.judged_entries(entries, policy), policy)
    results += judge_results(labels.report_only(policy), policy)  # their own family: never in the verdict
    verdict, detail = verdict_of(labels.counted(results, policy), policy)
    document: dict[str, Any] = {
        **document_header(cube.n_rows, cube.weighted, policy, model, run_id, verdict),
        "attributes": _attributes(cube, parts),
        "slicings": [list(p.slicing) for p in parts],
        "groups": group_entries(parts),
        "comparisons": comparisons,
        "summaries": [s for part in parts for s in part.summaries],
        "results": results,
        "verdict_detail": detail,
        "diagnostics": _diagnostics(cube, parts, comparisons, policy),
        "curves": {
            "roc": [c for part in parts for c in part.roc],
            "calibration": [c for part in parts for c in part.calibration],
        },
        "individual_fairness": _individual_fairness(next(p for p in parts if not p.slicing))
        | (individual.block if individual else {}),
    }
    document |= labels.blocks(policy, document)
    if labels.labels_absent:
        without_label_numbers(document)
    document["recommendations"] = mitigation.recommend(
        document, policy.use_case, min_cell_size=policy.reporting.min_cell_size
    )
    return with_context(document, context)


def with_context(document: dict[str, Any], context: dict[str, Any] | None) -> AuditResult:
    """The document with the pipeline's context (inputs, join, validation, ...) added; never overwriting."""
    for key, value in (context or {}).items():
        if key in document:
            raise ValueError(f"context key {key!r} would overwrite a field of the audit result")
        document[key] = value
    return AuditResult(document)


def without_binary_extras() -> dict[str, Any]:
    """The shared keys only a binary audit fills, empty.

    ROC and calibration curves, inequality indices and mitigation advice: a multiclass, regression or ranking
    document has them in the same shape, empty.
    """
    return {
        "curves": {"roc": [], "calibration": []},
        "individual_fairness": {"theil_index": None, "generalized_entropy_index": None},
        "recommendations": [],
    }


def kind_diagnostics(
    parts: Sequence[Any], policy: Policy, *, excluded_missing: dict[str, int], skipped: list[dict[str, Any]]
) -> dict[str, Any]:
    """The ``diagnostics`` of a task without worst subgroups or Simpson checks (regression, ranking).

    The outcome's level per group in place of base rates (the kind's ``outcome_level``), the groups under
    ``min_group_size``, the rows left out for a missing attribute, the slicings left out.
    """
    level = kind_of(policy.task).outcome_level
    minimum = policy.intersectional_analysis.min_group_size
    insufficient = [
        {"slicing": list(p.slicing), "group": group, "n": p.n[g], "min_group_size": minimum}
        for p in parts
        if p.slicing
        for g, group in enumerate(p.groups)
        if not p.sufficient[g]
    ]
    return {
        "base_rates": [] if level is None else diagnostics.outcome_levels(parts, *level),
        "worst_subgroups": [],
        "simpson": [],
        "insufficient_groups": insufficient,
        "excluded_missing": dict(excluded_missing),
        "skipped_slicings": skipped,
    }


def shared_comparison(
    comparison: dict[str, Any], slicing: Sequence[str], method: str, *, sufficient: bool
) -> dict[str, Any]:
    """An engine's group-against-reference comparison in the document's shared ``Comparison`` shape.

    The engines give ``difference_ci`` and ``ratio_ci`` as pairs; the document has their ends as keys.
    """
    c = comparison
    return {
        "metric": c["metric"],
        "slicing": list(slicing),
        "group": c["group"],
        "reference": c["reference"],
        "difference": c["difference"],
        "difference_ci_low": c["difference_ci"][0],
        "difference_ci_high": c["difference_ci"][1],
        "ratio": c["ratio"],
        "ratio_ci_low": c["ratio_ci"][0],
        "ratio_ci_high": c["ratio_ci"][1],
        "p_value": c["p_value"],
        "method": method,
        "sufficient": sufficient,
    }


# ----------------------------------------------------------------------------------------------- the document
def document_header(
    n_rows: int, weighted: bool, policy: Policy, model: ModelInfo, run_id: str | None, verdict: str
) -> dict[str, Any]:
    """The document's opening fields: identity, verdict, exit code, model, data size and the policy as applied.

    Every task's document opens with them; ``task`` is written only for a non-binary audit (a binary document
    is the same as before the key existed, and readers take a missing ``task`` as binary).
    """
    header: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id or uuid.uuid4().hex,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "fairgate_version": fairgate_version(),
        "verdict": verdict,
        "exit_code": exit_code_for(
            verdict, gate_enabled=policy.ci_cd_gate.enabled, insufficient=policy.ci_cd_gate.insufficient
        ),
        "model": {"name": model.name, "version": model.version},
        "n_rows": n_rows,
        "weighted": weighted,
        "favorable_label": policy.favorable_label,
        "favorable_label_note": _favourable_note(policy.favorable_label),
        "outcomes": {
            "favorable_label": policy.favorable_label,
            **policy.outcomes.model_dump(mode="json"),
            "named": policy.outcomes.named,
        },
        "confidence_level": policy.reporting.confidence_level,
        "n_bootstrap": policy.statistics.n_bootstrap,
        "seed": policy.statistics.seed,
        "use_case": policy.use_case,
        "policy": policy.model_dump(mode="json"),
        "policy_sha256": policy.sha256(),
        "task": policy.task,  # every kind's document names its kind (binary included), so readers need no default
    }
    return header


def _attributes(cube: Cube, parts: list[SlicingResult]) -> list[dict[str, Any]]:
    return attribute_entries(cube.attributes, parts, cube.excluded_missing)


Part = TypeVar("Part")


def in_slicing_order(parts: Sequence[Part]) -> list[Part]:
    """Any task's slicing results in the document's order: single attributes, then pairs, then triples, each by name.

    >>> from types import SimpleNamespace as S
    >>> [p.slicing for p in in_slicing_order([S(slicing=("race", "sex")), S(slicing=("sex",)), S(slicing=())])]
    [(), ('sex',), ('race', 'sex')]
    """
    return sorted(parts, key=lambda part: (len(part.slicing), part.slicing))  # type: ignore[attr-defined]


def group_entries(parts: Sequence[Any]) -> list[dict[str, Any]]:
    """One entry per group of every slicing: size, sufficiency and every group metric with its interval.

    Any task's slicing results with ``slicing``, ``groups``, ``n``, ``rows``, ``sufficient`` and ``metrics``.
    """
    entries = []
    for part in parts:
        columns = [(name, _estimates(values, len(part.groups))) for name, values in part.metrics.items()]
        for i, group in enumerate(part.groups):
            entries.append(group_entry(part, i, group, {name: estimates[i] for name, estimates in columns}))
    return entries


def group_entry(part: Any, i: int, group: dict[str, str], metrics: dict[str, Any]) -> dict[str, Any]:
    """The document's entry of a slicing's ``i``-th group (every kind's ``groups`` shape) with its metrics."""
    return {
        "slicing": list(part.slicing),
        "group": group,
        "n": part.n[i],
        "rows": part.rows[i],
        "sufficient": part.sufficient[i],
        "metrics": metrics,
    }


def _estimates(values: dict[str, Sequence[Any]], n_groups: int) -> list[dict[str, Any]]:
    """One group metric's ``{key: values}`` as one ``{key: value}`` per group (value, ci_low, ci_high, ...)."""
    if tuple(values) == ("value", "ci_low", "ci_high"):  # the usual keys: the dicts written out are built fastest
        return [
            {"value": v, "ci_low": low, "ci_high": high}
            for v, low, high in zip(values["value"], values["ci_low"], values["ci_high"], strict=True)
        ]
    keys = tuple(values)
    return (
        [dict(zip(keys, row, strict=True)) for row in zip(*values.values(), strict=True)]
        if keys
        else [{} for _ in range(n_groups)]
    )


def _diagnostics(
    cube: Cube, parts: list[SlicingResult], comparisons: list[dict[str, Any]], policy: Policy
) -> dict[str, Any]:
    return {
        "base_rates": diagnostics.base_rates(parts, comparisons, policy),
        "worst_subgroups": diagnostics.worst_subgroups(parts, policy_labels(policy)),
        "simpson": diagnostics.simpson_reversals(
            parts, alpha=policy.statistics.significance_level, labels=policy_labels(policy)
        ),
        "insufficient_groups": diagnostics.insufficient_groups(parts, policy),
        "excluded_missing": dict(cube.excluded_missing),
        "skipped_slicings": skipped_slicings(cube, policy),
    }


def _individual_fairness(population: SlicingResult) -> dict[str, float | None]:
    return {
        name: population.metrics[name]["value"][0] if name in population.metrics else None
        for name in ("theil_index", "generalized_entropy_index")
    }


# ----------------------------------------------------------------------------------------------- comparisons
# ----------------------------------------------------------------------------------------------- judging
def judge_results(entries: list[dict[str, Any]], policy: Policy) -> list[dict[str, Any]]:
    """Judge every result; the gate's family-wise error over the whole audit is at most ``statistics.alpha``.

    Each result with an interval has a one-sided max-t p-value for "the disparity is beyond the threshold";
    Holm's step-down over all of them decides which lie beyond at the audit-wide level (``fail``).

    An entry is one (metric, slicing): ``metric, slicing, value, ci_low, ci_high``, ``_family`` (the
    simultaneous pairwise differences, ``fairgate.engine.stats.PairFamily``, or None when there is no interval),
    ``_summary`` (``difference`` or ``ratio``), ``n_groups_judged``, ``interval_method`` and, for every task but
    binary, ``worst_group`` and ``best_group``; optionally ``reason`` (why there is no interval) and
    ``excluded_groups``. Every task's results are judged by these same rules.
    """
    alpha = policy.statistics.alpha
    point = policy.ci_cd_gate.decision == "point_estimate"
    rules = [policy.rule_for(entry["metric"], tuple(entry["slicing"])) for entry in entries]
    tests = [_violation_test(entry, rule) for entry, rule in zip(entries, rules, strict=True)]
    raw = np.array([np.nan if t is None else t[0] for t in tests])
    adjusted = holm(raw)
    multipliers = holm_multipliers(raw)
    n_tests = int(np.isfinite(raw).sum())
    judged = []
    for entry, rule, test, p, p_adj, multiplier in zip(entries, rules, tests, raw, adjusted, multipliers, strict=True):
        result = _judge(entry, rule)
        family: PairFamily | None = entry.get("_family")
        if test is not None and family is not None:
            _, threshold = test
            # The simultaneous interval at 1 - alpha, which a pass needs within the threshold (none for the point).
            simultaneous = None if point else family.bounds(family.critical(1.0 - alpha))
            result["p_value_violation"] = float(p)
            result["p_value_violation_adjusted"] = float(p_adj)
            fails = float(p_adj) <= alpha
            result.update(
                decision_interval(
                    family,
                    entry["_summary"],
                    alpha / float(multiplier),
                    policy,
                    (threshold, fails),
                    entry.get("_range", default_range(entry["_summary"])),
                    simultaneous,
                )
            )
            level = 1.0 - alpha / max(n_tests, 1)
            detectable = family.detectable(threshold, level)
            result["detectable_disparity"] = _on_value_scale(detectable, entry["_summary"])
            status, reason = _status(
                result, None if simultaneous is None else simultaneous[1], threshold, float(p_adj), policy
            )
            if status == "pass" and entry.get("pass_withheld"):  # evidence that can fail but never pass (proxy)
                status, reason = "inconclusive", f"{reason}; but {entry['pass_withheld']}"
        else:
            status, reason = "insufficient_data", entry.get("reason") or "the value is undefined"
        result["status"], result["reason"] = status, reason
        judged.append(result)
    return judged


def decision_interval(
    family: PairFamily,
    summary: str,
    violation_level: float,
    policy: Policy,
    decided: tuple[float, bool] | None = None,
    limits: tuple[float, float] | None = None,
    simultaneous: tuple[float, float] | None = None,
) -> dict[str, Any]:
    """The interval the gate decides a result on, on the result's own scale (``decision_ci_low/high``).

    Its end on the side of a violation is the one-sided bound the Holm-adjusted test inverts, at one-sided level
    1 - ``violation_level`` (alpha over the result's Holm multiplier, ``stats.holm_multipliers``): the result
    fails exactly when that end lies beyond the threshold. Its other end is the bound a pass needs within the
    threshold (the simultaneous interval at 1 - alpha). The reporting interval (``ci_low``/``ci_high``, at
    ``reporting.confidence_level``) can lie wholly beyond the threshold while this one does not: with many
    results judged, Holm asks for more. None under ``decision: point_estimate`` (the point decides). ``decided``:
    the threshold on the family's scale and whether the result fails, so that exact small-count tails lower the
    end on the right side of it (``PairFamily.exact_beyond_bound``). ``limits``: the value's range
    (``summaries.value_range``), which the ends never pass (a gap of rates beyond 1 is no bound at all); the test
    is unchanged by the cut, as the threshold lies inside the range. ``simultaneous``: the family's bounds at
    1 - alpha, when already found.
    """
    if policy.ci_cd_gate.decision == "point_estimate" or not hasattr(family, "beyond_bound"):
        return {"decision_ci_low": None, "decision_ci_high": None, "decision_level": None}
    lower = float(family.beyond_bound(violation_level))  # the family's scale: larger is worse
    if decided is not None and hasattr(family, "exact_beyond_bound"):
        lower = float(family.exact_beyond_bound(lower, violation_level, *decided))
    _, upper = simultaneous or family.bounds(family.critical(1.0 - policy.statistics.alpha))
    if summary == "ratio":
        low, high = math.exp(-upper), math.exp(-lower)
    elif summary == "minimum":
        low, high = -upper, -lower
    else:
        low, high = lower, upper
    low, high = within_range(low, high, limits)
    return {"decision_ci_low": low, "decision_ci_high": high, "decision_level": 1.0 - violation_level}


def default_range(summary: str) -> tuple[float, float] | None:
    """A result's range when its kind did not state it (``_range``).

    A ratio of the smallest to the largest value lies in [0, 1]; other summaries (signed levels, regression gaps)
    are not cut.
    """
    return (0.0, 1.0) if summary == "ratio" else None


def _violation_test(entry: dict[str, Any], rule: ResolvedRule) -> tuple[float, float] | None:
    """(one-sided p-value, threshold on the family's scale) of "the disparity is beyond the threshold"."""
    family: PairFamily | None = entry.get("_family")
    if family is None:
        return None
    threshold = rule.threshold
    if entry["_summary"] == "ratio":
        if threshold <= 0:
            return 1.0, math.inf  # a ratio is never below 0
        threshold = -math.log(threshold)  # ratio < t  <=>  log range > -log t
    elif entry["_summary"] == "minimum":  # a level that must stay above t, judged negated (engine/individual)
        threshold = -threshold
    return family.p_beyond(threshold), threshold


def _on_value_scale(value: float, summary: str) -> float:
    """A quantity on the family's (larger is worse) scale back on the result's own scale."""
    if summary == "ratio":
        return math.exp(-value)
    return -value if summary == "minimum" else value


def _status(
    result: dict[str, Any], upper: float | None, threshold: float, p_adjusted: float, policy: Policy
) -> tuple[str, str]:
    """Status and its reason from the interval (or, for ``point_estimate``, the point) against the threshold.

    ``upper``: the upper end of the family's simultaneous interval at 1 - alpha (on the family's scale; None
    under ``point_estimate``).
    """
    alpha = policy.statistics.alpha
    # Numbers as every report prints them (the one formatter: rounded once, interval ends outward).
    shown = f"{fmt(result['value'])} (interval {interval_text(result['ci_low'], result['ci_high'])})"
    if policy.ci_cd_gate.decision == "point_estimate":
        higher = result["direction"] == "higher_is_better"
        value, limit = result["value"], result["threshold"]
        passed = value >= limit - _TOLERANCE if higher else value <= limit + _TOLERANCE
        word = "within" if passed else "beyond"
        return ("pass" if passed else "fail"), (
            f"point estimate {fmt(value)} is {word} the threshold {limit:g} (decision: point_estimate, which "
            "fails fair models more often the more groups are compared)"
        )
    if p_adjusted <= alpha:
        return "fail", (
            f"{shown}: the disparity is beyond the threshold {result['threshold']:g} with audit-wide "
            f"confidence {1 - alpha:g} ({_p_reading(p_adjusted, alpha)})"
        )
    if upper is not None and upper <= threshold + _TOLERANCE:
        return "pass", (
            f"{shown}: the disparity is within the threshold {result['threshold']:g} with confidence {1 - alpha:g}"
        )
    return "inconclusive", (
        f"{shown}: the data can neither show a disparity beyond the threshold {result['threshold']:g} nor rule "
        f"one out ({_p_reading(p_adjusted, alpha)}); a disparity of {fmt(result['detectable_disparity'])} "
        "would be detected with 80% power"
    )


def _p_reading(p_adjusted: float, alpha: float) -> str:
    """The adjusted p-value with its reading (a bare "Holm-adjusted p = 1" tells a reader nothing).

    >>> _p_reading(1.0, 0.05)
    'Holm-adjusted p = 1.000; under 0.05 would show the disparity beyond the threshold'
    """
    return f"Holm-adjusted {p_is(p_adjusted)}; under {alpha:g} would show the disparity beyond the threshold"


def _judge(entry: dict[str, Any], rule: ResolvedRule) -> dict[str, Any]:
    value, low, high = entry["value"], entry["ci_low"], entry["ci_high"]
    judged = {
        "metric": entry["metric"],
        "slicing": entry["slicing"],
        "value": value,
        "ci_low": low,
        "ci_high": high,
        "threshold": rule.threshold,
        "direction": rule.direction,
        "status": "insufficient_data",
        "reason": None,
        # Kept for compatibility: the interval at the reporting level contains the threshold.
        "uncertain": low is not None and high is not None and low <= rule.threshold <= high,
        "critical": rule.critical,
        "worst_group": None,
        "best_group": None,
        "decision_ci_low": None,
        "decision_ci_high": None,
        "decision_level": None,
    }
    if "worst_group" in entry:  # the task's engine named them (every task but binary)
        judged["worst_group"], judged["best_group"] = entry["worst_group"], entry.get("best_group")
    base = GroupMetric.registry.get(policy_metric(entry["metric"]).bases[0]) if "max_group" in entry else None
    if base is not None:
        worst_is_min = base.higher_is_better is not False
        judged["worst_group"] = entry["min_group"] if worst_is_min else entry["max_group"]
        judged["best_group"] = entry["max_group"] if worst_is_min else entry["min_group"]
    for key in (
        "n_groups_judged",
        "excluded_groups",
        "insufficient_groups",
        "override_reasons",
        "unavailable",
        "interval_method",
        "standard_error",
        "judged",
        "naive",
        "estimated",
        "estimate_method",
        "reference_run_id",
        "estimate_reasons",
    ):
        if key in entry:
            judged[key] = entry[key]
    return judged


def _failing(results: list[dict[str, Any]], decision: str) -> list[dict[str, Any]]:
    """The results that fail the gate under the decision rule (inconclusive fails only under compliance)."""
    failing = ("fail", "inconclusive") if decision == "evidence_of_compliance" else ("fail",)
    return [r for r in results if r["status"] in failing]


def verdict_of(results: list[dict[str, Any]], policy: Policy) -> tuple[str, dict[str, Any]]:
    """The audit's verdict from its judged results under ``ci_cd_gate`` (fail_on, decision), and its detail.

    ``insufficient`` when no result could be judged (``fairgate.verdicts``): neither a pass nor a fail.
    """
    gate = policy.ci_cd_gate
    judged = [r for r in results if r["status"] in ("pass", "fail", "inconclusive")]
    failed = _failing(judged, gate.decision)
    if gate.fail_on == "any":
        fails = bool(failed)
    elif gate.fail_on == "majority":
        fails = len(failed) * 2 > len(judged)
    else:
        fails = any(r["critical"] for r in failed)
    inconclusive = [r for r in judged if r["status"] == "inconclusive"]
    detail = {
        "fail_on": gate.fail_on,
        "decision": gate.decision,
        "alpha": policy.statistics.alpha,
        "multiplicity": "holm",
        "n_tests": sum("p_value_violation" in r for r in results),
        "gate_enabled": gate.enabled,
        "critical_metrics": list(gate.critical_metrics),
        "n_results": len(results),
        "n_judged": len(judged),
        "n_failed": len(failed),
        "n_inconclusive": len(inconclusive),
        "n_uncertain": sum(r["uncertain"] for r in results),
        "n_insufficient": len(results) - len(judged),
        "nothing_judged": not judged,
        "insufficient": gate.insufficient,
        "failed": [_brief(r) for r in failed],
        "inconclusive": [_brief(r) for r in inconclusive],
    }
    if not judged:  # nothing could be judged (too few people per group): never a pass, nor evidence of a fail
        return "insufficient", detail
    return ("fail" if fails else "pass"), detail


def _brief(result: dict[str, Any]) -> dict[str, Any]:
    keys = ("metric", "slicing", "value", "ci_low", "ci_high", "threshold", "critical", "status")
    return {k: result[k] for k in keys}


def _favourable_note(label: int) -> str:
    if label == 1:
        return "The favourable outcome is label 1; selection rate counts predictions of 1."
    return (
        "The favourable outcome is label 0 (e.g. not flagged high-risk): labels and predictions are recoded so "
        "that selection rate, true positive rate and the other rates count the favourable outcome, as AIF360 does."
    )
