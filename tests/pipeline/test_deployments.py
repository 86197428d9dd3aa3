"""The deployments ``fairgate deploy`` registers (flows/deployments.py), as built before they reach the API:
entrypoints importable from the installed package, parameters the flows accept, every path absolute, the
nightly schedule and the registration trigger; and the audit flow's parameter schema for numeric versions."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import jsonschema
import pytest

from flows.audit import fairness_audit
from flows.deployments import DeploySettings, absolute_source, build_deployments

REPO = Path(__file__).resolve().parents[2]


def _settings(tmp_path: Path, **changes: str | None) -> DeploySettings:
    values = {
        "pool": "fairgate",
        "policy": str(tmp_path / "policy.yaml"),
        "out_dir": str(tmp_path / "out"),
        "labels": str(tmp_path / "labels.csv"),
        "attributes": f"{tmp_path / 'warehouse.duckdb'}::attributes",
        "predictions": str(tmp_path / "predictions.parquet"),
        "model_name": "credit",
        **changes,
    }
    return DeploySettings(**values)


def test_three_deployments_import_their_flow_by_module_path_with_parameters_it_accepts(tmp_path: Path) -> None:
    deployments = {d.full_name: d for d in build_deployments(_settings(tmp_path))}
    assert set(deployments) == {
        "fairness-audit/nightly",
        "fairgate-registration/on-registration",
        "fairness-audit/on-demand",
    }
    for deployment in deployments.values():
        assert deployment.entrypoint is not None
        assert ":" not in deployment.entrypoint  # a module path: no file, no checkout on the worker
        module_path, _, function = deployment.entrypoint.rpartition(".")
        flow = getattr(importlib.import_module(module_path), function)
        assert flow.name == deployment.flow_name
        accepted = set(inspect.signature(flow.fn).parameters)
        given = set(deployment.parameters)
        for trigger in deployment.triggers:
            given |= set(trigger.parameters or {})
        assert given <= accepted, given - accepted
        assert deployment.work_pool_name == "fairgate"
        assert deployment.storage is None  # nothing to pull


def test_the_nightly_schedule_and_the_registration_trigger(tmp_path: Path) -> None:
    deployments = {
        d.name: d for d in build_deployments(_settings(tmp_path, cron="30 1 * * *", timezone="Europe/Paris"))
    }
    schedule = deployments["nightly"].schedules[0].schedule
    assert (schedule.cron, schedule.timezone) == ("30 1 * * *", "Europe/Paris")
    assert deployments["nightly"].parameters["model_name"] == "credit"
    (trigger,) = deployments["on-registration"].triggers
    assert trigger.expect == {"fairgate.model.registered"}
    # No resource filter: an event with a malformed resource must still start a run, to be rejected visibly.
    assert trigger.match.root == {}
    assert trigger.parameters == {"event": "{{ event }}"}
    assert not deployments["on-demand"].schedules
    assert not deployments["on-demand"].triggers


def test_an_mlflow_registry_adds_the_watch_and_the_write_back(tmp_path: Path) -> None:
    pytest.importorskip("mlflow")
    uri = "http://127.0.0.1:5000"
    deployments = {d.full_name: d for d in build_deployments(_settings(tmp_path, mlflow_tracking_uri=uri))}
    watch = deployments["fairgate-registry-watch/registry-watch"]
    writeback = deployments["fairgate-registry-writeback/registry-writeback"]
    assert len(deployments) == 5
    assert watch.schedules[0].schedule.cron == "* * * * *"
    assert watch.parameters["tracking_uri"] == writeback.parameters["tracking_uri"] == uri
    (trigger,) = writeback.triggers
    assert trigger.expect == {"fairgate.audit.completed"}
    # Only audits started for an MLflow version (tasks.outbound.events labels their resource) start a write-back run.
    assert trigger.match.root["fairgate.registry.kind"] == "mlflow"
    for deployment in (watch, writeback):
        assert deployment.entrypoint is not None
        assert ":" not in deployment.entrypoint
        assert deployment.work_pool_name == "fairgate"


def test_the_nightly_runs_record_the_command_that_reproduces_them(tmp_path: Path) -> None:
    """A nightly audit's and monitoring night's document names the equivalent fairgate command (no one typed it)."""
    import shlex

    deployments = {d.full_name: d for d in build_deployments(_settings(tmp_path, monitor=True))}  # type: ignore[arg-type]
    for full_name, command in (("fairness-audit/nightly", "audit"), ("fairness-monitor/nightly", "monitor run")):
        parameters = deployments[full_name].parameters
        words = shlex.split(parameters["command_line"])
        assert words[: 1 + len(command.split())] == ["fairgate", *command.split()], full_name
        options = dict(zip(words[1 + len(command.split()) :: 2], words[2 + len(command.split()) :: 2], strict=True))
        assert options["--policy"] == parameters["policy"]
        assert options["--predictions"] == parameters["predictions"]
        assert options["--attributes"] == parameters["attributes"]  # FILE::TABLE, as given
        assert options["--out"] == parameters["out_dir"]
        assert options["--model" if command == "audit" else "--model-name"] == "credit"


def test_every_path_a_deployment_carries_is_absolute(tmp_path: Path) -> None:
    for deployment in build_deployments(_settings(tmp_path)):
        for name, value in deployment.parameters.items():
            if name in {"policy", "out_dir", "labels", "attributes", "predictions", "trail"}:
                assert Path(str(value).partition("::")[0]).is_absolute(), (deployment.name, name, value)


def test_without_a_predictions_source_there_is_no_nightly_deployment(tmp_path: Path) -> None:
    names = [d.name for d in build_deployments(_settings(tmp_path, predictions=""))]
    assert names == ["on-registration", "on-demand"]


def test_sources_are_made_absolute_with_their_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert absolute_source("w.duckdb::labels") == f"{tmp_path / 'w.duckdb'}::labels"
    assert absolute_source("data/p.csv") == str(tmp_path / "data" / "p.csv")


@pytest.mark.parametrize("version", [9, "9", "2024.1-rc", None])
def test_the_model_version_may_be_a_number_or_text(version: int | str | None) -> None:
    """``prefect deployment run ... -p model_version=9`` sends the number 9: the deployment's parameter schema
    (what the server validates) and the flow's own validation both accept it."""
    from prefect.utilities.callables import parameter_schema

    schema = parameter_schema(fairness_audit.fn).model_dump_for_openapi()
    jsonschema.validate(
        {"policy": "p", "predictions": "a", "labels": "b", "attributes": "c", "model_version": version}, schema
    )
    parameters = {"policy": "p", "predictions": "a", "labels": "b", "attributes": "c", "model_version": version}
    assert fairness_audit.validate_parameters(parameters)["model_version"] == version


def test_no_prefect_yaml_to_drift_from_the_deployments() -> None:
    """The deployments are defined once, in flows/deployments.py; the prefect.yaml whose pull step needed a
    checkout path in the worker's environment is gone."""
    assert not (REPO / "prefect.yaml").exists()


def test_the_names_a_re_deploy_may_remove_are_the_names_deploy_registers(tmp_path: Path) -> None:
    """``DEPLOYED_BY_FAIRGATE`` (what a re-deploy may remove as stale) is every deployment some deploy builds."""
    pytest.importorskip("mlflow")
    from flows.deployments import DEPLOYED_BY_FAIRGATE

    every_option = _settings(tmp_path, mlflow_tracking_uri="http://127.0.0.1:5000")
    every_option = DeploySettings(**{**every_option.__dict__, "monitor": True})
    assert {d.full_name for d in build_deployments(every_option)} == DEPLOYED_BY_FAIRGATE
