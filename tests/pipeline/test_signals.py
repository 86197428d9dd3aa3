"""Ctrl-C, SIGTERM and SIGKILL during ``fairgate audit``: a quick stop, nothing recorded, no server left behind.

These run the CLI as a user does, without ``PREFECT_API_URL``: each run starts its own ephemeral Prefect server
(a uvicorn subprocess), which is what must not outlive it. Every run gets a private ``PREFECT_HOME``; a process
is the run's if its environment names that home, which finds the server however it was re-parented.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pipeline_helpers import Inputs

from flows.runtime import signals_held
from tasks.outputs import STALE_STAGING_SECONDS, staging_dir

FLOW_STARTED = "Beginning flow run"
START_TIMEOUT_S = 240  # an ephemeral server's first start runs its migrations; two busy cores
STOP_LIMIT_S = 10


def _environment(prefect_home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(
        PREFECT_HOME=str(prefect_home),
        PREFECT_PROFILES_PATH=str(prefect_home / "profiles.toml"),
        PREFECT_SERVER_EPHEMERAL_ENABLED="true",
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        COLUMNS="160",
    )
    return env


def _processes_of(prefect_home: Path) -> list[int]:
    """Live processes (not zombies) whose environment has this run's PREFECT_HOME: the CLI and its server."""
    marker = f"PREFECT_HOME={prefect_home}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker in (entry / "environ").read_bytes().split(b"\0") and b"\tZ" not in _state(entry):
                found.append(int(entry.name))
        except OSError:  # gone, or not ours to read
            continue
    return found


def _state(entry: Path) -> bytes:
    return next((line for line in (entry / "status").read_bytes().splitlines() if line.startswith(b"State:")), b"")


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class AuditProcess:
    """``fairgate audit`` in its own session, its stderr in a file, stopped by a signal once its flow started."""

    def __init__(self, inputs: Inputs, prefect_home: Path, *, as_background_job: bool = False) -> None:
        self.inputs = inputs
        self.prefect_home = prefect_home
        self.stderr_path = inputs.folder / "stderr.log"
        fairgate = str(Path(sys.executable).parent / "fairgate")
        with self.stderr_path.open("wb") as stderr:
            self.process = subprocess.Popen(
                [fairgate, *inputs.args()],
                cwd=inputs.folder,
                env=_environment(prefect_home),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                start_new_session=True,
                # A shell starts a background job with SIGINT ignored: the CLI must still stop on it.
                preexec_fn=_ignore_sigint if as_background_job else None,
            )

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def wait_for_flow(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while FLOW_STARTED not in self.stderr:
            assert self.process.poll() is None, f"the audit ended before its flow started:\n{self.stderr}"
            assert time.monotonic() < deadline, f"the flow did not start:\n{self.stderr}"
            time.sleep(0.05)
        time.sleep(0.5)  # inside the flow's first tasks (staging, validation)

    def stop_by(self, signum: int, *, group: bool) -> tuple[int, float]:
        """Send the signal (to the process group, as a terminal's Ctrl-C does, or to the PID); exit code, seconds."""
        started = time.monotonic()
        if group:
            os.killpg(self.process.pid, signum)
        else:
            self.process.send_signal(signum)
        try:
            code = self.process.wait(timeout=60)
        finally:
            if self.process.poll() is None:
                os.killpg(self.process.pid, signal.SIGKILL)
        return code, time.monotonic() - started

    def leftovers(self, within_s: float) -> list[int]:
        """This run's processes still alive after up to ``within_s`` seconds."""
        deadline = time.monotonic() + within_s
        while (alive := _processes_of(self.prefect_home)) and time.monotonic() < deadline:
            time.sleep(0.2)
        return alive


def _written(out: Path) -> list[str]:
    return sorted(str(p.relative_to(out)) for p in out.rglob("*")) if out.exists() else []


@pytest.fixture
def prefect_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A private Prefect home; whatever still runs with it when the test ends (a failed test) is killed."""
    home = tmp_path_factory.mktemp("prefect-home")
    yield home
    for pid in _processes_of(home):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


# A signal that lands while Python runs a finalizer (a weakref callback, __del__) would have its exception dropped
# ("Exception ignored") and the run would go on: the CLI's handler raises it again outside the finalizer, and owns
# SIGTERM during the flow run too (cli/signals.py). That failed 3 runs of 3 for SIGTERM beside another test worker
# before the fix; the reruns stay as a guard while the fix has few runs behind it.
@pytest.mark.slow
@pytest.mark.flaky(reruns=2)
@pytest.mark.parametrize(
    ("signum", "group", "expected_code"),
    [
        pytest.param(signal.SIGINT, True, 130, id="ctrl-c-to-the-group"),
        pytest.param(signal.SIGINT, False, 130, id="sigint-to-the-pid-of-a-background-job"),
        pytest.param(signal.SIGTERM, False, 143, id="sigterm"),
    ],
)
def test_a_signal_stops_the_audit_cleanly(
    inputs: Inputs, prefect_home: Path, signum: int, group: bool, expected_code: int
) -> None:
    audit = AuditProcess(inputs, prefect_home, as_background_job=not group)
    audit.wait_for_flow()
    code, seconds = audit.stop_by(signum, group=group)
    print(f"{signal.Signals(signum).name} {'group' if group else 'pid'}: exit {code} after {seconds:.2f} s")
    assert code == expected_code, audit.stderr
    assert seconds < STOP_LIMIT_S
    assert _written(inputs.out) == []  # no output, no staging folder, no trail
    assert audit.leftovers(within_s=1) == []
    assert "Traceback" not in audit.stderr


@pytest.mark.slow
def test_after_sigkill_no_server_survives_and_the_next_run_works(inputs: Inputs, prefect_home: Path) -> None:
    audit = AuditProcess(inputs, prefect_home)
    audit.wait_for_flow()
    code, _ = audit.stop_by(signal.SIGKILL, group=False)
    assert code == -signal.SIGKILL
    assert audit.leftovers(within_s=60) == []
    assert [name for name in _written(inputs.out) if not name.startswith(".partial-")] == []

    rerun = AuditProcess(inputs, prefect_home)
    assert rerun.process.wait(timeout=600) == 1, rerun.stderr  # the failing policy, judged and recorded
    assert (inputs.out / "audit_trail.duckdb").exists()
    assert not [name for name in _written(inputs.out) if name.startswith(".partial-")]
    assert rerun.leftovers(within_s=10) == []


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_the_commit_takes_effect_after_it(signum: int) -> None:
    seen: list[int] = []
    previous = signal.signal(signum, lambda n, _: seen.append(n))
    try:
        with signals_held():
            signal.raise_signal(signum)
            committed = not seen  # the handler has not run inside the commit
        assert committed
        assert seen == [signum]  # ... and ran right after it
    finally:
        signal.signal(signum, previous)


def test_a_staging_folder_left_by_a_killed_run_is_removed_by_a_later_run(tmp_path: Path) -> None:
    left_by_a_kill = tmp_path / ".partial-killed"
    left_by_a_kill.mkdir()
    (left_by_a_kill / "fairness.json").write_text("{}")
    an_hour_ago = time.time() - STALE_STAGING_SECONDS - 60
    os.utime(left_by_a_kill, (an_hour_ago, an_hour_ago))
    in_progress = tmp_path / ".partial-running"
    in_progress.mkdir()
    staging_dir(tmp_path, "next")
    assert not left_by_a_kill.exists()
    assert in_progress.exists()
