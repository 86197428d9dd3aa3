"""Helpers for the servers and workers the tests start as subprocesses (Prefect, MLflow, PostgreSQL, a Prefect
worker): a free loopback port, death with the test process, a stop of the whole process group, and the Prefect
server itself on SQLite or PostgreSQL."""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path


def free_loopback_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def die_with_parent() -> None:
    """``preexec_fn`` of a server: SIGTERM when pytest dies (even by SIGKILL), so no server outlives the run."""
    if sys.platform.startswith("linux"):  # ctypes imported up front: a child running as another user may not read it
        pr_set_pdeathsig = 1
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def stop_process_group(process: subprocess.Popen[bytes], timeout: float = 15) -> None:
    """Terminate a process started in its own session and everything it started (uvicorn or worker children);
    SIGKILL what has not ended after ``timeout`` seconds."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


SERVER_STARTUP_TIMEOUT_S = 180  # migrations on a cold database, on two busy cores


def start_prefect_server(
    port: int, log_path: Path, database_url: str, home: Path | None = None
) -> subprocess.Popen[bytes]:
    """``prefect server start`` on a loopback port with its database at ``database_url`` (SQLite or PostgreSQL),
    in ``home`` or the environment's private Prefect home (tests/conftest.py sets it before Prefect is imported)."""
    env = {
        **os.environ,
        **({"PREFECT_HOME": str(home)} if home is not None else {}),
        "PREFECT_SERVER_DATABASE_CONNECTION_URL": database_url,
        "PREFECT_SERVER_LOGGING_LEVEL": "WARNING",
        "PREFECT_UI_ENABLED": "false",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    }
    env.pop("PREFECT_API_URL", None)
    command = [str(Path(sys.executable).parent / "prefect"), "server", "start"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--no-ui", "--analytics-off"]
    with log_path.open("wb") as log:
        return subprocess.Popen(
            command,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )


def wait_until_healthy(process: subprocess.Popen[bytes], api_url: str, log_path: Path) -> None:
    """Block until the server answers ``/health``; stop it and fail with its log if it dies or never answers."""
    import httpx

    deadline = time.monotonic() + SERVER_STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{api_url}/health", timeout=5).status_code == 200:
                return
        time.sleep(0.25)
    stop_process_group(process, timeout=10)
    raise RuntimeError(f"the test Prefect server did not start; its log:\n{log_path.read_text()[-4000:]}")


def postgres_bin() -> Path | None:
    """The directory of PostgreSQL's server programs (Debian's ``postgresql`` package), or None."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name))
    return found[-1].parent if found else None


@contextlib.contextmanager
def postgres_cluster() -> Iterator[str]:
    """A throwaway PostgreSQL cluster on a loopback port with a database ``prefect``; yields its asyncpg URL.

    PostgreSQL refuses to run as root, so as root the cluster belongs to Debian's ``postgres`` user. Trust
    authentication on loopback only; fsync off (a test database, thrown away at the end).
    """
    bindir = postgres_bin()
    if bindir is None:
        raise RuntimeError("PostgreSQL is not installed: apt-get install postgresql (.ci/run installs it)")
    folder = Path(tempfile.mkdtemp(prefix="fairgate-tests-postgres-"))
    owner: dict[str, str] = {}
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
        owner = {"user": "postgres", "group": "postgres"}
    port = free_loopback_port()
    data, log_path = folder / "data", folder / "postgres.log"
    initdb = [str(bindir / "initdb"), "-D", str(data), "-U", "prefect", "--auth=trust", "-E", "UTF8", "--no-sync"]
    subprocess.run(initdb, cwd=folder, check=True, capture_output=True, timeout=300, **owner)
    server = [str(bindir / "postgres"), "-D", str(data), "-p", str(port), "-k", str(folder)]
    server += ["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"]
    with log_path.open("wb") as log:
        if owner:
            shutil.chown(log_path, "postgres", "postgres")
        process = subprocess.Popen(
            server,
            cwd=folder,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=die_with_parent,
            **owner,
        )
    try:
        ready = [str(bindir / "pg_isready"), "-h", "127.0.0.1", "-p", str(port), "-U", "prefect"]
        deadline = time.monotonic() + SERVER_STARTUP_TIMEOUT_S
        while subprocess.run(ready, capture_output=True, check=False).returncode != 0:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"PostgreSQL did not start; its log:\n{log_path.read_text()[-4000:]}")
            time.sleep(0.25)
        createdb = [str(bindir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "prefect", "prefect"]
        subprocess.run(createdb, check=True, capture_output=True, timeout=120)
        yield f"postgresql+asyncpg://prefect@127.0.0.1:{port}/prefect"
    finally:
        stop_process_group(process, timeout=30)  # SIGTERM: PostgreSQL's smart shutdown
        shutil.rmtree(folder, ignore_errors=True)
