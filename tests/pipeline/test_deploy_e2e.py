"""From ``fairgate deploy`` to a verdict, as a platform team runs it: against the session's real Prefect server,
``fairgate deploy`` (twice: the second updates), a ``prefect worker start`` process, then two
``fairgate.model.registered`` events emitted with ``prefect event emit``: one valid (COMPAS inputs split as the
demo does), one malformed. The valid one ends in an audit with its outputs, its trail run and an ``accepted``
registration; the malformed one in a ``rejected`` registration, a ``fairgate.registration.rejected`` event and a
``Failed`` registration run."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pipeline_helpers import POLICY_FAILING, run_fairgate, split_compas
from server_processes import stop_process_group

from tasks.store import list_registrations, list_runs, verify

pytestmark = pytest.mark.slow

POOL = "fairgate-e2e"
RUN_TIMEOUT_S = 240  # event -> finished audit; measured 30-40 s on this machine with a warm worker
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory, prefect_server: str) -> dict[str, Any]:
    """``fairgate deploy`` twice (the second must update, not duplicate), from a folder of its own."""
    folder = tmp_path_factory.mktemp("deploy")
    inputs = split_compas(folder / "inputs", suffix="parquet")
    (folder / "policy.yaml").write_text(POLICY_FAILING)
    args = ["deploy", "--policy", "policy.yaml", "--pool", POOL, "--out", "out"]
    args += ["--labels", "inputs/labels.parquet", "--attributes", "inputs/attributes.parquet"]
    args += ["--predictions", "inputs/predictions.parquet", "--model", "nightly-model"]
    results = [run_fairgate(args, cwd=folder, timeout=300) for _ in range(2)]
    return {"folder": folder, "inputs": inputs, "results": results, "out": folder / "out"}


@pytest.fixture(scope="module")
def worker(deployed: dict[str, Any], prefect_server: str) -> Iterator[Path]:
    """``prefect worker start --pool`` in its own process group (stopped, with its flow runs, at the end)."""
    log_path = deployed["folder"] / "worker.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [str(BIN / "prefect"), "worker", "start", "--pool", POOL],
            cwd=deployed["folder"],
            env={**os.environ, "PREFECT_API_URL": prefect_server},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield log_path
    finally:
        stop_process_group(process, timeout=20)


def _emit(resource: dict[str, str], payload: dict[str, Any], cwd: Path) -> str:
    """``prefect event emit`` as a registry's script would; the event's id (printed by the command)."""
    command = [str(BIN / "prefect"), "event", "emit", "fairgate.model.registered"]
    command += ["--resource", json.dumps(resource), "--payload", json.dumps(payload)]
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert result.returncode == 0, result.stdout + result.stderr
    ids = re.findall(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", result.stdout.replace("\n", ""))
    assert len(ids) == 1, result.stdout
    return ids[0]


@pytest.fixture(scope="module")
def registrations(deployed: dict[str, Any], worker: Path) -> dict[str, Any]:
    """A valid and a malformed registration emitted together; their registration flow runs once finished."""
    predictions = str(deployed["inputs"]["predictions"])
    valid = _emit(
        {
            "prefect.resource.id": "model.credit.9",
            "prefect.resource.name": "credit",
            "fairgate.model.name": "credit",
            "fairgate.model.version": "9",
        },
        {"predictions": predictions, "registry": {"kind": "mlflow", "name": "credit", "version": "9"}},
        deployed["folder"],
    )
    # The two failures in one event: the name only as a plain label, and no predictions.
    malformed = _emit({"prefect.resource.id": "model.credit.10", "name": "credit"}, {"labels": "x"}, deployed["folder"])
    started = time.monotonic()
    runs = _wait_for_registration_runs({valid, malformed}, worker)
    return {
        "valid": runs[valid],
        "malformed": runs[malformed],
        "valid_id": valid,
        "malformed_id": malformed,
        "seconds": time.monotonic() - started,
        "worker_log": worker,
    }


def _wait_for_registration_runs(event_ids: set[str], worker_log: Path) -> dict[str, Any]:
    """The finished ``fairgate-registration`` runs by the id of the event that started them (bounded wait)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName

    deadline = time.monotonic() + RUN_TIMEOUT_S
    finished: dict[str, Any] = {}
    with get_client(sync_client=True) as client:
        while time.monotonic() < deadline:
            runs = client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=["fairgate-registration"])))
            for run in runs:
                event_id = str((run.parameters.get("event") or {}).get("id"))
                if event_id in event_ids and run.state is not None and run.state.is_final():
                    finished[event_id] = run
            if set(finished) == event_ids:
                return finished
            time.sleep(2)
    pytest.fail(
        f"registration runs not finished after {RUN_TIMEOUT_S} s; worker log:\n{worker_log.read_text()[-6000:]}"
    )


