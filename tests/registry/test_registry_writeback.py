"""The write-back against a real MLflow server: verdict tags on the version, the alias set on a pass and removed
on a fail (only from the version it points at), audits from elsewhere left alone, bad payloads refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
from registry_helpers import COMPAS_CSV, new_version

from fairgate.document.json_schema import SCHEMA_PATH
from fairgate.report.model_card import TOOLKIT_SCHEMA_FILE
from flows.registry_writeback import registry_writeback

ALIAS = "fairness-approved"
TOOLKIT_SCHEMA = json.loads((SCHEMA_PATH.parent / TOOLKIT_SCHEMA_FILE).read_text())


def _payload(uri: str, name: str, version: str, verdict: str, failed: list[str] | None = None) -> dict[str, Any]:
    """A ``fairgate.audit.completed`` payload as contract.md writes it."""
    return {
        "verdict": verdict,
        "exit_code": 0 if verdict == "pass" else 1,
        "failed_metrics": failed or [],
        "run_id": f"run-{verdict}-{version}",
        "flow_run_id": "0b6c1a7e-0000-4000-8000-000000000001",
        "model_name": name,
        "model_version": version,
        "outputs": {"json": f"/reports/{name}.json", "pdf": f"/reports/{name}.pdf", "html": None},
        "trail": "/reports/fairgate_trail.duckdb",
        "registry": {"kind": "mlflow", "tracking_uri": uri, "name": name, "version": version},
    }


def _write(payload: dict[str, Any], **options: Any) -> Any:
    state = registry_writeback(payload, return_state=True, **options)
    assert state.is_completed(), state.message
    return state


def _aliases(registry: Any, name: str) -> dict[str, str]:
    return dict(registry.get_registered_model(name).aliases)


def test_pass_tags_the_version_and_sets_the_alias(
    prefect_server: str, mlflow_server: str, registry: Any, model_name: str
) -> None:
    version = new_version(registry, model_name)
    state = _write(_payload(mlflow_server, model_name, version, "pass"))

    tags = dict(registry.get_model_version(model_name, version).tags)
    assert tags["fairgate.verdict"] == "pass"
    assert tags["fairgate.run_id"] == f"run-pass-{version}"
    assert tags["fairgate.failed_metrics"] == "[]"
    assert tags["fairgate.report"] == f"/reports/{model_name}.pdf"
    assert tags["fairgate.flow_run_id"] == "0b6c1a7e-0000-4000-8000-000000000001"
    assert _aliases(registry, model_name) == {ALIAS: version}
    assert registry.get_model_version_by_alias(model_name, ALIAS).version == version
    assert state.result()["alias_action"] == "set"


def test_fail_removes_the_alias_from_this_version(
    prefect_server: str, mlflow_server: str, registry: Any, model_name: str
) -> None:
    version = new_version(registry, model_name)
    _write(_payload(mlflow_server, model_name, version, "pass"))
    assert _aliases(registry, model_name) == {ALIAS: version}

    failed = ["disparate_impact_ratio@race", "equal_opportunity_difference@race × sex"]
    state = _write(_payload(mlflow_server, model_name, version, "fail", failed))

    tags = dict(registry.get_model_version(model_name, version).tags)
    assert tags["fairgate.verdict"] == "fail"
    assert tags["fairgate.status"] == "audited: fail"  # no longer "registered" once the audit has answered
    assert tags["fairgate.run_id"] == f"run-fail-{version}"
    assert tags["fairgate.failed_metrics"] == (
        '["disparate_impact_ratio@race", "equal_opportunity_difference@race \\u00d7 sex"]'
    )
    assert _aliases(registry, model_name) == {}
    assert state.result()["alias_action"] == "removed"


def test_fail_leaves_an_alias_on_another_version(
    prefect_server: str, mlflow_server: str, registry: Any, model_name: str
) -> None:
    approved = new_version(registry, model_name)
    candidate = new_version(registry, model_name)
    _write(_payload(mlflow_server, model_name, approved, "pass"))

    state = _write(_payload(mlflow_server, model_name, candidate, "fail", ["demographic_parity_difference@sex"]))

    assert _aliases(registry, model_name) == {ALIAS: approved}
    assert state.result()["alias_action"] == "untouched"
    assert registry.get_model_version(model_name, candidate).tags["fairgate.verdict"] == "fail"


def test_the_alias_name_is_configurable(
    prefect_server: str, mlflow_server: str, registry: Any, model_name: str
) -> None:
    version = new_version(registry, model_name)
    _write(_payload(mlflow_server, model_name, version, "pass"), alias="fair-for-credit")
    assert _aliases(registry, model_name) == {"fair-for-credit": version}


def test_an_audit_from_elsewhere_writes_nothing(prefect_server: str) -> None:
    payload = _payload("http://127.0.0.1:9", "m", "1", "pass") | {"registry": None}
    state = _write(payload)
    assert state.result() is None
    assert "names no MLflow registry" in str(state.message)


def test_bad_payloads_are_refused_with_the_reason(
    prefect_server: str, mlflow_server: str, registry: Any, model_name: str
) -> None:
    version = new_version(registry, model_name)
    missing_version = _payload(mlflow_server, model_name, version, "pass")
    missing_version["registry"] = {"kind": "mlflow", "tracking_uri": mlflow_server, "name": model_name}
    no_verdict = _payload(mlflow_server, model_name, version, "pass")
    del no_verdict["verdict"]
    unknown_version = _payload(mlflow_server, model_name, "999", "pass")
    cases = {
        "registry without version": missing_version,
        "has no verdict": no_verdict,
        f"model {model_name!r} version 999 is not in the MLflow registry": unknown_version,
    }
    for expected, payload in cases.items():
        state = registry_writeback(payload, return_state=True)
        assert state.is_failed()
        assert state.name == "InvalidInput"
        assert expected in str(state.message)
    assert _aliases(registry, model_name) == {}
    assert "fairgate.verdict" not in registry.get_model_version(model_name, version).tags


CARD_POLICY = """\
fairness_checker:
  favorable_label: 0
  sensitive_attributes:
    - {name: sex, values: [Male, Female], reference_group: Male}
  metrics:
    - {name: disparate_impact_ratio, threshold: 0.8}
  intersectional_analysis: {enabled: false}
  columns: {y_true: two_year_recid}
  statistics: {n_bootstrap: 0, seed: 0}
  model_card: {owner: Risk analytics, intended_use: COMPAS pretrial risk research only}
