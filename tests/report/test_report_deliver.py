"""Delivery against a real SMTP server (aiosmtpd on 127.0.0.1): plain, STARTTLS with login, implicit TLS,
failure with retries recorded in the audit trail, and the .eml outbox without SMTP settings."""

from __future__ import annotations

import datetime as dt
import email
import email.policy
import ipaddress
import logging
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from report_docgen import synthetic_doc

from fairgate.policy.delivery import DeliveryConfig
from tasks.outbound.deliver import DeliveryError, deliver_report, resolve_credentials
from tasks.render.report import build_report_files, email_body

PASSWORD = "s3cret-Pa55word"


class Inbox:
    """aiosmtpd handler keeping every message it receives."""

    def __init__(self) -> None:
        self.messages: list[email.message.EmailMessage] = []
        self.envelopes: list[Any] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.envelopes.append(envelope)
        self.messages.append(email.message_from_bytes(envelope.content, policy=email.policy.default))
        return "250 Message accepted for delivery"


def _authenticator(server: Any, session: Any, envelope: Any, mechanism: str, auth_data: Any) -> AuthResult:
    ok = (
        isinstance(auth_data, LoginPassword)
        and auth_data.login == b"reports"
        and auth_data.password == PASSWORD.encode()
    )
    return AuthResult(success=ok, handled=False)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1/localhost, generated here (no files shipped)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    folder = tmp_path_factory.mktemp("tls")
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


def _server_context(certificate: tuple[Path, Path]) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*certificate)
    return context


@pytest.fixture
def smtp_server() -> Iterator[tuple[Inbox, int]]:
    inbox = Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=free_port())
    controller.start()
    try:
        yield inbox, controller.port
    finally:
        controller.stop()


@pytest.fixture
def starttls_server(certificate: tuple[Path, Path]) -> Iterator[tuple[Inbox, int]]:
    inbox = Inbox()
    controller = Controller(
        inbox,
        hostname="127.0.0.1",
        port=free_port(),
        tls_context=_server_context(certificate),
        require_starttls=True,
        authenticator=_authenticator,
        auth_require_tls=True,
        auth_required=True,
    )
    controller.start()
    try:
        yield inbox, controller.port
    finally:
        controller.stop()


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, Path | None]]:
    doc = synthetic_doc({"sex": ["M", "F"], "race": ["a", "b"]}, seed=5)
    paths = build_report_files(doc, out_dir=tmp_path_factory.mktemp("out"), formats=["html", "pdf"])
    return doc, paths


def _delivery(tmp_path: Path, **smtp: Any) -> DeliveryConfig:
    return DeliveryConfig.model_validate(
        {
            "recipients": ["risk@example.org", "model-owner@example.org"],
            "sender": "fairgate@example.org",
            "smtp": smtp or None,
            "outbox_dir": str(tmp_path / "outbox"),
            "retries": 2,
            "retry_delay_seconds": 0,
        }
    )


def _deliveries(trail: Path) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(trail), read_only=True) as con:
        return con.execute("select run_id, recipients, status, detail from deliveries order by seq").fetchall()


def _pdf_attachment(message: email.message.EmailMessage) -> bytes:
    parts = [p for p in message.iter_attachments() if p.get_content_type() == "application/pdf"]
    assert len(parts) == 1
    return parts[0].get_content()


def test_email_over_plain_smtp_carries_the_pdf(smtp_server: tuple[Inbox, int], report: Any, tmp_path: Path) -> None:
    inbox, port = smtp_server
    doc, paths = report
    trail = tmp_path / "trail.duckdb"
    outcome = deliver_report(
        doc, _delivery(tmp_path, host="127.0.0.1", port=port, security="none"), paths, email_body(doc), trail
    )
    assert outcome["status"] == "sent"
    assert outcome["attempts"] == 1
    (message,) = inbox.messages
    assert sorted(inbox.envelopes[0].rcpt_tos) == ["model-owner@example.org", "risk@example.org"]
    assert message["Subject"] == f"[fairgate] FAIL: credit-model 7 (run {doc['run_id']})"
    assert _pdf_attachment(message) == paths["pdf"].read_bytes()
    body = message.get_body(("plain",)).get_content()
    assert body.startswith("fairgate verdict: FAIL")
    assert "Top failures:" in body
    assert _deliveries(trail) == [
        (doc["run_id"], '["risk@example.org","model-owner@example.org"]', "sent", outcome["detail"])
    ]


