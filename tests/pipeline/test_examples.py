"""The files in ``examples/`` work as their comments say: the CI gate passes the audit's exit code on, the
deployment script registers the audit flow on the test Prefect server (and schedules a run), the notebook runs
top to bottom as a script."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pipeline_helpers import POLICY_FAILING, POLICY_PASSING, REPO

EXAMPLES = REPO / "examples"
BIN = Path(sys.executable).parent


def _run(command: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}  # `fairgate` as installed
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)


def _gate(folder: Path, split: dict[str, Path], policy: str, name: str) -> subprocess.CompletedProcess[str]:
    (folder / f"{name}.yaml").write_text(policy)
    inputs = [str(split[role]) for role in ("predictions", "labels", "attributes")]
    return _run(["bash", str(EXAMPLES / "ci_gate.sh"), f"{name}.yaml", *inputs, f"out-{name}"], folder)


@pytest.mark.slow
def test_the_ci_gate_passes_the_audits_exit_code_on(compas_split: dict[str, Path], tmp_path: Path) -> None:
    passed = _gate(tmp_path, compas_split, POLICY_PASSING, "passing")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "fairness gate: PASS" in passed.stdout
    failed = _gate(tmp_path, compas_split, POLICY_FAILING, "failing")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "fairness gate: FAIL" in failed.stdout
    assert list((tmp_path / "out-failing").glob("*.xml"))  # the JUnit report, for the CI's test view
    missing = dict(compas_split, labels=tmp_path / "no-such-labels.csv")
    refused = _gate(tmp_path, missing, POLICY_PASSING, "refused")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "not run: invalid input" in refused.stdout
    assert sum(line.startswith("error:") for line in refused.stderr.splitlines()) == 1
    usage = _run(["bash", str(EXAMPLES / "ci_gate.sh")], tmp_path)
    assert usage.returncode == 2
    assert "usage:" in usage.stderr


def test_the_deployment_example_registers_the_audit_flow(
    compas_split: dict[str, Path], tmp_path: Path, prefect_server: str
) -> None:
    from prefect.client.orchestration import get_client

    (tmp_path / "policy.yaml").write_text(POLICY_FAILING)
    args = [sys.executable, str(EXAMPLES / "prefect_deployment.py"), "--policy", "policy.yaml"]
    args += [f"--{role}={compas_split[role]}" for role in ("predictions", "labels", "attributes")]
    args += ["--model", "credit", "--model-version", "7", "--out", "out", "--name", "example-weekly"]
    args += ["--pool", "examples", "--run-now"]
    done = _run(args, tmp_path, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "deployment fairness-audit/example-weekly:" in done.stdout
    with get_client(sync_client=True) as client:
        deployment = client.read_deployment_by_name("fairness-audit/example-weekly")
        try:
            assert deployment.work_pool_name == "examples"
            assert deployment.entrypoint == "flows.audit.fairness_audit"
            assert deployment.parameters["out_dir"] == str((tmp_path / "out").resolve())
            assert (deployment.parameters["model_name"], deployment.parameters["model_version"]) == ("credit", "7")
            assert [s.schedule.cron for s in deployment.schedules] == ["0 3 * * 1"]  # type: ignore[union-attr]
            runs = {str(r.id): r for r in client.read_flow_runs() if r.deployment_id == deployment.id}
            (started,) = re.findall(r"flow run ([0-9a-f-]{36}): Scheduled", done.stdout)  # --run-now
            assert runs[started].state_name == "Scheduled"  # waiting for a worker (beside the cron's next runs)
        finally:  # the session's server is shared: leave no deployment, schedule or run behind
            for run in client.read_flow_runs():
                if run.deployment_id == deployment.id:
                    client.delete_flow_run(run.id)
            client.delete_deployment(deployment.id)


@pytest.mark.slow
def test_the_notebook_runs_as_a_script(tmp_path: Path) -> None:
    notebook = tmp_path / "notebook.py"
    shutil.copy(EXAMPLES / "notebook.py", notebook)
    assert notebook.read_text().count("# %%") >= 4  # percent-format cells
    done = _run([sys.executable, str(notebook)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "<AuditResult FAIL model=compas" in done.stdout
    written = {kind: Path(tmp_path / path) for kind, path in re.findall(r"^(json|html|pdf): (\S+)$", done.stdout, re.M)}
    assert set(written) == {"json", "html", "pdf"}, done.stdout
    assert all(path.is_file() for path in written.values())
    linked = re.search(r"verdict fail, (\d+) files written, (\d+) linked", done.stdout)
    assert linked is not None, done.stdout
    assert int(linked.group(1)) == int(linked.group(2)) >= 3  # every file the run wrote is linked
