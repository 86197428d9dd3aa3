"""Recommendations: for each failed metric, the mitigation that fits it, with the reason; and which metric to
prioritise for the use case.

Pure: reads the audit result document (``AuditResult.to_dict()``) and returns plain dicts, so the same advice
goes into the JSON document, the report and the email.

>>> doc = {"results": [{"metric": "equal_opportunity_difference", "slicing": ["sex"], "value": 0.21,
...                     "threshold": 0.1, "direction": "lower_is_better", "status": "fail",
...                     "uncertain": False, "worst_group": {"sex": "Female"}}]}
>>> recs = recommend(doc, "hiring")
>>> [(r["kind"], r.get("technique")) for r in recs]
[('mitigation', 'group_specific_thresholds'), ('use_case_priority', None)]
"""

from __future__ import annotations

from typing import Any

# Why each technique fits: one place, so reports and emails give the same reasons.
_TECHNIQUES: dict[str, dict[str, str]] = {
    "reweighing": {
        "title": "Reweigh the training data",
        "stage": "pre-processing",
        "how": "Weight each (group, label) cell so group and label are independent in the training data, "
        "then "
        "retrain (AIF360 Reweighing; Kamiran & Calders, 2012). The model, features and deployment stay the "
        "same.",
    },
    "group_specific_thresholds": {
        "title": "Use group-specific decision thresholds",
        "stage": "post-processing",
        "how": "Keep the model's scores and pick one threshold per group so the constrained rate matches "
        "(Fairlearn ThresholdOptimizer; Hardt, Price & Srebro, 2016). Check that using the attribute at "
        "decision "
        "time is lawful for this use case; otherwise prefer constrained retraining.",
    },
    "constrained_retraining": {
        "title": "Retrain under a fairness constraint",
        "stage": "in-processing",
        "how": "Retrain with the parity constraint in the objective (Fairlearn ExponentiatedGradient or "
        "GridSearch; Agarwal et al., 2018) and pick a point on the accuracy/fairness trade-off curve. The "
        "attribute is needed at training time only.",
    },
}

# metric -> (primary technique, constraint name for the tools, what the failure means)
_BY_METRIC: dict[str, tuple[str, str, str]] = {
    "demographic_parity_difference": (
        "reweighing",
        "demographic_parity",
        "groups receive the favourable outcome at different rates; when that gap comes from the training "
        "labels, "
        "reweighing removes the association between group and label before the model learns it",
    ),
    "disparate_impact_ratio": (
        "reweighing",
        "demographic_parity",
        "the least-favoured group's selection rate is below the required fraction of the most-favoured "
        "group's "
        "(the four-fifths rule); reweighing the training data addresses the label imbalance that usually "
        "causes it",
    ),
    "equal_opportunity_difference": (
        "group_specific_thresholds",
        "true_positive_rate_parity",
        "qualified people in some groups are recognised less often (true positive rates differ); a per-group "
        "threshold on the existing score equalises true positive rates with the smallest loss of accuracy",
    ),
    "false_negative_rate_difference": (
        "group_specific_thresholds",
        "true_positive_rate_parity",
        "missed positives are more frequent in some groups; per-group thresholds move each group's miss rate directly",
    ),
    "equalized_odds_difference": (
        "constrained_retraining",
        "equalized_odds",
        "both error rates must match across groups; thresholds alone can equalise both only by randomising "
        "decisions, so retraining under an equalized-odds constraint is the better fix",
    ),
    "false_positive_rate_difference": (
        "group_specific_thresholds",
        "false_positive_rate_parity",
        "some groups are wrongly flagged more often (false positive rates differ); a per-group threshold "
        "lowers "
        "the false alarm rate where it is high",
    ),
    "predictive_parity_difference": (
        "constrained_retraining",
        "predictive_parity",
        "a positive prediction means different things for different groups (precision differs); this is a "
        "property of the score itself, so retrain (or recalibrate per group) rather than move thresholds",
    ),
    "false_discovery_rate_difference": (
        "constrained_retraining",
        "predictive_parity",
        "positive predictions are wrong more often for some groups; retrain or recalibrate the score per group",
    ),
    "false_omission_rate_difference": (
        "constrained_retraining",
        "predictive_parity",
        "negative predictions miss more real positives in some groups; retrain or recalibrate the score per group",
    ),
    "calibration_difference": (
        "constrained_retraining",
        "calibration",
        "the score is calibrated differently across groups, so the same score means different risk; "
        "recalibrate "
        "per group (isotonic or Platt scaling) or retrain with group-aware calibration",
    ),
    "auc_difference": (
        "constrained_retraining",
        "bounded_group_loss",
        "the model ranks people less well in some groups, usually because the features describe those groups "
        "poorly or they are under-represented; collect more representative data and retrain with a bounded "
        "group loss constraint",
    ),
}

