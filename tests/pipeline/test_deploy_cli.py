"""``fairgate deploy`` refusals, run as a user runs it (a fresh process): exit 2, a message with the fix, no
traceback, nothing written and nothing registered."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from pipeline_helpers import POLICY_FAILING, InProcessRunner
from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import WorkPoolCreate
from prefect.exceptions import ObjectNotFound

from cli import app

FAIRGATE = str(Path(sys.executable).parent / "fairgate")


def _deploy(args: list[str], cwd: Path, api_url: str | None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("PREFECT_API_URL", None)
    if api_url is not None:
        env["PREFECT_API_URL"] = api_url
    return subprocess.run([FAIRGATE, "deploy", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _refused(result: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    message = " ".join(result.stderr.split())
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in message, message


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def folder(tmp_path: Path, compas_split: dict[str, Path]) -> Path:
    (tmp_path / "policy.yaml").write_text(POLICY_FAILING)
    return tmp_path


def test_without_prefect_api_url_it_says_how_to_start_a_server(folder: Path) -> None:
    result = _deploy(["--demo"], folder, api_url=None)
    _refused(result, "PREFECT_API_URL is not set", "prefect server start", "export PREFECT_API_URL=")
    assert sorted(p.name for p in folder.iterdir()) == ["policy.yaml"]  # no demo inputs written


def test_an_unreachable_server_is_named(folder: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/api"
    _refused(_deploy(["--demo"], folder, api_url=url), f"the Prefect API at PREFECT_API_URL={url} does not answer")
    assert sorted(p.name for p in folder.iterdir()) == ["policy.yaml"]


def _refused_in_process(runner: InProcessRunner, args: list[str], *fragments: str) -> None:
    result = runner.invoke(app, ["deploy", *args])
    assert result.exit_code == 2, result.output
    message = " ".join(result.stderr.split())
    assert result.exception is None or isinstance(result.exception, SystemExit)
    for fragment in fragments:
        assert fragment in message, message


def test_bad_options_are_refused_before_anything_is_registered(
    folder: Path, compas_split: dict[str, Path], runner: InProcessRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(folder)
    labels = str(compas_split["labels"])
    _refused_in_process(runner, [], "give --policy POLICY.yaml", "--demo")
    _refused_in_process(runner, ["--policy", "nope.yaml"], "policy file", "does not exist")
    _refused_in_process(runner, ["--policy", "policy.yaml", "--labels", "missing.csv"], "--labels", "does not exist")
    args = ["--policy", "policy.yaml", "--predictions", labels, "--labels", labels]
    _refused_in_process(runner, args, "also needs --attributes")
    args = ["--policy", "policy.yaml", "--labels", labels, "--cron", "every night"]
    _refused_in_process(runner, args, "--cron 'every night'")
    (folder / "out").write_text("a file")
    _refused_in_process(runner, ["--policy", "policy.yaml", "--out", "out"], "--out", "is a file")
    with get_client(sync_client=True) as client, pytest.raises(ObjectNotFound):
        client.read_work_pool("fairgate")  # refused before the pool (then the deployments) would be created


def test_a_pool_of_another_type_is_refused(
    folder: Path, runner: InProcessRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(folder)
    with get_client(sync_client=True) as client:
        client.create_work_pool(WorkPoolCreate(name="not-a-process-pool", type="prefect-agent"))
    args = ["--policy", "policy.yaml", "--pool", "not-a-process-pool"]
    _refused_in_process(runner, args, "work pool 'not-a-process-pool' is of type 'prefect-agent'")


def test_a_relative_trail_in_the_policy_is_registered_as_an_absolute_path(
    folder: Path, runner: InProcessRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker runs each flow in a temporary folder: a relative ``audit_trail.path`` would be written there."""
    monkeypatch.chdir(folder)
    (folder / "policy.yaml").write_text(POLICY_FAILING + "  audit_trail: {path: trails/audit.duckdb}\n")
    result = runner.invoke(app, ["deploy", "--policy", "policy.yaml", "--pool", "fairgate-relative"])
    assert result.exit_code == 0, result.output
    with get_client(sync_client=True) as client:
        deployment = client.read_deployment_by_name("fairgate-registration/on-registration")
    assert deployment.parameters["trail"] == str(folder / "trails" / "audit.duckdb")
    assert deployment.parameters["policy"] == str(folder / "policy.yaml")


