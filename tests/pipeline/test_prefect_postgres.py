"""The deployment path on the database production runs Prefect on: a Prefect server on a real PostgreSQL
(Debian's package, a throwaway cluster) and a ``prefect worker start`` process, through the operator's
walkthrough: ``fairgate deploy`` with a nightly audit (``--model-version``), the nightly run (recorded under
that version), a re-deploy without ``--predictions`` (the nightly is removed, and the output says so) and a
``fairgate.model.registered`` event ending in an audit recorded in the trail; neither the server's nor the
worker's log holds an ERROR line or a traceback."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pipeline_helpers import POLICY_FAILING, split_compas
from server_processes import (
    free_loopback_port,
    postgres_bin,
    postgres_cluster,
    start_prefect_server,
    stop_process_group,
    wait_until_healthy,
)

from tasks.store import list_registrations, list_runs

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(postgres_bin() is None and not os.environ.get("CI"), reason="PostgreSQL is not installed"),
]

BIN = Path(sys.executable).parent
POOL = "fairgate-postgres"
RUN_TIMEOUT_S = 240


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A Prefect server whose database is PostgreSQL; its API URL, log and an environment pointing at it."""
    folder = tmp_path_factory.mktemp("postgres-prefect")
    with postgres_cluster() as database_url:
        port = free_loopback_port()
        log = folder / "server.log"
        process = start_prefect_server(port, log, database_url, home=folder / "home")
        api_url = f"http://127.0.0.1:{port}/api"
        try:
            wait_until_healthy(process, api_url, log)
            env = {**os.environ, "PREFECT_API_URL": api_url, "PREFECT_HOME": str(folder / "home")}
            yield {"api_url": api_url, "log": log, "env": env, "folder": folder}
        finally:
            stop_process_group(process, timeout=20)


def _run(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)


def _final_run(api_url: str, flow: str, worker_log: Path, match: Callable[[Any], bool]) -> Any:
    """The run of ``flow`` that ``match`` picks, once final (bounded wait)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName
    from prefect.settings import PREFECT_API_URL, temporary_settings

    deadline = time.monotonic() + RUN_TIMEOUT_S
    with temporary_settings(updates={PREFECT_API_URL: api_url}), get_client(sync_client=True) as client:
        while time.monotonic() < deadline:
            for run in client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=[flow]))):
                if match(run) and run.state.is_final():
                    return run
            time.sleep(2)
    pytest.fail(f"no finished {flow} run after {RUN_TIMEOUT_S} s; worker log:\n{worker_log.read_text()[-6000:]}")


def _run_nightly(api_url: str, worker_log: Path) -> Any:
    """Start the nightly deployment now (as its schedule would) and wait for its run to end."""
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: api_url}), get_client(sync_client=True) as client:
        deployment = client.read_deployment_by_name("fairness-audit/nightly")
        started = client.create_flow_run_from_deployment(deployment.id)
    return _final_run(api_url, "fairness-audit", worker_log, lambda run: run.id == started.id)


def _deployment_names(api_url: str) -> set[str]:
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: api_url}), get_client(sync_client=True) as client:
        flows = {flow.id: flow.name for flow in client.read_flows()}
        return {f"{flows[d.flow_id]}/{d.name}" for d in client.read_deployments()}


def test_the_operators_walkthrough_runs_on_a_prefect_server_on_postgresql(server: dict[str, Any]) -> None:
    folder, env, api_url = server["folder"], server["env"], server["api_url"]
    inputs = split_compas(folder / "inputs", suffix="parquet")
    (folder / "policy.yaml").write_text(POLICY_FAILING)
    deploy = [str(BIN / "fairgate"), "deploy", "--policy", "policy.yaml", "--pool", POOL, "--out", "out"]
    deploy += ["--labels", str(inputs["labels"]), "--attributes", str(inputs["attributes"])]
    nightly = ["--predictions", str(inputs["predictions"]), "--model", "nightly-model", "--model-version", "7"]
    deployed = _run(deploy + nightly, folder, env)
    assert deployed.returncode == 0, deployed.stdout + deployed.stderr
    assert f"work pool '{POOL}' (process): created" in deployed.stdout
    assert "nightly model: nightly-model, version 7" in deployed.stdout

    worker_log = folder / "worker.log"
    with worker_log.open("wb") as log:
        worker = subprocess.Popen(
            [str(BIN / "prefect"), "worker", "start", "--pool", POOL],
            cwd=folder,
            env={**env, "PREFECT_WORKER_QUERY_SECONDS": "2"},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        night = _run_nightly(api_url, worker_log)
        redeployed = _run(deploy, folder, env)  # no --predictions: no nightly any more
        assert redeployed.returncode == 0, redeployed.stdout + redeployed.stderr
        assert "fairness-audit/nightly" in _line_with("removed", redeployed.stdout)
        assert "fairness-audit/nightly" not in _deployment_names(api_url)
        event_id = _emit_registration(folder, env, inputs["predictions"])
        run = _final_run(api_url, "fairgate-registration", worker_log, lambda r: _event_id(r) == event_id)
    finally:
        stop_process_group(worker, timeout=20)

    trail = folder / "out" / "audit_trail.duckdb"
    assert night.state.is_completed(), night.state
    (nightly_audit,) = [r for r in list_runs(trail) if r["model_name"] == "nightly-model"]
    assert (nightly_audit["model_version"], nightly_audit["verdict"]) == ("7", "fail")

    assert run.state.is_completed(), run.state
    assert "verdict: fail" in run.state.message.lower()
    (registration,) = [r for r in list_registrations(trail) if r["detail"].get("event_id") == event_id]
    assert (registration["model_name"], registration["model_version"], registration["status"]) == (
        "credit",
        "3",
        "accepted",
    )
    (audit,) = [r for r in list_runs(trail) if r["run_id"] == registration["detail"]["run_id"]]
    assert (audit["model_name"], audit["model_version"], audit["verdict"]) == ("credit", "3", "fail")
    for name, text in (("server", server["log"].read_text()), ("worker", worker_log.read_text())):
        bad = [line for line in text.splitlines() if re.search(r"\bERROR\b|Traceback", line)]
        assert not bad, f"{name} log:\n" + "\n".join(bad[:20])


def _line_with(word: str, text: str) -> str:
    lines = [line for line in text.splitlines() if word in line]
    assert lines, f"no line with {word!r} in:\n{text}"
    return "\n".join(lines)


def _event_id(run: Any) -> str:
    return str((run.parameters.get("event") or {}).get("id"))


def _emit_registration(folder: Path, env: dict[str, str], predictions: Path) -> str:
    """``prefect event emit fairgate.model.registered`` for model credit version 3; the event's id."""
    resource = {
        "prefect.resource.id": "model.credit.3",
        "prefect.resource.name": "credit",
        "fairgate.model.name": "credit",
        "fairgate.model.version": "3",
    }
    emit = [str(BIN / "prefect"), "event", "emit", "fairgate.model.registered", "--resource", json.dumps(resource)]
    emit += ["--payload", json.dumps({"predictions": str(predictions)})]
    emitted = _run(emit, folder, env, timeout=120)
    assert emitted.returncode == 0, emitted.stdout + emitted.stderr
    (event_id,) = re.findall(r"[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}", emitted.stdout.replace("\n", ""))
    return str(event_id)
