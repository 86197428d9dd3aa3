"""A real MLflow tracking server (SQLite backend, local artifact store) for the registry tests, one per session,
on a free loopback port; and the COMPAS inputs a registered model version points at."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from registry_helpers import COMPAS_CSV
from server_processes import die_with_parent, free_loopback_port, stop_process_group

# The MLflow client in the tests (and the server) sends no usage telemetry.
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
MLFLOW_STARTUP_TIMEOUT_S = 180  # database migrations on a cold SQLite file, on two busy cores


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``mlflow server`` with a SQLite backend store on 127.0.0.1; yields its tracking URI."""
    import httpx

    home = tmp_path_factory.mktemp("mlflow")
    port = free_loopback_port()
    uri = f"http://127.0.0.1:{port}"
    command = [str(Path(sys.executable).parent / "mlflow"), "server"]
    command += ["--backend-store-uri", f"sqlite:///{home / 'mlflow.db'}"]
    command += ["--artifacts-destination", str(home / "artifacts")]
    command += ["--host", "127.0.0.1", "--port", str(port), "--workers", "1"]
    log_path = home / "server.log"
    # No background job runner (seven huey consumers, for GenAI jobs the registry does not use): two cores.
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command,
            cwd=home,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
    try:
        deadline = time.monotonic() + MLFLOW_STARTUP_TIMEOUT_S
        while True:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the test MLflow server did not start; its log:\n{log_path.read_text()[-4000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{uri}/health", timeout=5).status_code == 200:
                    break
            time.sleep(0.5)
        yield uri
    finally:
        stop_process_group(process)


@pytest.fixture(scope="session")
def registry(mlflow_server: str) -> Any:
    """An MLflow client of the test server."""
    from mlflow import MlflowClient

    return MlflowClient(tracking_uri=mlflow_server)


@pytest.fixture(scope="session")
def compas_inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The real COMPAS file split as the demo splits it: predictions, labels, attributes (Parquet)."""
    from tasks.inputs.io import write_demo_inputs

    return write_demo_inputs(COMPAS_CSV, tmp_path_factory.mktemp("compas"))


@pytest.fixture
def model_name() -> str:
    """A fresh registered-model name per test (the server is shared by the session)."""
    return f"compas-risk-{uuid.uuid4().hex[:8]}"