def test_a_re_deploy_removes_what_it_no_longer_registers_and_list_and_remove_manage_them(
    folder: Path, compas_split: dict[str, Path], runner: InProcessRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deploy with a nightly (model and version named), then again without --predictions: the nightly is removed
    with its scheduled runs, and the output says so; --list shows what is left, --remove removes the rest."""
    monkeypatch.chdir(folder)
    sources = ["--labels", str(compas_split["labels"]), "--attributes", str(compas_split["attributes"])]
    base = ["deploy", "--policy", "policy.yaml", "--pool", "fairgate-in-step", *sources]
    nightly = [*base, "--predictions", str(compas_split["predictions"])]
    _refused_in_process(runner, nightly[1:], "name its model with --model NAME")
    first = runner.invoke(app, [*nightly, "--model", "credit", "--model-version", "7"])
    assert first.exit_code == 0, first.output
    assert "nightly model: credit, version 7" in first.stdout
    with get_client(sync_client=True) as client:
        deployment = client.read_deployment_by_name("fairness-audit/nightly")
        assert (deployment.parameters["model_name"], deployment.parameters["model_version"]) == ("credit", "7")
        deadline = time.monotonic() + 60  # the server's scheduler makes the runs soon after the deployment
        while not client.read_flow_runs(deployment_filter=_of(deployment.id)) and time.monotonic() < deadline:
            time.sleep(1)
        assert client.read_flow_runs(deployment_filter=_of(deployment.id))  # its scheduled runs

    in_code = _deploy_in_code("in-code", "fairgate-in-step")  # as examples/prefect_deployment.py does
    second = runner.invoke(app, base)
    assert second.exit_code == 0, second.output
    assert "in-code" not in second.stdout  # not a deploy's own: left alone
    assert "fairness-audit/nightly" in second.stdout
    assert "removed (an earlier deploy registered it; this one does not)" in " ".join(second.stdout.split())
    with get_client(sync_client=True) as client:
        with pytest.raises(ObjectNotFound):
            client.read_deployment_by_name("fairness-audit/nightly")
        assert not client.read_flow_runs(deployment_filter=_of(deployment.id))  # no scheduled run left behind

    listed = runner.invoke(app, ["deploy", "--list"])
    assert listed.exit_code == 0, listed.output
    assert "fairgate-registration/on-registration" in listed.stdout
    assert "fairness-audit/nightly" not in listed.stdout
    assert "fairness-audit/in-code" in listed.stdout
    removed = runner.invoke(app, ["deploy", "--remove"])
    assert removed.exit_code == 0, removed.output
    assert "removed: fairness-audit/on-demand" in removed.stdout
    assert "removed: fairness-audit/in-code" in removed.stdout
    with get_client(sync_client=True) as client, pytest.raises(ObjectNotFound):
        client.read_deployment(in_code)
    assert "no fairgate deployment registered" in runner.invoke(app, ["deploy", "--list"]).stdout


def _deploy_in_code(name: str, pool: str) -> Any:
    """A deployment of the audit flow made in code, not by ``fairgate deploy``; its id."""
    from prefect.types.entrypoint import EntrypointType

    from flows.audit import fairness_audit

    deployment = fairness_audit.to_deployment(
        name=name, work_pool_name=pool, entrypoint_type=EntrypointType.MODULE_PATH
    )
    return deployment.apply()  # type: ignore[union-attr]


def _of(deployment_id: object) -> object:
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterId

    return DeploymentFilter(id=DeploymentFilterId(any_=[deployment_id]))
