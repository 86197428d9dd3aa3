"""Every judged result carries the interval the gate decided it on (``decision_ci_low/high``), and the status
follows from it exactly: a result fails when the interval's violation end lies beyond the threshold, passes only
when its other end lies within. The reporting interval (``ci_low``/``ci_high``) can lie wholly beyond the
threshold while the result is inconclusive: with many results Holm asks for more, and the deciding interval shows
how much. Real COMPAS data, every slicing and pair; a seeded subsample keeps groups small enough to be undecided."""

from __future__ import annotations

from typing import Any

import polars as pl

import fairgate

POLICY = """\
fairness_checker:
  sensitive_attributes:
    - {name: race, values: [African-American, Caucasian, Hispanic, Other, Asian, Native American],
       reference_group: Caucasian}
    - {name: sex, values: [Male, Female], reference_group: Male}
    - {name: age_cat, values: [Less than 25, 25 - 45, Greater than 45]}
  metrics:
    - {name: disparate_impact_ratio, threshold: 0.8}
    - {name: demographic_parity_difference, threshold: 0.1}
    - {name: equal_opportunity_difference, threshold: 0.1}
    - {name: equalized_odds_difference, threshold: 0.1}
  intersectional_analysis: {enabled: true, min_group_size: 30}
  statistics: {n_bootstrap: 200, seed: 5}
"""


def _results(frame: pl.DataFrame, policy_text: str = POLICY) -> list[dict[str, Any]]:
    policy = fairgate.Policy.from_yaml(policy_text)
    cube = fairgate.build_cube(frame, policy)
    parts = [fairgate.compute_slicing(cube, s, policy) for s in fairgate.plan_slicings(cube, policy)]
    return list(fairgate.adjudicate(cube, parts, policy).to_dict()["results"])


def _beyond(result: dict[str, Any]) -> bool:
    if result["direction"] == "higher_is_better":
        return bool(result["decision_ci_high"] < result["threshold"])
    return bool(result["decision_ci_low"] > result["threshold"])


def _within(result: dict[str, Any]) -> bool:
    if result["direction"] == "higher_is_better":
        return bool(result["decision_ci_low"] >= result["threshold"] - 1e-9)
    return bool(result["decision_ci_high"] <= result["threshold"] + 1e-9)


def test_the_status_follows_from_the_deciding_interval(compas: pl.DataFrame) -> None:
    statuses = set()
    for frame in (compas, compas.sample(1500, seed=11)):
        results = _results(frame)
        judged = [r for r in results if r["status"] in ("pass", "fail", "inconclusive")]
        tests = sum(r.get("p_value_violation") is not None for r in results)
        assert len(judged) >= 10
        for r in judged:
            statuses.add(r["status"])
            # Holm's multiplier lies between 1 (its last step) and the number of tests (its first).
            assert 0.95 - 1e-12 <= r["decision_level"] <= 1 - 0.05 / tests + 1e-12
            assert (r["status"] == "fail") == _beyond(r), r
            assert (r["status"] == "pass") == (_within(r) and not _beyond(r)), r
    assert {"fail", "inconclusive"} <= statuses


def test_a_reporting_interval_beyond_the_threshold_can_be_inconclusive_and_the_decision_says_why(
    compas: pl.DataFrame,
) -> None:
    found = []
    for seed in range(8):
        for r in _results(compas.sample(900, seed=seed)):
            if r["status"] != "inconclusive" or r["ci_low"] is None:
                continue
            printed = (
                r["ci_high"] < r["threshold"] if r["direction"] == "higher_is_better" else r["ci_low"] > r["threshold"]
            )
            if printed:
                found.append(r)
    assert found, "no reporting interval wholly beyond its threshold among the inconclusive results"
    for r in found:
        assert not _beyond(r)  # the deciding interval reaches the threshold: that is why it is inconclusive
        assert r["decision_ci_low"] <= r["ci_low"] + 1e-9 or r["decision_ci_high"] >= r["ci_high"] - 1e-9


def test_point_estimate_decisions_have_no_deciding_interval(compas: pl.DataFrame) -> None:
    text = POLICY + "  ci_cd_gate: {decision: point_estimate}\n"
    for r in _results(compas.sample(2000, seed=2), text):
        assert r["decision_ci_low"] is None
        assert r["decision_level"] is None
