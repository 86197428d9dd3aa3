"""A failed delivery is visible, and ``fairgate outbox send`` re-sends what was kept.

End to end with real processes and servers: ``fairgate audit`` (a subprocess, on the session's Prefect server)
whose SMTP server does not answer keeps the message in the outbox, emits ``fairgate.delivery.failed`` and
ends its flow run ``DeliveryFailed``; ``fairgate outbox send`` then delivers it to a real SMTP server
(aiosmtpd on 127.0.0.1) and records it in the trail's ``deliveries``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from uuid import UUID

import duckdb
import pytest
from aiosmtpd.controller import Controller
from prefect.client.orchestration import get_client
from prefect.events.filters import EventFilter, EventNameFilter, EventResourceFilter
from report_docgen import synthetic_doc
from test_report_deliver import Inbox, free_port

from fairgate.policy.delivery import DeliveryConfig
from tasks.outbound.deliver import build_message, write_outbox
from tasks.store import verify

pytestmark = pytest.mark.usefixtures("prefect_server")  # the session's Prefect server (tests/conftest.py)

REPO = Path(__file__).resolve().parents[2]
COMPAS_CSV = REPO / ".." / "shared" / "data" / "compas" / "compas-scores-two-years.csv"
EVENT_WAIT_SECONDS = 60

# Sex only (a PASS on COMPAS), HTML attached instead of the PDF: the delivery is under test, not the renderer.
POLICY = """\
fairness_checker:
  favorable_label: 0
  sensitive_attributes:
    - {{name: sex, values: [Male, Female], reference_group: Male}}
  metrics:
    - {{name: disparate_impact_ratio, threshold: 0.8}}
  reporting: {{format: [json, html]}}
  columns: {{y_true: two_year_recid}}
  statistics: {{n_bootstrap: 50}}
  delivery:
    recipients: [risk@example.org, owner@example.org]
    attach: [html]
    retries: 1
    retry_delay_seconds: 0
    required: {required}
    smtp: {{host: 127.0.0.1, port: {port}, security: none, timeout_seconds: 5}}