# Which metric matters most, by use case: the plain-language note a reviewer reads first.
_USE_CASES: dict[str, tuple[list[str], str]] = {
    "lending": (
        ["equal_opportunity_difference", "disparate_impact_ratio", "calibration_difference"],
        "In lending, creditworthy applicants should be approved at the same rate whatever their group (equal "
        "opportunity), approval rates are checked against the four-fifths rule in disparate-impact reviews, "
        "and "
        "scores that price risk must be equally calibrated across groups.",
    ),
    "credit": (
        ["equal_opportunity_difference", "disparate_impact_ratio", "calibration_difference"],
        "In credit decisions, prioritise equal opportunity for creditworthy applicants, then disparate "
        "impact "
        "(four-fifths rule) and calibration of the risk score across groups.",
    ),
    "hiring": (
        ["disparate_impact_ratio", "demographic_parity_difference", "equal_opportunity_difference"],
        "In hiring, selection rates are what regulators test first (the EEOC four-fifths rule), so "
        "prioritise "
        "disparate impact; then make sure qualified candidates are shortlisted at equal rates across groups.",
    ),
    "insurance": (
        ["calibration_difference", "predictive_parity_difference"],
        "In insurance, premiums follow predicted risk, so the score must mean the same risk in every group: "
        "prioritise calibration and predictive parity over equal selection rates.",
    ),
    "healthcare": (
        ["equal_opportunity_difference", "false_negative_rate_difference", "calibration_difference"],
        "In healthcare, a missed case is the costly error: prioritise equal true positive (and false "
        "negative) "
        "rates so patients who need care are found equally in every group.",
    ),
    "criminal_justice": (
        ["false_positive_rate_difference", "equalized_odds_difference", "calibration_difference"],
        "In criminal justice, being wrongly labelled high-risk costs liberty: prioritise equal false "
        "positive "
        "rates (equalized odds). Where base rates differ, a calibrated score cannot also equalise error "
        "rates, "
        "so state which one the policy protects.",
    ),
    "fraud": (
        ["false_positive_rate_difference", "predictive_parity_difference"],
        "In fraud screening, innocent customers flagged for review bear the cost: prioritise equal false "
        "positive "
        "rates, then equal precision of the flags.",
    ),
    "education": (
        ["equal_opportunity_difference", "disparate_impact_ratio"],
        "In admissions and education, prioritise equal opportunity for qualified applicants, then "
        "selection-rate "
        "parity.",
    ),
    "advertising": (
        ["demographic_parity_difference", "disparate_impact_ratio"],
        "In advertising of jobs, housing or credit, every group should be shown the offer at similar rates: "
        "prioritise demographic parity.",
    ),
}
_USE_CASE_ALIASES = {
    "recidivism": "criminal_justice",
    "justice": "criminal_justice",
    "pretrial": "criminal_justice",
    "pretrial_risk_assessment": "criminal_justice",
    "bail": "criminal_justice",
    "sentencing": "criminal_justice",
    "parole": "criminal_justice",
    "recruiting": "hiring",
    "employment": "hiring",
    "health": "healthcare",
    "medical": "healthcare",
    "admissions": "education",
    "ads": "advertising",
    "loans": "lending",
}


def _slicing_label(slicing: list[str] | tuple[str, ...]) -> str:
    return " × ".join(slicing)


def _group_label(group: dict[str, str] | None) -> str | None:
    if not group:
        return None
    return ", ".join(f"{k}={v}" for k, v in group.items())


def _group_key(group: dict[str, Any] | None) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((str(k), str(v)) for k, v in (group or {}).items()))


def _known_use_case(use_case: str | None) -> str | None:
    if use_case is None:
        return None
    key = use_case.strip().lower().replace("-", "_").replace(" ", "_")
    key = _USE_CASE_ALIASES.get(key, key)
    return key if key in _USE_CASES else None


