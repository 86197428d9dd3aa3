"""Recommendations: the mitigation fits the failed metric, with a reason; the use-case note."""

from __future__ import annotations

from typing import Any

import pytest

from fairgate.engine.kinds import KINDS
from fairgate.engine.metric_labels import metric_label
from fairgate.engine.metrics import policy_metric
from fairgate.engine.tasks import metric_catalogue
from fairgate.mitigation.advice import advice_text, priority_note, recommend, resolve_priority_metrics
from fairgate.policy.outcomes import Outcomes, fill


def _result(
    metric: str,
    *,
    value: float,
    threshold: float,
    status: str = "fail",
    critical: bool = False,
    direction: str = "lower_is_better",
    uncertain: bool = False,
) -> dict[str, Any]:
    return {
        "metric": metric,
        "slicing": ["sex"],
        "value": value,
        "threshold": threshold,
        "direction": direction,
        "status": status,
        "uncertain": uncertain,
        "critical": critical,
        "worst_group": {"sex": "F"},
    }


@pytest.mark.parametrize(
    ("metric", "technique"),
    [
        ("disparate_impact_ratio", "reweighing"),
        ("demographic_parity_difference", "reweighing"),
        ("equal_opportunity_difference", "group_specific_thresholds"),
        ("false_positive_rate_difference", "group_specific_thresholds"),
        ("equalized_odds_difference", "constrained_retraining"),
        ("predictive_parity_difference", "constrained_retraining"),
        ("calibration_difference", "constrained_retraining"),
        ("true_negative_rate_difference", "constrained_retraining"),  # generic fallback
    ],
)
def test_technique_fits_the_metric(metric: str, technique: str) -> None:
    recs = recommend({"results": [_result(metric, value=0.3, threshold=0.1)]}, None)
    mitigation = [r for r in recs if r["kind"] == "mitigation"]
    assert [r["technique"] for r in mitigation] == [technique]
    assert metric_label(metric) in mitigation[0]["reason"]  # the metric named in words
    assert "The worst-off group is F." in mitigation[0]["reason"]  # by the one group name
    assert mitigation[0]["how"]
    assert mitigation[0]["summary"].endswith(".")


def test_only_failures_get_a_mitigation_and_critical_come_first() -> None:
    doc = {
        "results": [
            _result("disparate_impact_ratio", value=0.5, threshold=0.8, direction="higher_is_better"),
            _result("equal_opportunity_difference", value=0.12, threshold=0.1, critical=True),
            _result("predictive_parity_difference", value=0.05, threshold=0.1, status="pass"),
        ]
    }
    recs = [r for r in recommend(doc, None) if r["kind"] == "mitigation"]
    assert [r["metric"] for r in recs] == ["equal_opportunity_difference", "disparate_impact_ratio"]


def test_uncertain_and_impossibility_change_the_reason() -> None:
    doc = {
        "results": [_result("equal_opportunity_difference", value=0.11, threshold=0.1, uncertain=True)],
        "diagnostics": {"base_rates": [{"slicing": ["sex"], "differ": True}]},
    }
    reason = recommend(doc, None)[0]["reason"]
    assert "confirm on more data" in reason
    assert "Base rates differ" in reason


def test_small_worst_group_is_named_with_the_one_mark_and_no_size() -> None:
    doc = {
        "results": [_result("equal_opportunity_difference", value=0.3, threshold=0.1)],
        "groups": [{"slicing": ["sex"], "group": {"sex": "F"}, "n": 4}],
    }
    reason = recommend(doc, None, min_cell_size=10)[0]["reason"]
    assert "The worst-off group is F (rates withheld)." in reason
    assert "4" not in reason
    assert "small group" not in reason  # the mark says nothing of the size
    assert "(rates withheld)" not in recommend(doc, None, min_cell_size=4)[0]["reason"]  # at 4 it is shown


def test_use_case_priority_note() -> None:
    hiring = priority_note("Hiring")
    assert hiring["known"]
    assert hiring["priority_metrics"][0] == "disparate_impact_ratio"
    assert "four-fifths" in hiring["note"]
    assert priority_note("pretrial_risk_assessment")["use_case"] == "criminal_justice"
    unknown = priority_note("astrology")
    assert not unknown["known"]
    assert "'astrology'" in unknown["note"]
    # recommend() always ends with the note, falling back to the document's use case.
    recs = recommend({"results": [], "policy": {"use_case": "insurance"}}, None)
    assert recs == [priority_note("insurance")]


def test_passing_audit_has_no_mitigation(compas_doc: dict[str, Any]) -> None:
    passing = {**compas_doc, "results": [dict(r, status="pass") for r in compas_doc["results"]]}
    assert [r["kind"] for r in recommend(passing, None)] == ["use_case_priority"]
    failing = [r for r in recommend(compas_doc, None) if r["kind"] == "mitigation"]
    assert len(failing) == compas_doc["verdict_detail"]["n_failed"]
    assert failing[0]["critical"]
    assert failing[0]["metric"] == "equal_opportunity_difference"


def test_shipped_advice_names_only_known_techniques_metrics_and_use_cases() -> None:
    advice = advice_text()
    techniques = set(advice["techniques"])
    assert techniques == {"reweighing", "group_specific_thresholds", "constrained_retraining", "fair_reranking"}
    assert all(set(info) == {"title", "stage", "how"} for info in advice["techniques"].values())
    assert {m["technique"] for m in advice["metrics"].values()} | {advice["other_metric"]["technique"]} <= techniques
    listed = [m for u in advice["use_cases"].values() for m in u["priority_metrics"]]
    named = set(advice["metrics"]) | set(resolve_priority_metrics(listed))
    kinds = [metric_catalogue(kind) for kind in KINDS if kind != "binary"]  # regression and ranking metrics
    for metric in named:
        if not any(metric in catalogue for catalogue in kinds):
            policy_metric(metric)  # raises for a metric the policy YAML would not accept
    assert set(advice["use_case_aliases"].values()) <= set(advice["use_cases"])
    assert all(u["note"] and u["priority_metrics"] for u in advice["use_cases"].values())


def test_every_metric_with_advice_gets_its_own_technique() -> None:
    for metric, expected in advice_text()["metrics"].items():
        doc = {"results": [_result(metric, value=0.3, threshold=0.1)]}
        rec = recommend(doc, None)[0]
        assert (rec["technique"], rec["constraint"]) == (expected["technique"], expected["constraint"])
        assert rec["summary"].lower().startswith(fill(expected["why"], Outcomes())[:20].lower())
