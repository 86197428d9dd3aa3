"""prefect.yaml: each deployment points at the fairness-audit flow with parameters the flow accepts."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def test_deployments_name_the_flow_and_its_parameters() -> None:
    config = yaml.safe_load((REPO / "prefect.yaml").read_text())
    deployments = {d["name"]: d for d in config["deployments"]}
    assert set(deployments) == {"nightly", "on-registration", "on-demand"}
    for deployment in deployments.values():
        module_path, function = deployment["entrypoint"].split(":")
        module = importlib.import_module(module_path.removesuffix(".py").replace("/", "."))
        flow = getattr(module, function)
        assert flow.name == "fairness-audit"
        accepted = set(inspect.signature(flow.fn).parameters)
        given = set(deployment.get("parameters", {}))
        for trigger in deployment.get("triggers", []):
            given |= set(trigger.get("parameters", {}))
        assert given <= accepted, given - accepted
    assert deployments["nightly"]["schedules"][0]["cron"] == "0 2 * * *"
    assert deployments["on-registration"]["triggers"][0]["expect"] == ["fairgate.model.registered"]
