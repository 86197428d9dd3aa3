"""A verdict others can act on: the ``fairgate.audit.completed`` event read back from the test Prefect server,
the flow run's final state (Completed, or Failed/PolicyFailed when the policy asks), the persisted result
read through the API, and per-model artifact keys."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from pipeline_helpers import POLICY_PASSING, InProcessRunner, Inputs
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId
from prefect.events.filters import EventFilter, EventNameFilter, EventResourceFilter
from typer.testing import Result

from cli import app
from tasks.audit import artifact_slug

EVENT_WAIT_SECONDS = 60  # the server persists events in batches; on two busy cores this can take a while


def read_events(name: str, resource_id: str, *, run_id: str) -> list[Any]:
    """The events ``name`` about ``resource_id`` whose payload names fairgate run ``run_id``, once stored."""
    event_filter = EventFilter(event=EventNameFilter(name=[name]), resource=EventResourceFilter(id=[resource_id]))
    deadline = time.monotonic() + EVENT_WAIT_SECONDS
    while True:
        with get_client(sync_client=True) as client:
            page = client.read_events(filter=event_filter, limit=50)
        found = [e for e in page.events if e.payload.get("run_id") == run_id]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


def _document(out: Path) -> dict[str, Any]:
    (path,) = out.glob("fairness_*.json")
    return json.loads(path.read_text())


def _completed_event(out: Path, version: str = "1") -> tuple[dict[str, Any], Any]:
    document = _document(out)
    (event,) = read_events("fairgate.audit.completed", f"model.compas.{version}", run_id=document["run_id"])
    return document, event


def _flow_run(flow_run_id: str) -> Any:
    with get_client(sync_client=True) as client:
        return client.read_flow_run(UUID(flow_run_id))


def _failed(document: dict[str, Any]) -> list[str]:
    return [f"{r['metric']}@{'*'.join(r['slicing']) or 'all'}" for r in document["results"] if r["status"] == "fail"]


def test_failing_audit_emits_the_verdict_event_and_ends_completed(failing_run: tuple[Inputs, Result]) -> None:
    inputs, result = failing_run
    assert result.exit_code == 1, result.output
    document, event = _completed_event(inputs.out)
    assert event.resource.id == "model.compas.1"
    assert event.resource["prefect.resource.name"] == "compas"
    assert event.resource["fairgate.model.name"] == "compas"
    assert event.resource["fairgate.model.version"] == "1"
    assert event.resource["fairgate.verdict"] == "fail"
    payload = event.payload
    failed = _failed(document)
    assert failed
    assert payload["failed_metrics"] == failed
    assert payload["verdict"] == "fail"  # one spelling: the document's word, in resource, payload and state
    assert payload["contract_version"] == 2
    assert payload["exit_code"] == 1
    assert (payload["model_name"], payload["model_version"]) == ("compas", "1")
    assert Path(payload["outputs"]["json"]).parent == inputs.out
    assert Path(payload["outputs"]["json"]).exists()
    assert payload["outputs"]["pdf"] is None
    assert payload["outputs"]["html"] is None
    assert Path(payload["trail"]).exists()
    assert payload["registry"] is None
    # Prefect adds the run context's resources (the flow, its tags); the flow run is there once, as contracted.
    (related,) = [r for r in event.related if r.role == "flow-run"]
    assert related.id == f"prefect.flow-run.{payload['flow_run_id']}"

    # Without fail_flow_run the run is Completed; its persisted result, read back through the API, is the summary.
    flow_run = _flow_run(payload["flow_run_id"])
    assert flow_run.state.type.value == "COMPLETED"
    assert flow_run.state.message == f"verdict: fail; failed: {', '.join(failed)}"
    summary = flow_run.state.result()
    assert summary["verdict"] == "fail"
    assert summary["exit_code"] == 1
    assert summary["run_id"] == document["run_id"]
    assert summary["failed_metrics"] == failed
    assert summary["outputs"]["json"] == payload["outputs"]["json"]
    assert "document" not in summary
    assert len(json.dumps(summary)) < 5000


def test_artifact_keys_name_the_model(failing_run: tuple[Inputs, Result]) -> None:
    inputs, _ = failing_run
    _, event = _completed_event(inputs.out)
    with get_client(sync_client=True) as client:
        artifacts = client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[event.payload["flow_run_id"]]))
        )
    keyed = sorted(a.key for a in artifacts if a.key is not None)  # Prefect's own result artifacts have none
    assert keyed == ["fairness-metrics-compas", "fairness-verdict-compas"]


def test_artifact_slug_follows_prefect_key_rules() -> None:
    assert artifact_slug("COMPAS Risk_Score v2") == "compas-risk-score-v2"
    assert artifact_slug("Modèle/Crédit.2024") == "modele-credit-2024"
    assert artifact_slug("../..") == "model"
    assert len(artifact_slug("x" * 500)) <= 80


def test_fail_flow_run_ends_the_run_failed_and_the_cli_still_exits_1(runner: InProcessRunner, inputs: Inputs) -> None:
    inputs.policy.write_text(inputs.policy.read_text() + "  ci_cd_gate: {fail_flow_run: true}\n")
    result = runner.invoke(app, inputs.args("--quiet", "--model-version", "policy-failed"))
    assert result.exit_code == 1, (result.output, result.exception)  # a FAIL, not a crash (3)
    assert "bug" not in result.stderr
    document, event = _completed_event(inputs.out, "policy-failed")
    assert event.resource["fairgate.verdict"] == "fail"
    state = _flow_run(event.payload["flow_run_id"]).state
    assert (state.type.value, state.name) == ("FAILED", "PolicyFailed")
    assert state.message == f"verdict: fail; failed: {', '.join(_failed(document))}"
    summary = state.result(raise_on_failure=False)
    assert summary["verdict"] == "fail"
    assert summary["run_id"] == document["run_id"]


@pytest.mark.parametrize("as_json", [False, True])
def test_passing_audit_with_fail_flow_run_completes(runner: InProcessRunner, inputs: Inputs, as_json: bool) -> None:
    inputs.policy.write_text(POLICY_PASSING + "  ci_cd_gate: {fail_flow_run: true}\n")
    version = f"pass-{as_json}".lower()
    result = runner.invoke(app, inputs.args(*(["--json"] if as_json else []), "--model-version", version))
    assert result.exit_code == 0, (result.output, result.exception)
    document, event = _completed_event(inputs.out, version)
    if as_json:  # the CLI prints the whole document, read from the run's JSON output
        assert json.loads(result.stdout) == document
    else:
        assert "verdict: PASS" in result.stdout
    assert event.resource["fairgate.verdict"] == "pass"
    assert event.payload["failed_metrics"] == []
    state = _flow_run(event.payload["flow_run_id"]).state
    assert (state.type.value, state.name, state.message) == ("COMPLETED", "Completed", "verdict: pass")


def test_a_process_worker_logs_no_traceback_for_bad_input(tmp_path: Path) -> None:
    """Bad input under a worker: the run ends Failed/InvalidInput with its message, and neither the worker's
    output nor the run's logs on the server hold the engine's ``FailedRun`` traceback (flows/audit.py)."""
    import subprocess
    import sys

    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

    from flows.audit import fairness_audit

    repo = Path(__file__).resolve().parents[2]
    pool = f"verdict-events-{tmp_path.name}".lower().replace("_", "-")
    prefect = str(Path(sys.executable).parent / "prefect")
    created = subprocess.run(
        [prefect, "work-pool", "create", pool, "--type", "process"], capture_output=True, text=True
    )
    assert created.returncode == 0, created.stdout + created.stderr
    deployment = fairness_audit.to_deployment(
        f"bad-input-{pool}", work_pool_name=pool, job_variables={"working_dir": str(repo)}
    )
    missing = tmp_path / "missing.yaml"
    with get_client(sync_client=True) as client:
        deployment_id = deployment.apply()
        run = client.create_flow_run_from_deployment(
            deployment_id,
            parameters={"policy": str(missing), "predictions": "p.csv", "labels": "l.csv", "attributes": "a.csv"},
        )
    worker = subprocess.run(
        [prefect, "worker", "start", "--pool", pool, "--type", "process", "--run-once"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    output = worker.stdout + worker.stderr
    assert worker.returncode == 0, output
    assert "Finished in state InvalidInput" in output, output
    assert "Traceback" not in output, output
    assert "FailedRun" not in output
    with get_client(sync_client=True) as client:
        state = client.read_flow_run(run.id).state
        logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run.id])))
    assert (state.type.value, state.name) == ("FAILED", "InvalidInput")
    assert f"policy file '{missing}' does not exist" in state.message
    assert logs  # the run's log lines reached the server
    assert not [log.message for log in logs if "Traceback" in log.message or "unexpected exception" in log.message]


def _summary(verdict: str, exit_code: int, failed: int, delivery: str | None) -> dict[str, Any]:
    report = (
        None if delivery is None else {"delivery": {"status": delivery, "detail": f"{delivery} after 2 attempt(s)"}}
    )
    return {
        "verdict": verdict,
        "exit_code": exit_code,
        "failed_metrics": [f"disparate_impact_ratio@g{i}" for i in range(failed)],
        "report": report,
    }


@pytest.mark.parametrize(
    ("summary", "gate", "expected"),
    [
        (_summary("fail", 1, 2, None), (False, False), ("COMPLETED", "Completed")),
        (_summary("fail", 1, 2, None), (True, False), ("FAILED", "PolicyFailed")),
        # ci_cd_gate.enabled: false makes a FAIL exit 0: the gate did not fail, so neither does the run.
        (_summary("fail", 0, 2, None), (True, False), ("COMPLETED", "Completed")),
        (_summary("pass", 0, 0, "failed"), (True, False), ("COMPLETED", "DeliveryFailed")),
        (_summary("pass", 0, 0, "failed"), (False, True), ("FAILED", "DeliveryFailed")),
        (_summary("pass", 0, 0, "sent"), (False, True), ("COMPLETED", "Completed")),
        (_summary("fail", 1, 1, "failed"), (True, True), ("FAILED", "PolicyFailed")),  # the verdict comes first
    ],
)
def test_final_state_follows_the_policy(summary: dict[str, Any], gate: tuple[bool, bool], expected: tuple) -> None:
    from flows.audit import Gate, verdict_state

    state = verdict_state(summary, Gate(*gate))
    assert (state.type.value, state.name) == expected
    assert state.message.startswith(f"verdict: {summary['verdict']}")
    assert state.data is summary


def test_a_long_list_of_failures_is_cut_in_the_state_message() -> None:
    from flows.audit import Gate, verdict_state

    message = verdict_state(_summary("fail", 1, 13, None), Gate(False, False)).message
    assert message.endswith("disparate_impact_ratio@g9 and 3 more")
    assert "@g10" not in message
