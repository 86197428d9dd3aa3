"""Helpers for the servers and workers the tests start as subprocesses (Prefect, MLflow, a Prefect worker):
a free loopback port, death with the test process, and a stop of the whole process group."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys


def free_loopback_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def die_with_parent() -> None:
    """``preexec_fn`` of a server: SIGTERM when pytest dies (even by SIGKILL), so no server outlives the run."""
    if sys.platform.startswith("linux"):
        import ctypes

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