"""


def _fairgate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(sys.executable).parent / "fairgate"), *args],
        env={**os.environ, "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture(scope="module")
def compas_inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("compas")
    con = duckdb.connect()
    con.read_csv(str(COMPAS_CSV)).create_view("compas")
    queries = {
        "predictions": "select id, decile_score / 10.0 as score, "
        "cast(score_text in ('Medium', 'High') as integer) as y_pred from compas",
        "labels": "select id, two_year_recid from compas",
        "attributes": "select id, sex from compas",
    }
    paths = {role: folder / f"{role}.csv" for role in queries}
    for role, query in queries.items():
        con.sql(query).to_csv(str(paths[role]))
    con.close()
    return paths


@pytest.fixture
def smtp_server() -> Any:
    inbox = Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=free_port())
    controller.start()
    try:
        yield inbox, controller.port
    finally:
        controller.stop()


def _policy(path: Path, port: int, *, required: bool = False) -> Path:
    path.write_text(POLICY.format(port=port, required=str(required).lower()))
    return path


def _audit(inputs: dict[str, Path], policy: Path, out: Path, version: str) -> subprocess.CompletedProcess[str]:
    files = [f"--{role}={path}" for role, path in inputs.items()]
    return _fairgate(
        "audit", f"--policy={policy}", *files, f"--out={out}", "--model=outbox-test", f"--model-version={version}"
    )


def _event(name: str, version: str, run_id: str) -> Any:
    event_filter = EventFilter(
        event=EventNameFilter(name=[name]), resource=EventResourceFilter(id=[f"model.outbox-test.{version}"])
    )
    deadline = time.monotonic() + EVENT_WAIT_SECONDS
    while True:
        with get_client(sync_client=True) as client:
            found = [
                e for e in client.read_events(filter=event_filter, limit=50).events if e.payload.get("run_id") == run_id
            ]
        if found or time.monotonic() > deadline:
            assert len(found) == 1, (name, found)
            return found[0]
        time.sleep(0.5)


def _state(flow_run_id: str) -> Any:
    with get_client(sync_client=True) as client:
        return client.read_flow_run(UUID(flow_run_id)).state


def _deliveries(trail: Path) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(trail), read_only=True) as con:
        return con.execute("select run_id, recipients, status, detail from deliveries order by seq").fetchall()


def test_failed_delivery_is_an_event_and_a_state_then_the_outbox_is_sent(
    compas_inputs: dict[str, Path], smtp_server: tuple[Inbox, int], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    dead_port = free_port()  # nothing listens there once the probe socket is closed
    result = _audit(compas_inputs, _policy(tmp_path / "dead.yaml", dead_port), out, "1")
    assert result.returncode == 0, result.stderr  # a PASS; the failed e-mail does not change the gate
    assert "Traceback" not in result.stderr
    assert "the report e-mail was not delivered" in " ".join(result.stderr.split())
    (document_path,) = out.glob("fairness_*.json")
    run_id = json.loads(document_path.read_text())["run_id"]
    (kept,) = (out / "outbox").glob("*.eml")

    failed = _event("fairgate.delivery.failed", "1", run_id)
    assert failed.payload["outbox"] == str(kept)
    assert failed.payload["recipients"] == ["risk@example.org", "owner@example.org"]
    assert "ConnectionRefusedError" in failed.payload["detail"]
    completed = _event("fairgate.audit.completed", "1", run_id)
    state = _state(completed.payload["flow_run_id"])
    assert (state.type.value, state.name) == ("COMPLETED", "DeliveryFailed")  # delivery.required: false
    assert state.message.startswith("verdict: pass; report delivery failed after 2 attempt(s)")
    assert state.message.endswith(f"; message kept in {kept}")  # where it is now, not the run's staging folder
    assert state.result()["report"]["delivery"]["status"] == "failed"

    # Re-sent through the working server named by another policy file.
    inbox, port = smtp_server
    policy = _policy(tmp_path / "live.yaml", port)
    sent = _fairgate("outbox", "send", f"--policy={policy}", f"--out={out}")
    assert sent.returncode == 0, sent.stdout + sent.stderr
    assert "1 sent, 0 failed" in sent.stdout
    (message,) = inbox.messages
    assert message["X-Fairgate-Run-Id"] == run_id
    assert sorted(inbox.envelopes[0].rcpt_tos) == ["owner@example.org", "risk@example.org"]
    html = next(p for p in message.iter_attachments() if p.get_content_type() == "text/html")
    # The report as rendered (SMTP carries text with CRLF line ends).
    (report,) = [p for p in out.glob("*.html") if not p.name.endswith(".explorer.html")]
    assert html.get_content().replace("\r\n", "\n").rstrip() == report.read_text().rstrip()
    assert not kept.exists()
    assert (out / "outbox" / "sent" / kept.name).exists()
    trail = out / "audit_trail.duckdb"
    assert [(r[0], r[2]) for r in _deliveries(trail)] == [(run_id, "failed"), (run_id, "sent")]
    assert _deliveries(trail)[0][3].endswith(f"; message kept in {kept}")  # where it was, not the staging folder
    assert json.loads(_deliveries(trail)[1][1]) == ["risk@example.org", "owner@example.org"]
    assert verify(trail)["ok"]

    again = _fairgate("outbox", "send", f"--policy={policy}", f"--out={out}")  # nothing kept: nothing sent twice
    assert again.returncode == 0
    assert "no kept messages" in again.stdout
    assert len(inbox.messages) == 1


def test_delivery_required_ends_the_run_failed_and_keeps_the_gate_exit_code(
    compas_inputs: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    result = _audit(compas_inputs, _policy(tmp_path / "p.yaml", free_port(), required=True), out, "required")
    assert result.returncode == 0, result.stderr  # the gate's code (PASS); not 3, not a crash
    run_id = json.loads(next(out.glob("fairness_*.json")).read_text())["run_id"]
    state = _state(_event("fairgate.audit.completed", "required", run_id).payload["flow_run_id"])
    assert (state.type.value, state.name) == ("FAILED", "DeliveryFailed")
    assert state.result(raise_on_failure=False)["verdict"] == "pass"


def _kept_message(outbox: Path, delivery: DeliveryConfig) -> Path:
    doc = synthetic_doc({"sex": ["F", "M"]}, seed=3)
    return write_outbox(build_message(doc, delivery, "body", {}), outbox, f"kept_{doc['run_id']}")


def test_a_server_still_down_keeps_the_message_and_exits_1(tmp_path: Path) -> None:
    policy = _policy(tmp_path / "p.yaml", free_port())
    out = tmp_path / "out"
    kept = _kept_message(out / "outbox", DeliveryConfig.model_validate({"recipients": ["risk@example.org"]}))
    result = _fairgate("outbox", "send", f"--policy={policy}", f"--out={out}")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "0 sent, 1 failed" in result.stdout
    assert kept.exists()
    ((_, _, status, detail),) = _deliveries(out / "audit_trail.duckdb")
    assert status == "failed"
    assert f"{kept.name} kept" in detail


@pytest.mark.parametrize(
    ("policy_text", "message"),
    [
        (POLICY.split("  delivery:")[0], "has no delivery section"),
        (POLICY.split("    smtp:")[0].format(required="false"), "has no smtp settings"),
        (
            POLICY.format(port=25, required="false").replace(
                "security: none", "username_env: FG_NOT_SET_U, password_env: FG_NOT_SET_P"
            ),
            "'FG_NOT_SET_U', which is not set",
        ),
    ],
)
def test_bad_configuration_exits_2_and_sends_nothing(tmp_path: Path, policy_text: str, message: str) -> None:
    policy = tmp_path / "p.yaml"
    policy.write_text(policy_text.replace("{{", "{").replace("}}", "}"))
    out = tmp_path / "out"
    kept = _kept_message(out / "outbox", DeliveryConfig.model_validate({"recipients": ["risk@example.org"]}))
    result = _fairgate("outbox", "send", f"--policy={policy}", f"--out={out}")
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in " ".join(result.stderr.split())
    assert "Traceback" not in result.stderr
    assert kept.exists()
    assert not (out / "audit_trail.duckdb").exists()
