"""Hostile round two, the hangs: nothing waits forever. A FIFO as a trail is refused before it is opened; a trail
another process holds is waited for a bounded time and then reported busy (exit 4), never damaged (exit 1).

Each case runs the installed command in a fresh process, as a user would, and checks the exit code, the one-line
message, that no traceback is shown and that it answers in seconds.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from pipeline_helpers import Inputs, run_fairgate

from tasks.store import record_delivery

BUSY_ENV = {"FAIRGATE_TRAIL_WAIT_SECONDS": "1"}


def _refusal(completed: subprocess.CompletedProcess[str], code: int, *fragments: str) -> str:
    """The command exited ``code`` with one ``error:`` line (the last), holding every fragment; no traceback."""
    assert completed.returncode == code, completed.stderr
    assert "Traceback" not in completed.stderr
    lines = [line for line in completed.stderr.splitlines() if line.strip()]
    assert lines, "no message"
    assert lines[-1].startswith("error: "), completed.stderr
    assert sum(line.startswith("error: ") for line in lines) == 1, completed.stderr
    for fragment in fragments:
        assert fragment in lines[-1], (fragment, lines[-1])
    return lines[-1]


def _run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    saved = {name: os.environ.get(name) for name in env or {}}
    os.environ.update(env or {})
    try:
        return run_fairgate(args, cwd=cwd, timeout=120)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.fixture
def trail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("FAIRGATE_TRAIL_KEY", raising=False)
    path = tmp_path / "trail.duckdb"
    record_delivery(path, "r1", ["a@example.org"], "sent", "smtp ok")
    return path


HOLD_DUCKDB = "import duckdb, sys, time; con = duckdb.connect(sys.argv[1]); print('held', flush=True); time.sleep(60)"
HOLD_LOCK = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from tasks.store import locked_trail
    with locked_trail(Path(sys.argv[1]), write=True):
        print("held", flush=True)
        time.sleep(60)
    """
)


@contextmanager
def _held(trail: Path, script: str) -> Iterator[None]:
    """A second process holding the trail (DuckDB's own lock, or fairgate's write lock) until the block ends."""
    holder = subprocess.Popen([sys.executable, "-c", script, str(trail)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        yield
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("script", [HOLD_DUCKDB, HOLD_LOCK], ids=["duckdb-open", "fairgate-writing"])
@pytest.mark.parametrize("command", ["list", "verify"])
def test_a_busy_trail_is_busy_not_damaged(trail: Path, script: str, command: str) -> None:
    with _held(trail, script):
        started = time.monotonic()
        completed = _run(["trail", command, "--trail", str(trail)], trail.parent, BUSY_ENV)
        elapsed = time.monotonic() - started
    message = _refusal(completed, 4, str(trail), "is busy", "after 1 s", "Nothing was read or written")
    assert "DAMAGED" not in completed.stderr
    assert "damaged" not in message
    assert elapsed < 30
    again = _run(["trail", command, "--trail", str(trail)], trail.parent, BUSY_ENV)
    assert again.returncode == 0, again.stderr


def test_a_bad_wait_is_refused(trail: Path) -> None:
    completed = _run(["trail", "list", "--trail", str(trail)], trail.parent, {"FAIRGATE_TRAIL_WAIT_SECONDS": "inf"})
    _refusal(completed, 2, "FAIRGATE_TRAIL_WAIT_SECONDS='inf'", "set it to e.g. 60")


def test_a_fifo_as_the_audit_trail_is_refused_before_it_is_opened(inputs: Inputs) -> None:
    fifo = inputs.folder / "trail.fifo"
    os.mkfifo(fifo)
    started = time.monotonic()
    completed = _run([*inputs.args("--trail", str(fifo)), "--quiet"], inputs.folder)
    _refusal(completed, 2, str(fifo), "not a regular file (a FIFO, socket or device)")
    assert time.monotonic() - started < 60
    assert not inputs.out.exists()
