"""``fairgate mitigate --method retrain`` end to end on COMPAS: a LogisticRegression on priors, age and juvenile
counts, retrained with Fairlearn's ExponentiatedGradient under the policy's demographic-parity constraint, on 60%
of the people; the ``fairness-audit`` flow audits the model before and after on the held-out 40%."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import joblib
import numpy as np
import polars as pl
import pytest
from mitigation_helpers import FEATURES, InProcessRunner
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from cli import app


@pytest.fixture(autouse=True)
def _flows_use_the_session_server(prefect_server: str) -> None:
    """The retrain flow and its audit subflows run on the one test server."""


def _gap(predictions: Path, evaluation: Path, column: str, favourable: int = 0) -> float:
    """Largest difference of favourable-prediction rates between the two big race groups, held out."""
    joined = pl.read_parquet(predictions).join(pl.read_csv(evaluation), on="id")
    rates = (
        joined.filter(pl.col("race").is_in(["African-American", "Caucasian"]))
        .group_by("race")
        .agg((pl.col(column) == favourable).mean().alias("rate"))
    )
    return float(rates["rate"].max() - rates["rate"].min())  # type: ignore[operator]


@pytest.fixture(scope="module")
def retrained(
    runner: InProcessRunner, compas_files: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("retrain")
    estimator = folder / "model.joblib"
    joblib.dump(make_pipeline(StandardScaler(), LogisticRegression()), estimator)
    out = folder / "out"
    args = ["mitigate", "--method", "retrain", "--policy", str(compas_files["policy"]), "--attribute", "race"]
    args += ["--training", str(compas_files["training"]), "--evaluation", str(compas_files["evaluation"])]
    args += ["--estimator", str(estimator), "--out", str(out), "--model", "compas-lr", "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code in (0, 1), (result.exit_code, result.stderr)
    return {"summary": json.loads(result.stdout), "exit_code": result.exit_code, "out": out}


def test_constraint_comes_from_the_policy(retrained: dict[str, Any]) -> None:
    constraint = retrained["summary"]["constraint"]
    assert constraint["family"] == "demographic_parity"
    assert constraint["metric"] == "demographic_parity_difference"
    assert constraint["difference_bound"] == 0.05
    assert constraint["attributes"] == ["race"]
    assert retrained["summary"]["answers"] is None
    assert retrained["summary"]["features"] == FEATURES


def test_retrained_model_narrows_the_held_out_gap(retrained: dict[str, Any], compas_files: dict[str, Path]) -> None:
    outputs = retrained["summary"]["outputs"]
    before = _gap(Path(outputs["predictions_before"]), compas_files["evaluation"], "y_pred")
    after = _gap(Path(outputs["predictions_after"]), compas_files["evaluation"], "y_pred")
    assert before > 0.15  # the unconstrained model flags African-Americans far more often
    assert after < before / 2
    model = joblib.load(outputs["model"])
    assert type(model).__name__ == "ExponentiatedGradient"


def test_accuracy_cost_is_that_of_the_written_predictions(
    retrained: dict[str, Any], compas_files: dict[str, Path]
) -> None:
    outputs, accuracy = retrained["summary"]["outputs"], retrained["summary"]["accuracy"]
    truth = pl.read_csv(compas_files["evaluation"]).select("id", "two_year_recid", "race")
    for stage, key in (("before", "predictions_before"), ("after", "predictions_after")):
        joined = pl.read_parquet(outputs[key]).join(truth, on="id")
        overall = float((joined["y_pred"] == joined["two_year_recid"]).mean())  # type: ignore[arg-type]
        assert accuracy["overall"][stage] == pytest.approx(overall, abs=1e-12)
        black = joined.filter(pl.col("race") == "African-American")
        group = float((black["y_pred"] == black["two_year_recid"]).mean())  # type: ignore[arg-type]
        assert accuracy["groups"]["African-American"][stage] == pytest.approx(group, abs=1e-12)
    assert accuracy["overall"]["rows"] == truth.height
    assert -0.15 < accuracy["overall"]["change"] < 0.02  # a price, and a bounded one


def test_both_audits_ran_and_the_gate_is_the_re_audits(retrained: dict[str, Any]) -> None:
    audits = retrained["summary"]["audits"]
    documents = {stage: json.loads(Path(audits[stage]["outputs"]["json"]).read_text()) for stage in audits}
    assert documents["before"]["model"]["version"] == "unconstrained"
    assert documents["after"]["model"]["version"].startswith("exponentiated-gradient-")
    assert audits["before"]["verdict"] == "fail"
    assert "demographic_parity_difference" in " ".join(audits["before"]["failed_metrics"])
    assert retrained["exit_code"] == audits["after"]["exit_code"] == retrained["summary"]["exit_code"]

    def race_dp(document: dict[str, Any]) -> float:
        (row,) = [
            r
            for r in document["results"]
            if r["metric"] == "demographic_parity_difference" and r["slicing"] == ["race"]
        ]
        return float(row["value"])

    assert race_dp(documents["after"]) < race_dp(documents["before"])


def test_bad_estimator_file_is_refused(runner: InProcessRunner, compas_files: dict[str, Path], tmp_path: Path) -> None:
    not_a_model = tmp_path / "model.joblib"
    joblib.dump({"weights": np.ones(3)}, not_a_model)
    out = tmp_path / "out"
    args = ["mitigate", "--method", "retrain", "--policy", str(compas_files["policy"]), "--out", str(out)]
    args += ["--training", str(compas_files["training"]), "--evaluation", str(compas_files["evaluation"])]
    result = runner.invoke(app, [*args, "--estimator", str(not_a_model)])
    assert result.exit_code == 2, result.stderr
    assert "not a scikit-learn classifier" in " ".join(result.stderr.split())
    assert not out.exists()


def test_policy_without_a_constrainable_metric_is_refused(
    runner: InProcessRunner, compas_files: dict[str, Path], tmp_path: Path
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(compas_files["policy"].read_text().replace("demographic_parity_difference", "auc_difference"))
    policy.write_text(policy.read_text().replace("equal_opportunity_difference", "predictive_parity_difference"))
    estimator = tmp_path / "model.joblib"
    joblib.dump(LogisticRegression(), estimator)
    out = tmp_path / "out"
    args = ["mitigate", "--method", "retrain", "--policy", str(policy), "--out", str(out)]
    args += ["--training", str(compas_files["training"]), "--evaluation", str(compas_files["evaluation"])]
    result = runner.invoke(app, [*args, "--estimator", str(estimator)])
    assert result.exit_code == 2, result.stderr
    assert "no metric retraining can constrain" in " ".join(result.stderr.split())
    assert not out.exists()


def test_estimator_that_cannot_take_the_features_is_refused(
    runner: InProcessRunner, compas_files: dict[str, Path], tmp_path: Path
) -> None:
    """Found only when fitting (a text feature for a LogisticRegression): still exit 2, not a crash."""
    estimator = tmp_path / "model.joblib"
    joblib.dump(LogisticRegression(), estimator)
    out = tmp_path / "out"
    args = ["mitigate", "--method", "retrain", "--policy", str(compas_files["policy"]), "--out", str(out)]
    args += ["--training", str(compas_files["training"]), "--evaluation", str(compas_files["evaluation"])]
    args += ["--estimator", str(estimator), "--feature", "priors_count", "--feature", "race"]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.stderr
    message = " ".join(result.stderr.split())
    assert "the estimator could not be trained on --training" in message
    assert "Traceback" not in result.stderr + result.stdout
    assert not out.exists()
