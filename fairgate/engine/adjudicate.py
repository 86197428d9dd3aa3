"""Judge the computed slicings against the policy and assemble the audit result (DESIGN.md, "Verdicts")."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from fairgate.document.result import SCHEMA_VERSION, AuditResult, fairgate_version
from fairgate.engine import diagnostics
from fairgate.engine.cube import Cube
from fairgate.engine.metrics import GroupMetric, policy_metric
from fairgate.engine.slicing import SlicingResult
from fairgate.engine.stats import benjamini_hochberg
from fairgate.mitigation import advice as mitigation
from fairgate.policy.core import Policy

_TOLERANCE = 1e-12


@dataclass(frozen=True)
class ModelInfo:
    name: str = "model"
    version: str = "unversioned"


def adjudicate(
    cube: Cube,
    parts: list[SlicingResult],
    policy: Policy,
    *,
    model: ModelInfo | None = None,
    run_id: str | None = None,
    context: dict[str, Any] | None = None,
) -> AuditResult:
    """Turn computed slicings into the judged, serialisable audit result."""
    model = model or ModelInfo()
    parts = sorted(parts, key=lambda p: (len(p.slicing), p.slicing))
    comparisons = [c for part in parts for c in part.comparisons]
    adjusted = benjamini_hochberg(np.array([_nan(c["p_value"]) for c in comparisons]))
    alpha = policy.statistics.significance_level
    for comparison, p in zip(comparisons, adjusted, strict=True):
        comparison["p_value_adjusted"] = None if np.isnan(p) else float(p)
        comparison["significant"] = bool(np.isfinite(p) and p < alpha)

    results = [_judge(entry, policy) for part in parts for entry in part.results]
    verdict, detail = _verdict(results, policy)
    population = next(p for p in parts if not p.slicing)
    document: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id or uuid.uuid4().hex,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "fairgate_version": fairgate_version(),
        "verdict": verdict,
        "exit_code": 0 if verdict == "pass" or not policy.ci_cd_gate.enabled else 1,
        "model": {"name": model.name, "version": model.version},
        "n_rows": cube.n_rows,
        "weighted": cube.weighted,
        "favorable_label": policy.favorable_label,
        "favorable_label_note": _favourable_note(policy.favorable_label),
        "confidence_level": policy.reporting.confidence_level,
        "n_bootstrap": policy.statistics.n_bootstrap,
        "seed": policy.statistics.seed,
        "use_case": policy.use_case,
        "policy": policy.model_dump(mode="json"),
        "policy_sha256": policy.sha256(),
        "attributes": [
            {
                "name": name,
                "reference_group": _reference_of(parts, name),
                "values": _values_of(parts, name),
                "excluded_missing": cube.excluded_missing.get(name, 0),
            }
            for name in cube.attributes
        ],
        "slicings": [list(p.slicing) for p in parts],
        "groups": [
            {
                "slicing": list(part.slicing),
                "group": group,
                "n": part.n[i],
                "rows": part.rows[i],
                "sufficient": part.sufficient[i],
                "metrics": {name: {k: v[i] for k, v in values.items()} for name, values in part.metrics.items()},
            }
            for part in parts
            for i, group in enumerate(part.groups)
        ],
        "comparisons": comparisons,
        "summaries": [s for part in parts for s in part.summaries],
        "results": results,
        "verdict_detail": detail,
        "diagnostics": {
            "base_rates": diagnostics.base_rates(parts, comparisons, policy),
            "worst_subgroups": diagnostics.worst_subgroups(parts),
            "simpson": diagnostics.simpson_reversals(parts),
            "insufficient_groups": diagnostics.insufficient_groups(parts, policy),
            "excluded_missing": dict(cube.excluded_missing),
        },
        "curves": {
            "roc": [c for part in parts for c in part.roc],
            "calibration": [c for part in parts for c in part.calibration],
        },
        "individual_fairness": {
            name: population.metrics[name]["value"][0] if name in population.metrics else None
            for name in ("theil_index", "generalized_entropy_index")
        },
    }
    document["recommendations"] = mitigation.recommend(
        document, policy.use_case, min_cell_size=policy.reporting.min_cell_size
    )
    for key, value in (context or {}).items():
        if key in document:
            raise ValueError(f"context key {key!r} would overwrite a field of the audit result")
        document[key] = value
    return AuditResult(document)


def _judge(entry: dict[str, Any], policy: Policy) -> dict[str, Any]:
    slicing = tuple(entry["slicing"])
    rule = policy.rule_for(entry["metric"], slicing)
    value, low, high = entry["value"], entry["ci_low"], entry["ci_high"]
    higher = rule.direction == "higher_is_better"
    if value is None:
        status, uncertain = "insufficient_data", False
    else:
        # A value equal to the threshold up to float rounding passes (sums in another order must not flip it).
        passed = value >= rule.threshold - _TOLERANCE if higher else value <= rule.threshold + _TOLERANCE
        status = "pass" if passed else "fail"
        uncertain = low is not None and high is not None and low <= rule.threshold <= high
    judged = {
        "metric": entry["metric"],
        "slicing": entry["slicing"],
        "value": value,
        "ci_low": low,
        "ci_high": high,
        "threshold": rule.threshold,
        "direction": rule.direction,
        "status": status,
        "uncertain": uncertain,
        "critical": rule.critical,
        "worst_group": None,
        "best_group": None,
    }
    base = GroupMetric.registry.get(policy_metric(entry["metric"]).bases[0])
    if "max_group" in entry and base is not None:
        worst_is_min = base.higher_is_better is not False
        judged["worst_group"] = entry["min_group"] if worst_is_min else entry["max_group"]
        judged["best_group"] = entry["max_group"] if worst_is_min else entry["min_group"]
    for key in (
        "n_groups_judged",
        "excluded_groups",
        "insufficient_groups",
        "override_reasons",
        "unavailable",
    ):
        if key in entry:
            judged[key] = entry[key]
    return judged


def _verdict(results: list[dict[str, Any]], policy: Policy) -> tuple[str, dict[str, Any]]:
    gate = policy.ci_cd_gate
    judged = [r for r in results if r["status"] in ("pass", "fail")]
    failed = [r for r in judged if r["status"] == "fail"]
    if not judged:
        fails = True  # nothing could be judged (too few people per group): never a silent pass
    elif gate.fail_on == "any":
        fails = bool(failed)
    elif gate.fail_on == "majority":
        fails = len(failed) * 2 > len(judged)
    else:
        fails = any(r["critical"] for r in failed)
    detail = {
        "fail_on": gate.fail_on,
        "gate_enabled": gate.enabled,
        "critical_metrics": list(gate.critical_metrics),
        "n_results": len(results),
        "n_judged": len(judged),
        "n_failed": len(failed),
        "n_uncertain": sum(r["uncertain"] for r in results),
        "n_insufficient": len(results) - len(judged),
        "nothing_judged": not judged,
        "failed": [
            {
                "metric": r["metric"],
                "slicing": r["slicing"],
                "value": r["value"],
                "threshold": r["threshold"],
                "critical": r["critical"],
            }
            for r in failed
        ],
    }
    return ("fail" if fails else "pass"), detail


def _values_of(parts: list[SlicingResult], attribute: str) -> list[str]:
    """The attribute's values: those in the data and those the policy declares (even without rows)."""
    part = next(p for p in parts if p.slicing == (attribute,))
    return [g[attribute] for g in part.groups]


def _reference_of(parts: list[SlicingResult], attribute: str) -> str | None:
    part = next((p for p in parts if p.slicing == (attribute,)), None)
    return part.reference[attribute] if part and part.reference else None


def _favourable_note(label: int) -> str:
    if label == 1:
        return "The favourable outcome is label 1; selection rate counts predictions of 1."
    return (
        "The favourable outcome is label 0 (e.g. not flagged high-risk): labels and predictions are recoded so "
        "that selection rate, true positive rate and the other rates count the favourable outcome, as AIF360 does."
    )


def _nan(value: float | None) -> float:
    return float("nan") if value is None else value
