"""A real MLflow tracking server (SQLite backend, local artifact store) for the registry tests, one per session,
on a free loopback port; and the COMPAS inputs a registered model version points at."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from registry_helpers import COMPAS_CSV

# The MLflow client in the tests (and the server) sends no usage telemetry.
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
MLFLOW_STARTUP_TIMEOUT_S = 180  # database migrations on a cold SQLite file, on two busy cores


def _free_loopback_port() -> int:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _die_with_parent() -> None:
    """In the server's child process: SIGTERM when pytest dies, so no server outlives the run."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Terminate the server's process group (uvicorn/gunicorn workers included)."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``mlflow server`` with a SQLite backend store on 127.0.0.1; yields its tracking URI."""
    import httpx

    home = tmp_path_factory.mktemp("mlflow")
    port = _free_loopback_port()
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
            preexec_fn=_die_with_parent,
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
        _stop(process)


@pytest.fixture(scope="session")
def registry(mlflow_server: str) -> Any:
    """An MLflow client of the test server."""
    from mlflow import MlflowClient

    return MlflowClient(tracking_uri=mlflow_server)


@pytest.fixture(scope="session")
def compas_inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The real COMPAS file split as the demo splits it: predictions, labels, attributes (Parquet)."""
    from tasks.io import write_demo_inputs

    return write_demo_inputs(COMPAS_CSV, tmp_path_factory.mktemp("compas"))


@pytest.fixture
def model_name() -> str:
    """A fresh registered-model name per test (the server is shared by the session)."""
    return f"compas-risk-{uuid.uuid4().hex[:8]}"