def test_deploy_creates_the_pool_and_registers_the_deployments_once(deployed: dict[str, Any]) -> None:
    from prefect.client.orchestration import get_client

    first, second = deployed["results"]
    assert first.returncode == 0, first.stdout + first.stderr
    assert second.returncode == 0, second.stdout + second.stderr
    assert f"work pool '{POOL}' (process): created" in first.stdout
    assert f"work pool '{POOL}' (process): exists" in second.stdout
    with get_client(sync_client=True) as client:
        pool = client.read_work_pool(POOL)
        assert pool.type == "process"
        nightly = client.read_deployment_by_name("fairness-audit/nightly")
        registration = client.read_deployment_by_name("fairgate-registration/on-registration")
        client.read_deployment_by_name("fairness-audit/on-demand")
        automations = [a for a in client.read_automations() if a.actions[0].deployment_id == registration.id]
    assert [s.schedule.cron for s in nightly.schedules] == ["0 2 * * *"]  # replaced, not added, by the second deploy
    assert len(automations) == 1
    assert nightly.entrypoint == "flows.audit.fairness_audit"
    assert not nightly.pull_steps
    assert nightly.parameters["policy"] == str(deployed["folder"] / "policy.yaml")
    assert nightly.parameters["out_dir"] == str(deployed["out"])
    assert nightly.parameters["trail"] == str(deployed["out"] / "audit_trail.duckdb")


def test_a_registration_event_runs_the_audit_and_is_recorded(
    deployed: dict[str, Any], registrations: dict[str, Any]
) -> None:
    run = registrations["valid"]
    assert run.state.is_completed(), run.state
    assert "credit 9, audit " in run.state.message  # the registration run ends in its audit's state
    assert "verdict: fail" in run.state.message.lower()
    print(f"\nevent -> finished registration + audit: {registrations['seconds']:.1f} s (both events)")
    trail = deployed["out"] / "audit_trail.duckdb"
    accepted = [r for r in list_registrations(trail) if r["detail"].get("event_id") == registrations["valid_id"]]
    assert [(r["model_name"], r["model_version"], r["status"]) for r in accepted] == [("credit", "9", "accepted")]
    run_id = accepted[0]["detail"]["run_id"]
    runs = [r for r in list_runs(trail) if r["run_id"] == run_id]
    assert [(r["model_name"], r["model_version"], r["verdict"]) for r in runs] == [("credit", "9", "fail")]
    document = json.loads((deployed["out"] / f"fairness_credit_9_{run_id}.json").read_text())
    assert document["model"] == {"name": "credit", "version": "9"}
    assert (deployed["out"] / f"fairness_credit_9_{run_id}.junit.xml").is_file()
    assert verify(trail)["ok"]
    if importlib.util.find_spec("tasks.outbound.events") is not None:  # the verdict event (verdict-events branch)
        _assert_audit_completed_event(run_id, registry_name="credit")


def _assert_audit_completed_event(run_id: str, registry_name: str) -> None:
    """``fairgate.audit.completed`` for the run, naming the model version and echoing the registry entry
    (contract.md). Enabled once tasks/outbound/events.py (which emits it) is part of the package."""
    event = _read_event("fairgate.audit.completed", lambda e: e.payload.get("run_id") == run_id)
    assert event.resource["prefect.resource.id"] == "model.credit.9"
    assert event.payload["verdict"] == "fail"
    assert event.payload["registry"]["name"] == registry_name


def _read_event(name: str, wanted: Any) -> Any:
    """The first event called ``name`` that ``wanted`` accepts, read from the API (bounded wait: the server
    stores events a moment after it receives them)."""
    from prefect.client.orchestration import get_client
    from prefect.events.filters import EventFilter, EventNameFilter

    deadline = time.monotonic() + 30
    with get_client(sync_client=True) as client:
        while True:
            events = client.read_events(EventFilter(event=EventNameFilter(name=[name])), limit=50).events
            matching = [e for e in events if wanted(e)]
            if matching or time.monotonic() > deadline:
                assert matching, f"no {name} event found; seen: {[e.payload for e in events]}"
                return matching[0]
            time.sleep(1)


def test_a_malformed_registration_is_rejected_visibly(deployed: dict[str, Any], registrations: dict[str, Any]) -> None:
    run = registrations["malformed"]
    assert run.state.is_failed(), run.state
    assert run.state.name == "RegistrationRejected"
    assert "has no prefect.resource.name" in run.state.message
    trail = deployed["out"] / "audit_trail.duckdb"
    rejected = [r for r in list_registrations(trail) if r["detail"].get("event_id") == registrations["malformed_id"]]
    assert [(r["model_name"], r["status"]) for r in rejected] == [("unknown", "rejected")]
    assert "has no prefect.resource.name" in rejected[0]["detail"]["reason"]
    event = _read_event(
        "fairgate.registration.rejected", lambda e: e.payload.get("event_id") == registrations["malformed_id"]
    )
    assert event.resource["prefect.resource.id"] == "model.credit.10"
    assert event.payload["received"] == {"labels": "x"}
    assert "has no prefect.resource.name" in event.payload["reason"]
    log = registrations["worker_log"].read_text()
    # The reason, in the run's final state line, without a FailedRun traceback.
    assert "has no prefect.resource.name" in log
    assert "Traceback" not in log
