"""Hostile round two, the hangs: nothing waits forever. A FIFO as a trail is refused before it is opened; a trail
another process holds is waited for a bounded time and then reported busy (exit 5), never damaged (exit 1).

Each case runs the installed command in a fresh process, as a user would, and checks the exit code, the one-line
message, that no traceback is shown and that it answers in seconds.
"""

from __future__ import annotations

import os
import smtplib
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from pipeline_helpers import Inputs, run_fairgate

from fairgate.policy.delivery import DeliveryConfig
from tasks.outbound.deliver import send_outbox
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
    message = _refusal(completed, 5, str(trail), "is busy", "after 1 s", "Nothing was read or written")
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


# --- the mail server is down: outbox send returns, bounded ----------------------------------------------


def _kept_messages(outbox: Path, count: int) -> None:
    outbox.mkdir(parents=True)
    for number in range(count):
        message = EmailMessage()
        message["To"] = "risk@example.org"
        message["X-Fairgate-Run-Id"] = f"r{number}"
        message.set_content("report")
        (outbox / f"m{number}.eml").write_bytes(bytes(message))


def test_outbox_send_stops_trying_once_the_server_is_down(tmp_path: Path) -> None:
    """The first kept message spends its retries; the others are not tried (they would wait as long), all stay."""
    calls: list[str] = []

    def down(message: EmailMessage, smtp: Any, credentials: Any) -> None:
        calls.append(str(message["X-Fairgate-Run-Id"]))
        raise smtplib.SMTPServerDisconnected("Connection unexpectedly closed: timed out")

    delivery = DeliveryConfig.model_validate(
        {"recipients": ["risk@example.org"], "retries": 2, "retry_delay_seconds": 0, "smtp": {"host": "localhost"}}
    )
    _kept_messages(tmp_path / "outbox", 5)
    outcomes = send_outbox(tmp_path / "outbox", delivery, tmp_path / "trail.duckdb", sender=down)
    assert calls == ["r0", "r0", "r0"]
    assert [o["status"] for o in outcomes] == ["failed"] * 5
    assert all("not tried: an earlier message failed after 3 attempt(s)" in o["detail"] for o in outcomes[1:])
    assert len(list((tmp_path / "outbox").glob("*.eml"))) == 5
    assert all("server_down" not in o for o in outcomes)


def test_a_rejected_message_does_not_stop_the_others(tmp_path: Path) -> None:
    calls: list[str] = []

    def rejects_the_first(message: EmailMessage, smtp: Any, credentials: Any) -> None:
        calls.append(str(message["X-Fairgate-Run-Id"]))
        if message["X-Fairgate-Run-Id"] == "r0":
            raise smtplib.SMTPDataError(550, b"5.7.1 message refused")

    delivery = DeliveryConfig.model_validate(
        {"recipients": ["risk@example.org"], "retries": 2, "retry_delay_seconds": 0, "smtp": {"host": "localhost"}}
    )
    _kept_messages(tmp_path / "outbox", 3)
    outcomes = send_outbox(tmp_path / "outbox", delivery, None, sender=rejects_the_first)
    assert calls == ["r0", "r1", "r2"]
    assert [o["status"] for o in outcomes] == ["failed", "sent", "sent"]


def test_outbox_send_against_a_server_that_never_answers_returns_in_seconds(tmp_path: Path) -> None:
    """A listening socket that accepts and never greets: each attempt times out, the command ends (exit 1)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    port = server.getsockname()[1]
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "fairness_checker:\n  sensitive_attributes: [{name: sex}]\n"
        "  metrics: [{name: disparate_impact_ratio, threshold: 0.8}]\n"
        "  delivery: {recipients: [risk@example.org], retries: 1, retry_delay_seconds: 0,\n"
        f"    smtp: {{host: 127.0.0.1, port: {port}, security: none, timeout_seconds: 1}}}}\n"
    )
    _kept_messages(tmp_path / "out" / "outbox", 4)
    started = time.monotonic()
    try:
        completed = _run(["outbox", "send", "--policy", str(policy), "--out", str(tmp_path / "out")], tmp_path)
    finally:
        server.close()
    assert completed.returncode == 1, completed.stderr
    assert "Traceback" not in completed.stderr
    assert "0 sent, 4 failed" in " ".join(completed.stdout.split())
    assert time.monotonic() - started < 60