def priority_note(use_case: str | None) -> dict[str, Any]:
    """Which metrics to prioritise for the use case, in plain language.

    >>> priority_note("hiring")["priority_metrics"][0]
    'disparate_impact_ratio'
    >>> priority_note(None)["known"]
    False
    """
    key = _known_use_case(use_case)
    if key is None:
        note = (
            "No known use case is named in the policy (use_case: lending, hiring, insurance, healthcare, "
            "criminal_justice, fraud, education, advertising). Fairness metrics can conflict when base rates "
            "differ, so decide which error matters most to the people affected and make that metric critical."
        )
        if use_case:
            note = f"Use case {use_case!r} has no built-in guidance. " + note
        return {
            "kind": "use_case_priority",
            "use_case": use_case,
            "known": False,
            "priority_metrics": [],
            "note": note,
        }
    metrics, note = _USE_CASES[key]
    return {
        "kind": "use_case_priority",
        "use_case": key,
        "known": True,
        "priority_metrics": list(metrics),
        "note": note,
    }


def recommend(
    result_doc: dict[str, Any], use_case: str | None = None, *, min_cell_size: int = 10
) -> list[dict[str, Any]]:
    """One mitigation per failed (metric, slicing), most severe first, then the use-case priority note.

    ``use_case`` falls back to the document's (``use_case`` or ``policy.use_case``). A worst-off group with
    fewer than ``min_cell_size`` people is not named (the report suppresses it too).
    """
    if use_case is None:
        use_case = result_doc.get("use_case") or (result_doc.get("policy") or {}).get("use_case")
    priority = priority_note(use_case)
    prioritised = set(priority["priority_metrics"])
    diagnostics = result_doc.get("diagnostics") or {}
    base_rates_differ = bool(diagnostics.get("impossibility")) or any(
        isinstance(item, dict) and item.get("differ") for item in diagnostics.get("base_rates") or []
    )
    sizes = {
        (tuple(g.get("slicing", [])), _group_key(g.get("group"))): g.get("n") for g in result_doc.get("groups", [])
    }
    recs: list[dict[str, Any]] = []
    for result in result_doc.get("results", []):
        if result.get("status") != "fail":
            continue
        metric = result["metric"]
        technique, constraint, why = _BY_METRIC.get(
            metric,
            (
                "constrained_retraining",
                metric.removesuffix("_difference").removesuffix("_ratio"),
                "the metric differs across groups beyond the policy's threshold; retraining under a parity "
                "constraint on it is the general remedy",
            ),
        )
        info = _TECHNIQUES[technique]
        slicing = list(result.get("slicing", []))
        worst_n = sizes.get((tuple(slicing), _group_key(result.get("worst_group"))))
        worst = _group_label(result.get("worst_group"))
        if worst_n is not None and worst_n < min_cell_size:
            worst = "a small group (suppressed in the report)"
        reason = f"{metric} fails on {_slicing_label(slicing)}"
        if result.get("value") is not None and result.get("threshold") is not None:
            reason += f" ({result['value']:.3g} against a threshold of {result['threshold']:.3g})"
        reason += f": {why}."
        if worst:
            reason += f" The worst-off group is {worst}."
        if result.get("uncertain"):
            reason += " The confidence interval crosses the threshold: confirm on more data before changing the model."
        if base_rates_differ and technique != "reweighing":
            reason += (
                " Base rates differ between groups here, so equalising this metric will move others "
                "(see the impossibility note): re-audit after mitigating."
            )
        recs.append(
            {
                "kind": "mitigation",
                "metric": metric,
                "slicing": slicing,
                "technique": technique,
                "stage": info["stage"],
                "title": info["title"],
                "constraint": constraint,
                "summary": why[0].upper() + why[1:] + ".",
                "reason": reason,
                "how": info["how"],
                "critical": bool(result.get("critical")),
                "prioritised_for_use_case": metric in prioritised,
                "_severity": _severity(result),
            }
        )
    recs.sort(key=lambda r: (not r["critical"], not r["prioritised_for_use_case"], -r["_severity"]))
    for rec in recs:
        del rec["_severity"]
    return [*recs, priority]


def _severity(result: dict[str, Any]) -> float:
    """How far past its threshold a result is, relative to the threshold (0 when unknown)."""
    value, threshold = result.get("value"), result.get("threshold")
    if value is None or threshold is None:
        return 0.0
    gap = value - threshold if result.get("direction") != "higher_is_better" else threshold - value
    return gap / abs(threshold) if threshold else gap
