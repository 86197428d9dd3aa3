"""Individual-fairness checks in the gate: judged in the audit's one Holm family, overrides, the document.

COMPAS's people with their numeric features (priors, age, juvenile counts) and the COMPAS tier as the decision.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import polars as pl
import pytest
import yaml
from aif360.sklearn.metrics import consistency_score as aif360_consistency_score

import fairgate
from fairgate.engine.individual import IndividualInputs, assess_individual
from fairgate.errors import PolicyError
from tests.engine.conftest import COMPAS_CSV, quiet_oracles

FEATURES = ["priors_count", "age", "juv_fel_count", "juv_misd_count", "juv_other_count"]


def _policy(individual: dict[str, Any] | None, **extra: Any) -> fairgate.Policy:
    body: dict[str, Any] = {
        "sensitive_attributes": [{"name": "race"}, {"name": "sex"}],
        "metrics": [{"name": "demographic_parity_difference", "threshold": 0.5}],
        "favorable_label": 0,
        "statistics": {"n_bootstrap": 200},
        **extra,
    }
    if individual is not None:
        body["individual_fairness"] = individual
    return fairgate.Policy.from_mapping({"fairness_checker": body})


@pytest.fixture(scope="module")
def people() -> pl.DataFrame:
    raw = pl.read_csv(COMPAS_CSV)
    return raw.select(
        *FEATURES,
        pl.col("race"),
        pl.col("sex"),
        pl.col("two_year_recid").cast(pl.Int64).alias("y_true"),
        pl.col("score_text").is_in(["Medium", "High"]).cast(pl.Int64).alias("y_pred"),
    )


def _counterfactual(people: pl.DataFrame) -> np.ndarray:
    """Decisions that change for 3% of African-American people, in a seeded draw (a known flip rate)."""
    rng = np.random.default_rng(3)
    decisions = people["y_pred"].to_numpy()
    flip = (people["race"].to_numpy() == "African-American") & (rng.random(people.height) < 0.03)
    return np.where(flip, 1 - decisions, decisions)


def _audit(people: pl.DataFrame, policy: fairgate.Policy, counterfactual: np.ndarray | None = None) -> dict[str, Any]:
    cube = fairgate.build_cube(people.select("race", "sex", "y_true", "y_pred"), policy)
    parts = [fairgate.compute_slicing(cube, s, policy) for s in fairgate.plan_slicings(cube, policy)]
    inputs = IndividualInputs(
        features=people.select(FEATURES).to_numpy().astype(float),
        feature_names=FEATURES,
        decisions=people["y_pred"].to_numpy(),
        attributes={name: people[name].to_numpy().astype(object) for name in ("race", "sex")},
        counterfactual=counterfactual,
        counterfactual_attribute="race" if counterfactual is not None else None,
    )
    individual = assess_individual(inputs, policy)
    return fairgate.adjudicate(cube, parts, policy, individual=individual).to_dict()


def _result(document: dict[str, Any], metric: str, slicing: list[str]) -> dict[str, Any]:
    return next(r for r in document["results"] if r["metric"] == metric and r["slicing"] == slicing)


def test_consistency_is_judged_with_every_other_result(people: pl.DataFrame) -> None:
    policy = _policy({"features": FEATURES, "min_consistency": 0.5, "max_flip_rate": 0.01})
    document = _audit(people, policy, _counterfactual(people))
    x, y = people.select(FEATURES).to_numpy().astype(float), people["y_pred"].to_numpy()
    with quiet_oracles():
        expected = float(aif360_consistency_score(x, y, n_neighbors=5))
    block = document["individual_fairness"]
    assert abs(block["consistency"]["value"] - expected) <= 1e-9
    assert block["theil_index"] is not None  # the population indices stay beside it
    # Population, race and sex: judged, and counted in the one Holm family.
    overall = _result(document, "consistency", [])
    assert overall["status"] == "pass"
    assert overall["value"] == pytest.approx(expected, abs=1e-12)
    by_race = _result(document, "consistency", ["race"])
    assert by_race["status"] == "pass"
    assert by_race["worst_group"] in [g["group"] for g in block["consistency"]["groups"]]
    judged = [r for r in document["results"] if "p_value_violation" in r]
    assert document["verdict_detail"]["n_tests"] == len(judged)
    assert {r["metric"] for r in judged} >= {"consistency", "counterfactual_flip_rate"}
    # Flips only among African-American people at 3% (> 1%): the race result fails, found in that group.
    flips = _result(document, "counterfactual_flip_rate", ["race"])
    assert flips["status"] == "fail"
    assert flips["worst_group"] == {"race": "African-American"}
    assert document["verdict"] == "fail"
    groups = {g["group"].get("race"): g for g in block["counterfactual"]["groups"] if g["slicing"] == ["race"]}
    assert groups["Caucasian"]["flips"] == 0
    african = groups["African-American"]
    assert african["to_favorable"]["n"] + african["to_unfavorable"]["n"] == african["flips"]
    assert african["ci_low"] < african["flip_rate"] < african["ci_high"]


def test_a_demanding_threshold_fails_and_an_override_relaxes_one_slicing(people: pl.DataFrame) -> None:
    strict = _policy({"features": FEATURES, "min_consistency": 0.95})
    document = _audit(people, strict)
    assert _result(document, "consistency", [])["status"] == "fail"
    assert "counterfactual_flip_rate" not in {r["metric"] for r in document["results"]}
    relaxed = _policy(
        {"features": FEATURES, "min_consistency": 0.95},
        overrides=[{"metric": "consistency", "slicing": ["sex"], "threshold": 0.3, "reason": "agreed floor"}],
        ci_cd_gate={"critical_metrics": ["consistency"]},
    )
    document = _audit(people, relaxed)
    by_sex = _result(document, "consistency", ["sex"])
    assert by_sex["threshold"] == 0.3
    assert by_sex["status"] == "pass"
    assert by_sex["critical"]
    assert by_sex["override_reasons"] == ["agreed floor"]


def test_small_groups_are_reported_not_judged(people: pl.DataFrame) -> None:
    policy = _policy({"features": FEATURES, "min_consistency": 0.5}, intersectional_analysis={"min_group_size": 100})
    document = _audit(people, policy)
    by_race = _result(document, "consistency", ["race"])
    small = [g["race"] for g in by_race["insufficient_groups"]]
    assert set(small) == {"Asian", "Native American"}  # 32 and 18 people
    rows = [g for g in document["individual_fairness"]["consistency"]["groups"] if g["group"].get("race") == "Asian"]
    assert rows[0]["n"] == 32
    assert rows[0]["sufficient"] is False
    assert rows[0]["value"] is not None


def test_policy_section_keeps_old_hashes_and_names_its_errors() -> None:
    plain = _policy(None)
    assert "individual_fairness" not in plain.canonical_json()
    with_section = _policy({"features": "all numeric"})
    assert with_section.sha256() != plain.sha256()
    with pytest.raises(PolicyError, match=r"individual_fairness\.k"):
        _policy({"k": 0})
    with pytest.raises(PolicyError, match=r"individual_fairness\.scaling"):
        _policy({"scaling": "zscore"})
    with pytest.raises(PolicyError, match="not in metrics") as caught:
        _policy({"features": FEATURES}, ci_cd_gate={"critical_metrics": ["consistency"]})  # not judged: no threshold
    assert "judged when the individual_fairness: section sets min_consistency" in caught.value.message


@pytest.mark.parametrize(("check", "threshold"), [("consistency", 0.7), ("counterfactual_flip_rate", 0.03)])
def test_a_check_written_as_a_metric_says_where_it_goes(check: str, threshold: float) -> None:
    with pytest.raises(PolicyError) as caught:
        _policy(None, metrics=[{"name": check, "threshold": threshold}])
    message = caught.value.message
    assert "fairness_checker.metrics.0" in message
    assert f"{check!r} is an individual-fairness check, not a group metric" in message
    assert "unknown metric" not in message
    assert "refused in multiclass, regression and ranking audits" in message  # so no one writes it there in vain
    # The section it shows, with the rule's threshold, is one the policy accepts and judges the check with.
    shown = re.search(r"'(individual_fairness: \{.*?\})'", message)
    assert shown is not None, message
    section = yaml.safe_load(shown.group(1))["individual_fairness"]
    fixed = _policy(section, ci_cd_gate={"critical_metrics": [check]})
    assert fixed.individual_rules()[check][0] == threshold