def test_starttls_with_login_from_environment(
    starttls_server: tuple[Inbox, int],
    certificate: tuple[Path, Path],
    report: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    inbox, port = starttls_server
    doc, paths = report
    monkeypatch.setenv("FG_SMTP_USER", "reports")
    monkeypatch.setenv("FG_SMTP_PASSWORD", PASSWORD)
    delivery = _delivery(
        tmp_path,
        host="127.0.0.1",
        port=port,
        security="starttls",
        ca_file=str(certificate[0]),
        username_env="FG_SMTP_USER",
        password_env="FG_SMTP_PASSWORD",
    )
    trail = tmp_path / "trail.duckdb"
    with caplog.at_level(logging.DEBUG):
        outcome = deliver_report(doc, delivery, paths, email_body(doc), trail)
    assert outcome["status"] == "sent", outcome
    assert _pdf_attachment(inbox.messages[0]) == paths["pdf"].read_bytes()
    # The secret appears nowhere we write: logs, outcome, trail.
    assert PASSWORD not in caplog.text
    assert PASSWORD not in repr(outcome)
    assert all(PASSWORD not in str(row) for row in _deliveries(trail))


def test_starttls_rejects_a_wrong_password(
    starttls_server: tuple[Inbox, int], certificate: tuple[Path, Path], report: Any, tmp_path: Path
) -> None:
    _, port = starttls_server
    doc, paths = report
    delivery = _delivery(
        tmp_path,
        host="127.0.0.1",
        port=port,
        security="starttls",
        ca_file=str(certificate[0]),
        username_env="U",
        password_env="P",
    )
    outcome = deliver_report(
        doc,
        delivery,
        paths,
        "body",
        tmp_path / "trail.duckdb",
        environ={"U": "reports", "P": "wrong-password"},
    )
    assert outcome["status"] == "failed"
    assert "SMTPAuthenticationError" in outcome["detail"]
    assert "wrong-password" not in outcome["detail"]


def test_starttls_refuses_an_untrusted_certificate(
    starttls_server: tuple[Inbox, int], report: Any, tmp_path: Path
) -> None:
    _, port = starttls_server
    doc, paths = report
    delivery = _delivery(tmp_path, host="127.0.0.1", port=port, security="starttls")  # system CAs only
    outcome = deliver_report(doc, delivery, paths, "body", tmp_path / "trail.duckdb")
    assert outcome["status"] == "failed"
    assert "CERTIFICATE_VERIFY_FAILED" in outcome["detail"]


def test_implicit_tls(certificate: tuple[Path, Path], report: Any, tmp_path: Path) -> None:
    inbox = Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=free_port(), ssl_context=_server_context(certificate))
    controller.start()
    try:
        doc, paths = report
        delivery = _delivery(
            tmp_path, host="127.0.0.1", port=controller.port, security="ssl", ca_file=str(certificate[0])
        )
        outcome = deliver_report(doc, delivery, paths, "body", tmp_path / "trail.duckdb")
    finally:
        controller.stop()
    assert outcome["status"] == "sent", outcome
    assert _pdf_attachment(inbox.messages[0]) == paths["pdf"].read_bytes()


def test_unreachable_server_is_retried_then_recorded_as_failed(report: Any, tmp_path: Path) -> None:
    doc, paths = report
    port = free_port()  # nothing listens there once the probe socket is closed
    trail = tmp_path / "trail.duckdb"
    outcome = deliver_report(
        doc,
        _delivery(tmp_path, host="127.0.0.1", port=port, security="none", timeout_seconds=2),
        paths,
        "body",
        trail,
    )
    assert outcome["status"] == "failed"
    assert outcome["attempts"] == 3  # 1 + retries (2)
    assert "ConnectionRefusedError" in outcome["detail"]
    (row,) = _deliveries(trail)
    assert row[2] == "failed"
    assert "after 3 attempt(s)" in row[3]
    # The report stays on disk, and the message is kept in the outbox for a manual re-send.
    assert paths["pdf"].exists()
    assert paths["html"].exists()
    kept = email.message_from_bytes(Path(outcome["eml"]).read_bytes(), policy=email.policy.default)
    assert _pdf_attachment(kept) == paths["pdf"].read_bytes()


def test_without_smtp_settings_the_message_goes_to_the_outbox(report: Any, tmp_path: Path) -> None:
    doc, paths = report
    trail = tmp_path / "trail.duckdb"
    outcome = deliver_report(doc, _delivery(tmp_path), paths, email_body(doc), trail)
    assert outcome["status"] == "outbox"
    eml = Path(outcome["eml"])
    assert eml.parent == tmp_path / "outbox"
    assert eml.name == f"fairness_credit-model_7_{doc['run_id']}.eml"
    message = email.message_from_bytes(eml.read_bytes(), policy=email.policy.default)
    assert message["To"] == "risk@example.org, model-owner@example.org"
    assert _pdf_attachment(message) == paths["pdf"].read_bytes()
    assert _deliveries(trail)[0][2] == "outbox"


def test_no_delivery_section_sends_nothing(report: Any, tmp_path: Path) -> None:
    doc, paths = report
    assert deliver_report(doc, None, paths, "body", tmp_path / "t.duckdb")["status"] == "skipped"
    assert not (tmp_path / "t.duckdb").exists()


def test_missing_credential_variable_is_a_configuration_error(tmp_path: Path) -> None:
    smtp = _delivery(tmp_path, host="h", username_env="FG_NOPE_USER", password_env="FG_NOPE_PASSWORD").smtp
    assert smtp is not None
    with pytest.raises(DeliveryError, match="FG_NOPE_USER"):
        resolve_credentials(smtp, environ={})
    with pytest.raises(DeliveryError, match="FG_NOPE_PASSWORD"):
        resolve_credentials(smtp, environ={"FG_NOPE_USER": "u"})
    credentials = resolve_credentials(smtp, environ={"FG_NOPE_USER": "u", "FG_NOPE_PASSWORD": PASSWORD})
    assert credentials is not None
    assert PASSWORD not in repr(credentials)
