"""The group-thresholds task on the demo policy and COMPAS: defaults from the policy, re-audit, clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

import fairgate
from fairgate.errors import DataError, PolicyError
from tasks.mitigation.thresholds import fit_thresholds_task, parse_objective, thresholds_json
from tasks.render.frontier_chart import frontier_chart

REPO = Path(__file__).resolve().parents[2]
COMPAS_CSV = REPO / ".." / "shared" / "data" / "compas" / "compas-scores-two-years.csv"
DEMO_POLICY = REPO / "fairgate" / "policies" / "compas_demo.yaml"


@pytest.fixture(scope="module")
def policy() -> fairgate.Policy:
    policy = fairgate.Policy.from_yaml(DEMO_POLICY.read_text(), source=str(DEMO_POLICY))
    # The test needs the judgement, not 1000 bootstrap replicates.
    return policy.model_copy(update={"statistics": policy.statistics.model_copy(update={"n_bootstrap": 0})})


@pytest.fixture(scope="module")
def rows() -> pl.DataFrame:
    raw = pl.read_csv(COMPAS_CSV)
    return raw.select(
        "race",
        "sex",
        "age_cat",
        pl.col("two_year_recid").cast(pl.Int64),
        (pl.col("decile_score") / 10).alias("score"),
        pl.col("score_text").is_in(["Medium", "High"]).cast(pl.Int64).alias("y_pred"),
    )


def _race_result(document: dict, metric: str) -> dict:
    (result,) = [r for r in document["results"] if r["metric"] == metric and r["slicing"] == ["race"]]
    return result


def test_defaults_come_from_the_policy_and_the_re_audit_passes(rows: pl.DataFrame, policy: fairgate.Policy) -> None:
    main = rows.filter(pl.col("race").is_in(["African-American", "Caucasian", "Hispanic"]))
    mitigation = fit_thresholds_task.fn(main, policy, frontier_steps=6)
    assert mitigation.metric == "equal_opportunity_difference"  # the demo policy's critical metric
    assert (
        mitigation.fit.tolerance == 0.0
    )  # DEFAULT_TOLERANCE: exact equality (tasks/mitigation/thresholds.py says why)
    assert mitigation.attributes == ["race"]
    assert mitigation.fit.favorable_label == 0
    mitigated = pl.from_arrow(mitigation.mitigated)
    assert isinstance(mitigated, pl.DataFrame)
    assert mitigated.drop("y_pred").equals(main.drop("y_pred"))
    assert mitigated["y_pred"].dtype == pl.Int64
    before = _race_result(fairgate.audit(main, policy).to_dict(), "equal_opportunity_difference")
    after = _race_result(fairgate.audit(mitigated, policy).to_dict(), "equal_opportunity_difference")
    assert before["status"] == "fail"
    # No longer a failure; without bootstrap replicates the gate calls a value under the threshold inconclusive.
    assert after["status"] in {"pass", "inconclusive"}
    assert after["value"] < 0.10 < before["value"]
    held_out = mitigation.held_out
    assert held_out is not None
    assert held_out["rows_fit"] + held_out["rows_measured"] == main.height
    assert held_out["after"]["tpr_gap"] < held_out["before"]["tpr_gap"] - 0.05
    document = json.loads(thresholds_json(mitigation))
    assert document["held_out_check"] == held_out
    assert set(document["groups"]) == {"African-American", "Caucasian", "Hispanic"}
    assert document["frontier"]["pareto"][0]["tolerance"] == 0.0
    assert document["metric"] == "equal_opportunity_difference"
    # The report's chart: the frontier, the audited model and the chosen point, identical for identical input.
    svg = frontier_chart(document, threshold=0.10)
    assert svg.startswith("<svg")
    for text in ("Pareto frontier", "audited model", "chosen thresholds", "policy threshold 0.1"):
        assert text in svg
    assert frontier_chart(document, threshold=0.10) == svg


def test_intersections_and_options(rows: pl.DataFrame, policy: fairgate.Policy) -> None:
    main = rows.filter(pl.col("race").is_in(["African-American", "Caucasian"]))
    mitigation = fit_thresholds_task.fn(
        main,
        policy,
        metric="equalized_odds_difference",
        attributes=["race", "sex"],
        tolerance=0.05,
        objective={"fp": 1, "fn": 2},
        frontier_steps=3,
    )
    assert set(mitigation.fit.rules) == {
        f"{r} × {s}" for r in ("African-American", "Caucasian") for s in ("Male", "Female")
    }
    assert mitigation.fit.constraint == "equalized_odds"
    assert mitigation.fit.achieved_gap <= 0.05 + 1e-7


def test_without_a_prediction_column_the_policy_threshold_decides_before(
    rows: pl.DataFrame, policy: fairgate.Policy
) -> None:
    main = rows.filter(pl.col("race").is_in(["African-American", "Caucasian"]))
    mitigation = fit_thresholds_task.fn(main.drop("y_pred"), policy, frontier_steps=3)
    expected_before = (main["score"] >= policy.columns.decision_threshold).cast(pl.Int64).to_numpy()
    direct = fit_thresholds_task.fn(main.with_columns(pl.Series("y_pred", expected_before)), policy, frontier_steps=3)
    assert mitigation.fit.before == direct.fit.before
    assert pl.from_arrow(mitigation.mitigated)["y_pred"].dtype == pl.Int8  # type: ignore[index]


def test_errors_name_what_is_wrong(rows: pl.DataFrame, policy: fairgate.Policy) -> None:
    with pytest.raises(DataError, match="need the score column 'score'"):
        fit_thresholds_task.fn(rows.drop("score"), policy)
    with pytest.raises(PolicyError, match="'demographic_parity_difference' is not one of them"):
        fit_thresholds_task.fn(rows, policy, metric="demographic_parity_difference")
    with pytest.raises(PolicyError, match="needs keys fp and fn"):
        parse_objective({"fp": 1})
    with pytest.raises(DataError, match="attribute values are missing"):
        fit_thresholds_task.fn(rows.with_columns(pl.lit(None, pl.String).alias("race")), policy)
    tiny = rows.filter(pl.col("race").is_in(["Caucasian", "Native American"]) & (pl.col("two_year_recid") == 1))
    with pytest.raises(DataError, match="has no rows with the favourable truth"):
        fit_thresholds_task.fn(tiny, policy)


def test_the_task_runs_in_a_real_flow(prefect_server: str, rows: pl.DataFrame, policy: fairgate.Policy) -> None:
    """Under a flow run on the test Prefect server: the task's result is the same as the plain call's."""
    from prefect import flow

    main = rows.filter(pl.col("race").is_in(["African-American", "Caucasian"]))

    @flow(name="thresholds-task-check")
    def run() -> dict:
        return fit_thresholds_task(main, policy, frontier_steps=3).to_dict()

    in_flow = run()
    plain = fit_thresholds_task.fn(main, policy, frontier_steps=3).to_dict()
    assert in_flow == plain
    assert in_flow["achieved_gap"] <= 0.10 + 1e-7
