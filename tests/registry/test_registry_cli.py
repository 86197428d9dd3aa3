"""``fairgate registry watch``: exit 2 with the fix for a missing extra, tracking URI or Prefect server; exit 0 with
the versions listed when it ran."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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
