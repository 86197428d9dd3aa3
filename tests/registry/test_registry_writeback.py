"""The write-back against a real MLflow server: verdict tags on the version, the alias set on a pass and removed
on a fail (only from the version it points at), audits from elsewhere left alone, bad payloads refused."""

from __future__ import annotations

from typing import Any

from registry_helpers import new_version

from flows.registry_writeback import registry_writeback

ALIAS = "fairness-approved"


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
