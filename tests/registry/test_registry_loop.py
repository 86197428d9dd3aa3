"""The whole loop on real servers: a scikit-learn model trained on COMPAS is logged and registered in MLflow with
its validation predictions named in tags -> the watch emits the registration -> the audit flow runs with the
event's payload (as the on-registration deployment would) -> the write-back puts the verdict (a FAIL) on the
version and takes its approval alias away.

The ``fairgate.audit.completed`` payload is built here from the audit's result as contract.md defines it (the
audit flow emits it on the branch that adds the event)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest
from registry_helpers import COMPAS_CSV, registered_events

from flows.audit import fairness_audit
from flows.registry_watch import registry_watch
from flows.registry_writeback import registry_writeback

POLICY = """\
fairness_checker:
  favorable_label: 0
  sensitive_attributes:
    - {name: sex, values: [Male, Female], reference_group: Male}
    - {name: race, values: [African-American, Caucasian, Hispanic, Other, Asian, Native American],
       reference_group: Caucasian}
  metrics:
    - {name: disparate_impact_ratio, threshold: 0.8}
    - {name: equal_opportunity_difference, threshold: 0.1}
  intersectional_analysis: {enabled: false}
  reporting: {format: [json, junit]}
  columns: {y_true: two_year_recid}
  statistics: {n_bootstrap: 100, seed: 0}
"""

FEATURES = ["priors_count", "age", "juv_fel_count", "juv_misd_count"]


def _train_and_predict(folder: Path) -> tuple[Any, Path]:
    """A logistic regression of two-year recidivism on criminal history and age (no protected attribute as a
    feature), and its predictions for every person as fairgate reads them (id, score, y_pred)."""
    from sklearn.linear_model import LogisticRegression

    frame = duckdb.read_csv(str(COMPAS_CSV), header=True).df()
    model = LogisticRegression(max_iter=1000).fit(frame[FEATURES], frame["two_year_recid"])
    frame["score"] = model.predict_proba(frame[FEATURES])[:, 1]
    frame["y_pred"] = (frame["score"] >= 0.5).astype(int)
    predictions = folder / "validation_predictions.parquet"
    duckdb.from_df(frame[["id", "score", "y_pred"]]).to_parquet(str(predictions))
    return model, predictions


@pytest.mark.slow
def test_registered_sklearn_model_gets_its_verdict(
    prefect_server: str,
    mlflow_server: str,
    registry: Any,
    model_name: str,
    compas_inputs: dict[str, Path],
    tmp_path: Path,
) -> None:
    import mlflow
    import mlflow.sklearn

    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    model, predictions = _train_and_predict(tmp_path)
    mlflow.set_tracking_uri(mlflow_server)
    try:
        with mlflow.start_run():
            logged = mlflow.sklearn.log_model(model, name="model")
        tags = {
            "fairgate.predictions": str(predictions),
            "fairgate.labels": str(compas_inputs["labels"]),
            "fairgate.attributes": str(compas_inputs["attributes"]),
            "fairgate.policy": str(policy),
        }
        version = str(mlflow.register_model(logged.model_uri, model_name, tags=tags).version)
    finally:
        mlflow.set_tracking_uri(None)

    watched = registry_watch(tracking_uri=mlflow_server, models=[model_name], return_state=True)
    assert watched.is_completed(), watched.message
    (event,) = registered_events(f"model.{model_name}.{version}", expect=1)

    # What the on-registration deployment does with the event: the audit flow with its payload.
    payload = event.payload
    audited = fairness_audit(
        policy=payload["policy"],
        predictions=payload["predictions"],
        labels=payload["labels"],
        attributes=payload["attributes"],
        out_dir=str(tmp_path / "out"),
        model_name=event.resource["fairgate.model.name"],
        model_version=event.resource["fairgate.model.version"],
        trail=str(tmp_path / "trail.duckdb"),
        registry=payload["registry"],
        return_state=True,
    )
    assert audited.is_completed(), audited.message
    summary = audited.result()
    document = json.loads(Path(summary["outputs"]["json"]).read_text())
    assert document["model"] == {"name": model_name, "version": version}

    # The model flags Black defendants far more often (disparate impact by race about 0.64 < 0.8): a FAIL, which
    # takes back an approval the version held (set here as if an earlier audit had passed).
    assert summary["verdict"] == "fail"
    registry.set_registered_model_alias(model_name, "fairness-approved", version)
    # The audit's own fairgate.audit.completed event, labelled for the MLflow write-back's trigger.
    (event,) = registered_events(f"model.{model_name}.{version}", expect=1, name="fairgate.audit.completed")
    assert event.resource["fairgate.registry.kind"] == "mlflow"
    completed = event.payload
    assert completed["registry"] == payload["registry"]
    assert "disparate_impact_ratio@race" in completed["failed_metrics"]
    written = registry_writeback(completed, return_state=True)
    assert written.is_completed(), written.message

    version_tags = dict(registry.get_model_version(model_name, version).tags)
    assert version_tags["fairgate.verdict"] == summary["verdict"]
    assert version_tags["fairgate.run_id"] == summary["run_id"]
    assert json.loads(version_tags["fairgate.failed_metrics"]) == completed["failed_metrics"]
    outputs = completed["outputs"]
    assert version_tags["fairgate.report"] == (outputs["pdf"] or outputs["html"] or outputs["json"])
    assert Path(version_tags["fairgate.report"]).is_file()
    # The model card beside the verdict: an artifact of the version's run, built from the audit's JSON.
    run_id = registry.get_model_version(model_name, version).run_id
    assert version_tags["fairgate.model_card"] == f"runs:/{run_id}/fairgate/model_card.json"
    card = json.loads(Path(registry.download_artifacts(run_id, "fairgate/model_card.json", str(tmp_path))).read_text())
    assert card["model_details"]["version"] == {"name": version}
    assert dict(registry.get_registered_model(model_name).aliases) == {}
