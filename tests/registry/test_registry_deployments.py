"""The two deployment specs, applied to the real Prefect test server: the watch every minute; the write-back
started by a ``fairgate.audit.completed`` event with the event's payload as a dict parameter."""

from __future__ import annotations

import time
import uuid
from typing import Any

from flows.registry_watch import deployment_spec as watch_spec
from flows.registry_watch import registry_watch
from flows.registry_writeback import deployment_spec as writeback_spec
from flows.registry_writeback import registry_writeback


def test_the_watch_deployment_runs_every_minute(prefect_server: str) -> None:
    from prefect.client.orchestration import get_client

    deployment_id = registry_watch.to_deployment(**watch_spec()).apply()
    with get_client(sync_client=True) as client:
        deployment = client.read_deployment(deployment_id)
    assert deployment.name == "registry-watch"
    assert [s.schedule.cron for s in deployment.schedules] == ["* * * * *"]
    assert all(s.active for s in deployment.schedules)


def _flow_runs(deployment_id: uuid.UUID, expect: int, timeout_s: float = 90) -> list[Any]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterId

    deadline = time.monotonic() + timeout_s
    with get_client(sync_client=True) as client:
        while True:
            runs = client.read_flow_runs(
                deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[deployment_id]))
            )
            if len(runs) >= expect or time.monotonic() > deadline:
                return runs
            time.sleep(1)


def test_a_completed_audit_starts_the_writeback_with_its_payload(prefect_server: str) -> None:
    from prefect.events import emit_event

    deployment_id = registry_writeback.to_deployment(**writeback_spec()).apply()
    name = f"credit-{uuid.uuid4().hex[:6]}"
    payload = {
        "verdict": "fail",
        "exit_code": 1,
        "failed_metrics": ["disparate_impact_ratio@race"],
        "run_id": "a1b2c3d4e5f6",
        "flow_run_id": str(uuid.uuid4()),
        "model_name": name,
        "model_version": "4",
        "outputs": {"json": "/r/a.json", "pdf": None, "html": None},
        "trail": "/r/trail.duckdb",
        "registry": {"kind": "mlflow", "tracking_uri": "http://127.0.0.1:5000", "name": name, "version": "4"},
    }
    resource = {
        "prefect.resource.id": f"model.{name}.4",
        "prefect.resource.name": name,
        "fairgate.model.name": name,
        "fairgate.model.version": "4",
        "fairgate.verdict": "fail",
        "fairgate.registry.kind": "mlflow",
    }
    time.sleep(3)  # the triggers service loads the new automation
    emit_event(event="fairgate.audit.completed", resource=resource, payload=payload)

    runs = _flow_runs(deployment_id, expect=1)
    assert len(runs) == 1
    assert runs[0].parameters["payload"] == payload  # a dict, as the flow takes it, not its text
    assert runs[0].parameters["alias"] == "fairness-approved"
