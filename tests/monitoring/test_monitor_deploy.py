"""``fairness-monitor/nightly``: registered only when the policy monitors and the nightly sources are given;
its entrypoint is a module path and its parameters are ones the flow accepts."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import polars as pl
import pytest

from fairgate.errors import FairgateError
from flows.deployments import DeploySettings, build_deployments


def _settings(tmp_path: Path, **changes: object) -> DeploySettings:
    values: dict[str, object] = {
        "pool": "fairgate",
        "policy": str(tmp_path / "policy.yaml"),
        "out_dir": str(tmp_path / "out"),
        "labels": str(tmp_path / "labels.parquet"),
        "attributes": str(tmp_path / "attributes.parquet"),
        "predictions": str(tmp_path / "predictions.parquet"),
        "model_name": "credit",
        "monitor": True,
        "cron": "15 3 * * *",
        **changes,
    }
    return DeploySettings(**values)  # type: ignore[arg-type]


def test_the_nightly_monitor_is_deployed_with_parameters_the_flow_accepts(tmp_path: Path) -> None:
    deployments = {d.full_name: d for d in build_deployments(_settings(tmp_path))}
    monitor = deployments["fairness-monitor/nightly"]
    assert monitor.entrypoint == "flows.monitor.fairness_monitor"
    module_path, _, function = monitor.entrypoint.rpartition(".")
    flow = getattr(importlib.import_module(module_path), function)
    assert flow.name == "fairness-monitor"
    assert set(monitor.parameters) <= set(inspect.signature(flow.fn).parameters)
    assert monitor.parameters["model_name"] == "credit"
    assert monitor.parameters["predictions"] == str(tmp_path / "predictions.parquet")
    (schedule,) = monitor.schedules
    assert schedule.schedule.cron == "15 3 * * *"  # type: ignore[union-attr]


def test_no_nightly_monitor_without_the_section_or_the_sources(tmp_path: Path) -> None:
    for changes in ({"monitor": False}, {"predictions": None}):
        names = {d.full_name for d in build_deployments(_settings(tmp_path, **changes))}
        assert "fairness-monitor/nightly" not in names
        assert "fairness-audit/on-demand" in names


def test_a_nightly_monitor_without_labels_is_deployed_to_run_label_free_nights(tmp_path: Path) -> None:
    """Labels that arrive late: both nightlies get ``labels`` None (every parameter the flow needs is given);
    a run given ``labels`` overrides it with the late labels."""
    deployments = {d.full_name: d for d in build_deployments(_settings(tmp_path, labels=None))}
    for name in ("fairness-monitor/nightly", "fairness-audit/nightly"):
        deployment = deployments[name]
        assert deployment.parameters["labels"] is None
        module_path, _, function = str(deployment.entrypoint).rpartition(".")
        signature = inspect.signature(getattr(importlib.import_module(module_path), function).fn)
        needed = {p.name for p in signature.parameters.values() if p.default is inspect.Parameter.empty}
        assert needed <= set(deployment.parameters), name
    assert "labels" not in deployments["fairness-audit/on-demand"].parameters  # given per run
    labelled = {d.full_name: d for d in build_deployments(_settings(tmp_path))}
    assert labelled["fairness-monitor/nightly"].parameters["labels"] == str(tmp_path / "labels.parquet")


MONITORING_POLICY = """\
fairness_checker:
  sensitive_attributes: [{name: race, reference_group: Caucasian}]
  metrics: [{name: equal_opportunity_difference, threshold: 0.1}]
  monitoring: {period: week, windows: [7]}
"""


def test_deploy_accepts_a_nightly_monitor_without_labels(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``fairgate deploy --predictions --attributes`` without ``--labels`` is checked and set up (the deployment
    audit is not required at deploy time, as with labels); without --attributes it is refused naming it."""
    from cli.deploy_cmd import _settings as deploy_settings

    (tmp_path / "policy.yaml").write_text(MONITORING_POLICY)
    pl.DataFrame({"id": [1], "score": [0.5], "y_pred": [1]}).write_parquet(tmp_path / "predictions.parquet")
    pl.DataFrame({"id": [1], "race": ["Caucasian"]}).write_parquet(tmp_path / "attributes.parquet")
    sources = [str(tmp_path / "predictions.parquet"), str(tmp_path / "attributes.parquet")]
    common = ("credit", tmp_path / "out", tmp_path / "trail.duckdb", "fairgate", "0 2 * * *", "UTC", False)
    settings = deploy_settings(tmp_path / "policy.yaml", None, sources[1], sources[0], *common)
    assert settings.labels is None
    assert settings.monitor is True
    assert settings.predictions == sources[0]
    with pytest.raises(FairgateError, match="also needs --attributes"):
        deploy_settings(tmp_path / "policy.yaml", None, None, sources[0], *common)
