"""``fairness-monitor/nightly``: registered only when the policy monitors and the nightly sources are given;
its entrypoint is a module path and its parameters are ones the flow accepts."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

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
