"""Policy validation errors, overrides, and verdicts (DESIGN.md, "Verdicts" and "Policy file")."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest

import fairgate

DP: dict[str, Any] = {"name": "demographic_parity_difference", "threshold": 0.1}


def _base(**changes: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "sensitive_attributes": [{"name": "sex", "values": ["M", "F"], "reference_group": "M"}],
        "metrics": [dict(DP)],
    }
    document.update(changes)
    return document


def _error(document: dict[str, Any]) -> str:
    with pytest.raises(fairgate.PolicyError) as caught:
        fairgate.Policy.from_mapping({"fairness_checker": document}, source="policy.yaml")
    message = caught.value.message
    assert message.startswith("policy.yaml"), message  # names the file
    return message


# ------------------------------------------------------------------------------------------- policy errors
def test_unknown_key_is_named_with_its_place() -> None:
    message = _error(_base(intersectional_analysis={"min_group_sise": 10}))
    assert "fairness_checker.intersectional_analysis.min_group_sise" in message
    assert "unknown key" in message
    assert "spelling" in message


def test_unknown_top_level_key() -> None:
    with pytest.raises(fairgate.PolicyError, match="fairness_checker"):
        fairgate.Policy.from_mapping({"fairness_checker": _base(), "extra": 1}, source="policy.yaml")


def test_yaml_syntax_error_is_a_policy_error() -> None:
    with pytest.raises(fairgate.PolicyError, match="not valid YAML"):
        fairgate.Policy.from_yaml("fairness_checker: [", source="policy.yaml")


def test_unknown_metric_lists_the_known_ones() -> None:
    message = _error(_base(metrics=[{"name": "demographic_parity_diff", "threshold": 0.1}]))
    assert "fairness_checker.metrics.0" in message
    assert "'demographic_parity_diff'" in message
    for known in (
        "demographic_parity_difference",
        "disparate_impact_ratio",
        "equalized_odds_difference",
        "equal_opportunity_difference",
        "theil_index",
        "false_positive_rate_difference",
    ):
        assert known in message


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        ({"name": "demographic_parity_difference", "threshold": -0.1}, "[0.0, 1.0]"),
        ({"name": "disparate_impact_ratio", "threshold": 1.5}, "[0.0, 1.0]"),
        ({"name": "equalized_odds_difference", "threshold": 2}, "e.g. 0.1"),
    ],
)
def test_threshold_out_of_range_says_the_range_and_an_example(rule: dict[str, Any], expected: str) -> None:
    message = _error(_base(metrics=[dict(DP), rule]))
    assert "fairness_checker.metrics.1" in message
    assert "threshold" in message
    assert expected in message


def test_wrong_direction_says_the_right_one() -> None:
    message = _error(
        _base(metrics=[{"name": "disparate_impact_ratio", "threshold": 0.8, "direction": "lower_is_better"}])
    )
    assert "fairness_checker.metrics.0" in message
    assert "direction: higher_is_better" in message


def test_reference_group_not_among_values() -> None:
    message = _error(_base(sensitive_attributes=[{"name": "sex", "values": ["M", "F"], "reference_group": "X"}]))
    assert "fairness_checker.sensitive_attributes.0" in message
    assert "'X'" in message
    assert "['M', 'F']" in message


def test_pair_naming_an_unknown_attribute() -> None:
    message = _error(_base(intersectional_analysis={"attribute_pairs": [["sex", "race"]]}))
    assert "intersectional_analysis.attribute_pairs" in message
    assert "'race'" in message
    assert "['sex']" in message  # what is wrong, and what can be written instead


def test_critical_metric_not_configured() -> None:
    message = _error(_base(ci_cd_gate={"critical_metrics": ["equal_opportunity_difference"]}))
    assert "ci_cd_gate.critical_metrics" in message
    assert "'equal_opportunity_difference'" in message
    assert "demographic_parity_difference" in message


def test_bad_fail_on_lists_choices() -> None:
    message = _error(_base(ci_cd_gate={"fail_on": "all"}))
    assert "fairness_checker.ci_cd_gate.fail_on" in message
    assert "'majority'" in message
    assert "'critical_only'" in message


def test_override_naming_an_unconfigured_metric() -> None:
    message = _error(_base(overrides=[{"reason": "pilot", "metric": "equal_opportunity_difference", "threshold": 0.2}]))
    assert "override" in message
    assert "'equal_opportunity_difference'" in message


def test_every_policy_error_is_a_fairgate_error() -> None:
    assert issubclass(fairgate.PolicyError, fairgate.FairgateError)


# ----------------------------------------------------------------------------------------- data for verdicts
def _frame(groups: dict[str, tuple[int, int]], attribute: str = "grp") -> pl.DataFrame:
    """groups: value -> (rows, rows predicted favourable). Labels alternate 1, 0."""
    values, y_true, y_pred = [], [], []
    for value, (n, selected) in groups.items():
        values += [value] * n
        y_true += [i % 2 for i in range(n)]
        y_pred += [1] * selected + [0] * (n - selected)
    return pl.DataFrame({attribute: values, "y_true": y_true, "y_pred": y_pred})


def _result(result: fairgate.AuditResult, metric: str, slicing: list[str]) -> dict[str, Any]:
    return next(r for r in result.to_dict()["results"] if r["metric"] == metric and r["slicing"] == slicing)


def test_point_estimate_decides_and_exit_codes(h: Any) -> None:
    frame = _frame({"x": (1000, 500), "y": (1000, 300)})  # selection 0.5 vs 0.3
    failing = fairgate.audit(frame, h.make_policy(["grp"], [DP], n_bootstrap=100))
    assert _result(failing, DP["name"], ["grp"])["value"] == pytest.approx(0.2)
    assert _result(failing, DP["name"], ["grp"])["status"] == "fail"
    assert (failing.verdict, failing.exit_code) == ("fail", 1)
    passing = fairgate.audit(frame, h.make_policy(["grp"], [{**DP, "threshold": 0.25}], n_bootstrap=100))
    assert (passing.verdict, passing.exit_code) == ("pass", 0)
    gate_off = fairgate.audit(frame, h.make_policy(["grp"], [DP], n_bootstrap=100, ci_cd_gate={"enabled": False}))
    assert (gate_off.verdict, gate_off.exit_code) == ("fail", 0)


def test_inconclusive_when_the_interval_crosses_the_threshold(h: Any) -> None:
    """The old rule failed this small audit on its point estimate (0.15 > 0.1); its interval straddles 0.1."""
    small = fairgate.audit(_frame({"x": (40, 20), "y": (40, 14)}), h.make_policy(["grp"], [DP], n_bootstrap=300))
    judged = _result(small, DP["name"], ["grp"])
    assert judged["value"] == pytest.approx(0.15)
    assert judged["status"] == "inconclusive"
    assert judged["ci_low"] < 0.1 < judged["ci_high"]
    assert judged["uncertain"] is True
    assert "neither" in judged["reason"]
    assert judged["detectable_disparity"] > 0.15
    detail = small.to_dict()["verdict_detail"]
    assert small.verdict == "pass"
    assert detail["n_inconclusive"] == 1
    assert detail["inconclusive"][0]["metric"] == DP["name"]
    large = fairgate.audit(
        _frame({"x": (4000, 2000), "y": (4000, 1400)}), h.make_policy(["grp"], [DP], n_bootstrap=300)
    )
    judged = _result(large, DP["name"], ["grp"])
    assert judged["ci_low"] > 0.1
    assert judged["uncertain"] is False
    assert judged["status"] == "fail"
    assert judged["p_value_violation_adjusted"] < 0.05
    assert large.to_dict()["verdict_detail"]["n_uncertain"] == 0


@pytest.mark.parametrize(
    ("decision", "verdict"),
    [("evidence_of_violation", "pass"), ("evidence_of_compliance", "fail"), ("point_estimate", "fail")],
)
def test_decision_rule_says_what_inconclusive_means(h: Any, decision: str, verdict: str) -> None:
    policy = h.make_policy(["grp"], [DP], n_bootstrap=300, ci_cd_gate={"decision": decision})
    result = fairgate.audit(_frame({"x": (40, 20), "y": (40, 14)}), policy)
    judged = _result(result, DP["name"], ["grp"])
    assert judged["status"] == ("fail" if decision == "point_estimate" else "inconclusive")
    assert result.verdict == verdict
    assert result.to_dict()["verdict_detail"]["decision"] == decision


def test_per_metric_threshold_override(h: Any) -> None:
    frame = _frame({"x": (1000, 500), "y": (1000, 300)})
    overrides = [{"reason": "pilot phase agreed with legal", "metric": DP["name"], "threshold": 0.25}]
    result = fairgate.audit(frame, h.make_policy(["grp"], [DP], n_bootstrap=50, overrides=overrides))
    judged = _result(result, DP["name"], ["grp"])
    assert judged["threshold"] == 0.25
    assert judged["status"] == "pass"
    assert judged["override_reasons"] == ["pilot phase agreed with legal"]


def _two_attribute_frame() -> pl.DataFrame:
    first = _frame({"x": (1000, 500), "y": (1000, 300)})
    return first.with_columns(pl.Series("k", (["p", "q"] * 1000)))


def test_per_slicing_override_touches_only_that_slicing(h: Any) -> None:
    overrides = [{"reason": "grp is a proxy here", "slicing": ["grp"], "threshold": 0.3}]
    policy = h.make_policy(["grp", "k"], [DP], n_bootstrap=50, overrides=overrides)
    result = fairgate.audit(_two_attribute_frame(), policy)
    assert _result(result, DP["name"], ["grp"])["threshold"] == 0.3
    assert _result(result, DP["name"], ["k"])["threshold"] == 0.1
    assert _result(result, DP["name"], ["grp", "k"])["threshold"] == 0.1
    assert _result(result, DP["name"], ["k"])["override_reasons"] == []


@pytest.mark.parametrize(("use_case", "applies"), [("hiring", True), ("lending", False), (None, False)])
def test_per_use_case_override(h: Any, use_case: str | None, applies: bool) -> None:
    overrides = [{"reason": "hiring uses the four-fifths rule only", "use_case": "hiring", "threshold": 0.3}]
    extra: dict[str, Any] = {"overrides": overrides}
    if use_case is not None:
        extra["use_case"] = use_case
    result = fairgate.audit(
        _frame({"x": (1000, 500), "y": (1000, 300)}), h.make_policy(["grp"], [DP], n_bootstrap=50, **extra)
    )
    judged = _result(result, DP["name"], ["grp"])
    assert judged["threshold"] == (0.3 if applies else 0.1)
    assert judged["status"] == ("pass" if applies else "fail")


def test_exclude_groups_leaves_them_out_of_the_judgement(h: Any) -> None:
    frame = _frame({"x": (1000, 500), "y": (1000, 450), "z": (1000, 100)})
    overrides = [{"reason": "z is a pilot region", "metric": DP["name"], "exclude_groups": [{"grp": "z"}]}]
    result = fairgate.audit(frame, h.make_policy(["grp"], [DP], n_bootstrap=50, overrides=overrides))
    judged = _result(result, DP["name"], ["grp"])
    assert judged["value"] == pytest.approx(0.05)
    assert judged["status"] == "pass"
    assert judged["excluded_groups"] == [{"grp": "z"}]
    assert judged["n_groups_judged"] == 2
    # The group is still reported with its own metrics.
    assert result.by_group(["grp"]).filter(pl.col("grp") == "z")["selection_rate"][0] == pytest.approx(0.1)


def _mixed(h: Any, fail_on: str, critical: list[str]) -> fairgate.AuditResult:
    """Three judged results: demographic parity fails (0.2 > 0.1); accuracy and FPR gaps pass."""
    metrics = [
        DP,
        {"name": "accuracy_difference", "threshold": 0.5},
        {"name": "false_positive_rate_difference", "threshold": 0.5},
    ]
    policy = h.make_policy(
        ["grp"], metrics, n_bootstrap=20, ci_cd_gate={"fail_on": fail_on, "critical_metrics": critical}
    )
    return fairgate.audit(_frame({"x": (1000, 500), "y": (1000, 300)}), policy)


def test_fail_on_any_majority_and_critical_only(h: Any) -> None:
    any_fail = _mixed(h, "any", [])
    assert any_fail.to_dict()["verdict_detail"]["n_failed"] == 1
    assert any_fail.to_dict()["verdict_detail"]["n_judged"] == 3
    assert any_fail.verdict == "fail"
    assert _mixed(h, "majority", []).verdict == "pass"
    assert _mixed(h, "critical_only", ["accuracy_difference"]).verdict == "pass"
    critical = _mixed(h, "critical_only", [DP["name"]])
    assert critical.verdict == "fail"
    assert critical.to_dict()["verdict_detail"]["failed"][0]["critical"] is True


def test_majority_fails_when_most_results_fail(h: Any) -> None:
    metrics = [
        DP,
        {"name": "disparate_impact_ratio", "threshold": 0.8},
        {"name": "accuracy_difference", "threshold": 0.5},
    ]
    policy = h.make_policy(["grp"], metrics, n_bootstrap=20, ci_cd_gate={"fail_on": "majority"})
    result = fairgate.audit(_frame({"x": (1000, 500), "y": (1000, 300)}), policy)
    assert result.to_dict()["verdict_detail"]["n_failed"] == 2
    assert result.verdict == "fail"


def test_small_groups_are_listed_and_left_out_of_the_judgement(h: Any) -> None:
    frame = _frame({"x": (500, 250), "y": (500, 240), "z": (12, 0)})
    result = fairgate.audit(frame, h.make_policy(["grp"], [DP], min_group_size=30, n_bootstrap=50))
    judged = _result(result, DP["name"], ["grp"])
    assert judged["value"] == pytest.approx(0.02)
    assert judged["status"] == "pass"
    assert judged["n_groups_judged"] == 2
    assert judged["insufficient_groups"] == [{"grp": "z"}]
    listed = result.to_dict()["diagnostics"]["insufficient_groups"]
    assert {"slicing": ["grp"], "group": {"grp": "z"}, "n": 12.0, "min_group_size": 30} in listed
    summary = next(
        s for s in result.to_dict()["summaries"] if s["metric"] == "selection_rate" and s["slicing"] == ["grp"]
    )
    assert summary["difference"] == pytest.approx(0.02)
    z = next(g for g in result.to_dict()["groups"] if g["group"] == {"grp": "z"})
    assert z["sufficient"] is False
    assert z["metrics"]["selection_rate"]["value"] == 0.0  # still reported


def test_slicing_plan_follows_pairs_and_triple_sizes(h: Any) -> None:
    frame = h.generate(3, 600)
    attributes = list(h.levels)
    everything = fairgate.plan_slicings(
        fairgate.build_cube(frame, h.make_policy(attributes)), h.make_policy(attributes)
    )
    assert sum(len(s) == 2 for s in everything) == 6
    assert sum(len(s) == 3 for s in everything) == 4
    configured = h.make_policy(
        attributes, min_group_size=200, intersectional_analysis={"attribute_pairs": [["a", "d"]]}
    )
    planned = fairgate.plan_slicings(fairgate.build_cube(frame, configured), configured)
    # No triple has two groups of 200 or more people out of 600 rows spread over >= 48 cells.
    assert planned == [(), ("a",), ("b",), ("c",), ("d",), ("a", "d")]