"""


def _audit_json(folder: Path, name: str, version: str) -> Path:
    """A real audit document of COMPAS by sex (the engine, no pipeline), written where the outputs would be."""
    import polars as pl

    import fairgate

    frame = pl.read_csv(COMPAS_CSV).select(
        "sex",
        pl.col("two_year_recid").cast(pl.Int64),
        (pl.col("decile_score") / 10).alias("score"),
        pl.col("score_text").is_in(["Medium", "High"]).cast(pl.Int64).alias("y_pred"),
    )
    policy = fairgate.Policy.from_yaml(CARD_POLICY)
    result = fairgate.audit(frame, policy, model=fairgate.ModelInfo(name=name, version=version), run_id="card-run")
    path = folder / f"{name}.json"
    path.write_text(result.to_json())
    return path


def _card_payload(uri: str, name: str, version: str, document: Path) -> dict[str, Any]:
    payload = _payload(uri, name, version, "fail", ["disparate_impact_ratio@sex"])
    payload["outputs"] = {"json": str(document), "pdf": None, "html": None}
    return payload


def _valid_card(card: dict[str, Any]) -> dict[str, Any]:
    jsonschema.Draft7Validator(TOOLKIT_SCHEMA, format_checker=jsonschema.FormatChecker()).validate(card)
    return card


def test_the_model_card_is_logged_on_the_versions_run(
    prefect_server: str, mlflow_server: str, registry: Any, model_name: str, tmp_path: Path
) -> None:
    version = new_version(registry, model_name)
    run_id = registry.get_model_version(model_name, version).run_id
    _write(_card_payload(mlflow_server, model_name, version, _audit_json(tmp_path, model_name, version)))

    tags = dict(registry.get_model_version(model_name, version).tags)
    assert tags["fairgate.model_card"] == f"runs:/{run_id}/fairgate/model_card.json"
    assert tags["fairgate.verdict"] == "fail"  # beside the verdict tags
    local = registry.download_artifacts(run_id, "fairgate/model_card.json", str(tmp_path / "download"))
    card = _valid_card(json.loads(Path(local).read_text()))
    assert card["considerations"]["use_cases"] == [{"description": "COMPAS pretrial risk research only"}]
    assert card["model_details"]["owners"] == [{"name": "Risk analytics"}]
    assert card["model_details"]["version"] == {"name": version}
    assert "Contact" in card["model_details"]["documentation"]  # named as not stated


def test_a_version_without_a_run_gets_the_card_as_a_tag(
    prefect_server: str, mlflow_server: str, registry: Any, model_name: str, tmp_path: Path
) -> None:
    registry.create_registered_model(model_name)
    version = str(registry.create_model_version(model_name, source="s3://models-elsewhere/compas").version)
    _write(_card_payload(mlflow_server, model_name, version, _audit_json(tmp_path, model_name, version)))

    tags = dict(registry.get_model_version(model_name, version).tags)
    card = _valid_card(json.loads(tags["fairgate.model_card"]))
    assert card["considerations"]["use_cases"][0]["description"] == "COMPAS pretrial risk research only"


def test_without_a_readable_document_the_tag_says_why(
    prefect_server: str, mlflow_server: str, registry: Any, model_name: str
) -> None:
    version = new_version(registry, model_name)
    _write(_payload(mlflow_server, model_name, version, "pass"))  # its JSON path does not exist here
    tags = dict(registry.get_model_version(model_name, version).tags)
    assert tags["fairgate.model_card"].startswith("not logged: the audit's JSON document is not readable")
