"""publish_report inside a Prefect flow, as the audit flow calls it: renders the formats and emails the PDF.

The test flow takes the document's path (not the document): Prefect refuses flow parameters over 512 KB, which
is why publish_report is a function whose steps are tasks, not a subflow.
"""

from __future__ import annotations

import email
import email.policy
import json
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from prefect import flow
from test_report_deliver import Inbox, free_port

import fairgate
from fairgate.policy.delivery import DeliveryConfig
from flows.report_flow import publish_report

pytestmark = pytest.mark.usefixtures("prefect_server")  # the session's Prefect server (tests/conftest.py)


@flow(name="report-test-audit")
def _audit_like(doc_path: str, policy: fairgate.Policy, out_dir: Path, trail_path: Path) -> dict[str, Any]:
    return publish_report(json.loads(Path(doc_path).read_text()), policy, out_dir, trail_path)


def _run(doc: dict[str, Any], policy: fairgate.Policy, tmp_path: Path, out: Path) -> dict[str, Any]:
    doc_path = tmp_path / "doc.json"
    doc_path.write_text(json.dumps(doc))
    return _audit_like(str(doc_path), policy, out, tmp_path / "trail.duckdb")


def test_the_document_is_too_big_to_be_a_flow_parameter(compas_doc: dict[str, Any]) -> None:
    assert len(json.dumps(compas_doc)) > 512 * 1024  # the reason publish_report is not a subflow


def _with(policy: fairgate.Policy, *, formats: list[str], delivery: dict[str, Any] | None) -> fairgate.Policy:
    reporting = policy.reporting.model_copy(update={"format": formats})
    return policy.model_copy(
        update={
            "reporting": reporting,
            "delivery": None if delivery is None else DeliveryConfig.model_validate(delivery),
        }
    )


@pytest.mark.slow
def test_publish_report_renders_and_emails(
    compas_doc: dict[str, Any], compas_policy: fairgate.Policy, tmp_path: Path
) -> None:
    inbox = Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=free_port())
    controller.start()
    try:
        policy = _with(
            compas_policy,
            formats=["json", "html", "pdf"],
            delivery={
                "recipients": ["reviewers@example.org"],
                "smtp": {"host": "127.0.0.1", "port": controller.port, "security": "none"},
                "outbox_dir": str(tmp_path / "outbox"),
                "retries": 0,
            },
        )
        out = _run(compas_doc, policy, tmp_path, tmp_path / "reports")
    finally:
        controller.stop()
    assert Path(out["html"]).name == "fairness_compas_northpointe-2013_report-test-run.html"
    assert Path(out["pdf"]).exists()
    assert out["delivery"]["status"] == "sent"
    (message,) = inbox.messages
    attachment = next(p for p in message.iter_attachments() if p.get_content_type() == "application/pdf")
    assert attachment.get_content() == Path(out["pdf"]).read_bytes()


@pytest.mark.slow
def test_delivery_attaches_a_pdf_even_when_formats_leave_it_out(
    compas_doc: dict[str, Any], compas_policy: fairgate.Policy, tmp_path: Path
) -> None:
    policy = _with(
        compas_policy,
        formats=["json", "html"],
        delivery={"recipients": ["r@example.org"], "outbox_dir": str(tmp_path / "outbox")},
    )
    out = _run(compas_doc, policy, tmp_path, tmp_path / "reports")
    assert out["delivery"]["status"] == "outbox"
    assert out["pdf"] is not None
    message = email.message_from_bytes(Path(out["delivery"]["eml"]).read_bytes(), policy=email.policy.default)
    assert [p.get_content_type() for p in message.iter_attachments()] == ["application/pdf"]


def test_no_report_formats_and_no_delivery(
    compas_doc: dict[str, Any], compas_policy: fairgate.Policy, tmp_path: Path
) -> None:
    out = _run(compas_doc, _with(compas_policy, formats=["json"], delivery=None), tmp_path, tmp_path / "r")
    assert out == {
        "html": None,
        "pdf": None,
        "delivery": {"status": "skipped", "detail": "no delivery section in the policy"},
    }
    assert not (tmp_path / "r").exists()
