"""A command that runs a flow on the CLI's temporary Prefect server ends cleanly: the run's last logs and events
are delivered before the server stops (cli/signals.py ``_Guard.stop_in_order``), so stderr never ends with
Prefect's "--- Error logging to API --- ... All connection attempts failed" (the log worker shipping to a server
that is gone).

Run as a user runs it: the installed ``fairgate`` in a fresh process, no ``PREFECT_API_URL``, the temporary
server enabled; three runs of three, as the failure was reported.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
SHIPPING_FAILED = ("Error logging to API", "All connection attempts failed", "Traceback")


def _with_temporary_server(home: Path) -> dict[str, str]:
    """The environment of a user with no Prefect server configured: the CLI starts (and stops) its own."""
    env = {key: value for key, value in os.environ.items() if key != "PREFECT_API_URL"}
    return env | {
        "PREFECT_HOME": str(home),
        "PREFECT_PROFILES_PATH": str(home / "profiles.toml"),
        "PREFECT_SERVER_EPHEMERAL_ENABLED": "true",
    }


def test_mitigate_reweighing_ends_without_a_log_shipping_error(compas_files: dict[str, Path], tmp_path: Path) -> None:
    env = _with_temporary_server(tmp_path / "prefect-home")
    for attempt in range(3):
        out = tmp_path / f"out{attempt}"
        args = [str(BIN / "fairgate"), "mitigate", "--method", "reweighing", "--policy", str(compas_files["policy"])]
        args += ["--training", str(compas_files["training"]), "--out", str(out)]
        done = subprocess.run(args, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False)
        assert done.returncode == 0, done.stderr
        assert "Starting temporary server" in done.stderr  # the path under test: the CLI's own server
        assert "Stopping temporary server" in done.stderr
        bad = [line for line in done.stderr.splitlines() if any(s in line for s in SHIPPING_FAILED)]
        assert not bad, f"run {attempt + 1} of 3:\n{done.stderr[-4000:]}"
        assert list(out.glob("reweighing_*.csv"))
