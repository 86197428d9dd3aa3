"""``fairgate registry watch``: exit 2 with the fix for a missing extra, tracking URI or Prefect server; exit 0 with
the versions listed when it ran."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from registry_helpers import new_version
from typer.testing import CliRunner

from cli import app

FAIRGATE = str(Path(sys.executable).parent / "fairgate")


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([FAIRGATE, *args], capture_output=True, text=True, env=env, timeout=300)


def test_configuration_problems_exit_2_with_the_fix() -> None:
    env = {k: v for k, v in os.environ.items() if k not in {"PREFECT_API_URL", "MLFLOW_TRACKING_URI"}}
    env["COLUMNS"] = "200"
    no_uri = _run(["registry", "watch"], env)
    assert no_uri.returncode == 2, no_uri.stderr
    assert "no MLflow tracking URI" in no_uri.stderr
    assert "MLFLOW_TRACKING_URI" in no_uri.stderr

    no_server = _run(["registry", "watch", "--tracking-uri", "http://127.0.0.1:9"], env)
    assert no_server.returncode == 2, no_server.stderr
    assert "set PREFECT_API_URL" in no_server.stderr
    assert "Traceback" not in no_uri.stderr + no_server.stderr


def test_without_the_extra_it_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mlflow", None)  # as if mlflow were not installed
    result = CliRunner().invoke(app, ["registry", "watch", "--tracking-uri", "http://127.0.0.1:9"])
    assert result.exit_code == 2
    assert "pip install 'fairgate[mlflow]'" in result.output


def test_a_watch_lists_what_it_registered(
    prefect_server: str, mlflow_server: str, registry: Any, model_name: str, compas_inputs: dict[str, Path]
) -> None:
    version = new_version(registry, model_name, {"fairgate.predictions": str(compas_inputs["predictions"])})
    args = ["registry", "watch", "--tracking-uri", mlflow_server, "--model", model_name, "--since", "2026-01-01"]
    args.append("--json")
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    listed = json.loads(result.stdout)
    assert [(r["name"], r["version"]) for r in listed["registered"]] == [(model_name, version)]
    assert registry.get_model_version(model_name, version).tags["fairgate.status"] == "registered"


def test_a_closed_port_and_a_bad_since_are_refused_in_seconds(prefect_server: str) -> None:
    """MLflow's own retries held a watch of a closed port for 12 minutes; the watch now probes the server first."""
    env = {**os.environ, "COLUMNS": "200", "PREFECT_API_URL": prefect_server}
    env.pop("MLFLOW_TRACKING_URI", None)
    started = time.monotonic()
    closed = _run(["registry", "watch", "--tracking-uri", "http://127.0.0.1:9"], env)
    assert closed.returncode == 2, closed.stderr
    assert time.monotonic() - started < 120  # seconds of CPU; imports are slow on a loaded machine
    lines = closed.stderr.strip().splitlines()
    assert lines[-1].startswith("error: the MLflow tracking server at http://127.0.0.1:9 cannot be reached")
    assert "--tracking-uri" in lines[-1]
    bad_since = _run(["registry", "watch", "--tracking-uri", "http://127.0.0.1:9", "--since", "not-a-date"], env)
    assert bad_since.returncode == 2, bad_since.stderr
    assert bad_since.stderr.strip().splitlines() == [
        "error: --since 'not-a-date' is not a date or time; write it as YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS (UTC)"
    ]
    assert "Traceback" not in closed.stderr + bad_since.stderr


def test_mlflow_http_retries_are_bounded_unless_the_user_set_them(monkeypatch: pytest.MonkeyPatch) -> None:
    from tasks.outbound.registry import MLFLOW_HTTP_DEFAULTS, mlflow_client

    for variable in MLFLOW_HTTP_DEFAULTS:
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "40")
    mlflow_client("http://127.0.0.1:9")
    assert os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] == "2"
    assert os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] == "40"
