"""DELIVER: email the report to the policy's recipients, or write it to an outbox as an .eml file.

Credentials come from environment variables or a Prefect Secret block named in the policy; they are resolved
inside the task (never passed as task parameters, which Prefect stores) and never logged. A failed send is
retried (tenacity), then recorded as failed in the audit trail; the report files stay on disk and the message
is kept in the outbox so it can be re-sent by hand.
"""

from __future__ import annotations

import email
import email.policy
import json
import logging
import os
import smtplib
import ssl
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formatdate, getaddresses, make_msgid
from pathlib import Path
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE
from tenacity import RetryError, Retrying, retry_if_exception, stop_after_attempt, stop_after_delay, wait_fixed

from fairgate.errors import FairgateError
from fairgate.policy.delivery import DeliveryConfig, SmtpSettings
from tasks.outputs import output_stem, write_atomic

log = logging.getLogger(__name__)

# Errors worth another attempt: the network or the server, not our message or our credentials' absence.
TRANSIENT = (OSError, smtplib.SMTPException)


def is_transient(error: BaseException) -> bool:
    """Whether another attempt may succeed: not after a rejected login (535: retrying only risks a lock-out)
    nor any other permanent (5xx) SMTP reply.

    >>> is_transient(smtplib.SMTPAuthenticationError(535, b"5.7.8 bad credentials"))
    False
    >>> is_transient(smtplib.SMTPServerDisconnected("gone")), is_transient(smtplib.SMTPResponseException(421, b"busy"))
    (True, True)
    """
    if isinstance(error, smtplib.SMTPAuthenticationError):
        return False
    if isinstance(error, smtplib.SMTPResponseException) and 500 <= error.smtp_code < 600:
        return False
    return isinstance(error, TRANSIENT)


class DeliveryError(FairgateError):
    """Delivery is configured in a way that cannot work (e.g. a credential variable is not set)."""


@dataclass(frozen=True)
class Credentials:
    username: str
    password: str

    def __repr__(self) -> str:  # never print the secret, even by accident in a traceback
        return f"Credentials(username={self.username!r}, password=***)"


def resolve_credentials(smtp: SmtpSettings, environ: Mapping[str, str] | None = None) -> Credentials | None:
    """The SMTP login from environment variables or a Prefect Secret block; None when none is configured."""
    env = os.environ if environ is None else environ
    username = env.get(smtp.username_env) if smtp.username_env else None
    if smtp.username_env and username is None:
        raise DeliveryError(
            f"delivery.smtp.username_env names {smtp.username_env!r}, which is not set in the environment; "
            "export it or remove username_env from the policy"
        )
    if smtp.credentials_block:
        secret = _load_secret_block(smtp.credentials_block)
        if isinstance(secret, Mapping):
            return Credentials(str(secret.get("username") or username or ""), str(secret.get("password", "")))
        return Credentials(username or "", str(secret))
    if smtp.password_env:
        password = env.get(smtp.password_env)
        if password is None:
            raise DeliveryError(
                f"delivery.smtp.password_env names {smtp.password_env!r}, which is not set in the "
                f"environment; "
                "export it or remove password_env from the policy"
            )
        return Credentials(username or "", password)
    return None


def _load_secret_block(name: str) -> Any:
    from prefect.blocks.system import Secret

    try:
        value = Secret.load(name).get()  # type: ignore[union-attr]  # sync call: a Secret, no coroutine
    except ValueError as exc:
        raise DeliveryError(
            f"Prefect Secret block {name!r} (delivery.smtp.credentials_block) not found: {exc}"
        ) from None
    if isinstance(value, str) and value.lstrip().startswith("{"):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def build_message(
    result_doc: Mapping[str, Any],
    delivery: DeliveryConfig,
    body: str,
    attachments: Mapping[str, Path | None],
) -> EmailMessage:
    """The email: plain-text summary body, the report files (PDF by default) attached."""
    model = result_doc.get("model") or {}
    message = EmailMessage()
    subject = delivery.render_subject(
        verdict=str(result_doc.get("verdict", "unknown")),
        model=str(model.get("name", "model")),
        version=str(model.get("version", "")),
        run_id=str(result_doc.get("run_id", "")),
        n_failed=int((result_doc.get("verdict_detail") or {}).get("n_failed", 0)),
    )
    # A model name read from the predictions may hold a line break: never let it reach the header as one.
    message["Subject"] = "".join(" " if unicodedata.category(c) in {"Cc", "Zl", "Zp"} else c for c in subject)
    message["From"] = delivery.sender
    message["To"] = ", ".join(delivery.recipients)
    message["Date"] = formatdate(localtime=False)
    message["Message-ID"] = make_msgid(domain=delivery.sender.rpartition("@")[2] or "fairgate.local")
    message["X-Fairgate-Run-Id"] = str(result_doc.get("run_id", ""))
    message.set_content(body)
    kinds = {"pdf": ("application", "pdf"), "html": ("text", "html")}
    for kind in delivery.attach:
        path = attachments.get(kind)
        if path is None:
            continue
        maintype, subtype = kinds[kind]
        data = Path(path).read_bytes()
        if maintype == "text":
            message.add_attachment(data.decode("utf-8"), subtype=subtype, filename=Path(path).name)
        else:
            message.add_attachment(data, maintype=maintype, subtype=subtype, filename=Path(path).name)
    return message


def send_smtp(
    message: EmailMessage,
    smtp: SmtpSettings,
    credentials: Credentials | None,
    context: ssl.SSLContext | None = None,
) -> None:
    """One attempt to send over SMTP with the configured transport security."""
    if context is None and smtp.security != "none":
        context = ssl.create_default_context(cafile=smtp.ca_file)
    port = smtp.effective_port
    client: smtplib.SMTP
    if smtp.security == "ssl":
        client = smtplib.SMTP_SSL(smtp.host, port, timeout=smtp.timeout_seconds, context=context)
    else:
        client = smtplib.SMTP(smtp.host, port, timeout=smtp.timeout_seconds)
    with client:
        client.ehlo()
        if smtp.security == "starttls":
            client.starttls(context=context)
            client.ehlo()
        if credentials is not None:
            client.login(credentials.username, credentials.password)
        client.send_message(message)


def write_outbox(message: EmailMessage, outbox_dir: Path, stem: str) -> Path:
    """The message as an .eml file (RFC 5322), readable by any mail client."""
    return write_atomic(Path(outbox_dir) / f"{stem}.eml", message.as_bytes())


def _record(trail_path: Path | None, run_id: str, recipients: list[str], status: str, detail: str) -> None:
    if trail_path is None:
        return
    from tasks.store import record_delivery  # the pipeline's trail module

    record_delivery(Path(trail_path), run_id, recipients, status, detail)


def deliver_report(
    result_doc: Mapping[str, Any],
    delivery: DeliveryConfig | None,
    report_paths: Mapping[str, Path | None],
    body: str,
    trail_path: Path | None,
    *,
    sender: Callable[[EmailMessage, SmtpSettings, Credentials | None], None] = send_smtp,
    environ: Mapping[str, str] | None = None,
    out_dir: Path | None = None,
    final_dir: Path | None = None,
) -> dict[str, Any]:
    """Send (or write to the outbox) and record the outcome; never raises for a failed send.

    A relative ``outbox_dir`` is taken inside ``out_dir`` (the run's staging folder, so the message is
    promoted with the run's other files); without ``out_dir``, relative to the working directory.
    ``final_dir``: where ``out_dir``'s files are moved once the run is recorded; the trail names the kept
    message there, where a reader (or ``fairgate outbox send``) finds it.
    """
    run_id = str(result_doc.get("run_id", ""))
    outbox = Path(out_dir or ".") / delivery.outbox_dir if delivery is not None else Path(".")

    def final(path: Path) -> Path:
        if final_dir is None or out_dir is None or not path.is_relative_to(out_dir):
            return path
        return Path(final_dir) / path.relative_to(out_dir)

    if delivery is None or not delivery.enabled:
        return {"status": "skipped", "detail": "no delivery section in the policy", "recipients": []}
    recipients = list(delivery.recipients)
    message = build_message(result_doc, delivery, body, report_paths)
    stem = output_stem(result_doc)
    if delivery.smtp is None:
        path = write_outbox(message, outbox, stem)
        written = f"written to {final(path)}"
        _record(trail_path, run_id, recipients, "outbox", written)
        log.info("no SMTP settings: report message written to %s", path)
        return {"status": "outbox", "detail": written, "recipients": recipients, "eml": path, "attempts": 0}
    if not recipients:
        _record(trail_path, run_id, recipients, "skipped", "no recipients configured")
        return {"status": "skipped", "detail": "no recipients configured", "recipients": [], "attempts": 0}
    status, detail, attempts, _ = _send_with_retries(message, delivery, delivery.smtp, sender, environ)
    outcome: dict[str, Any] = {"status": status, "detail": detail, "recipients": recipients}
    if status == "failed":
        kept = write_outbox(message, outbox, stem)
        outcome.update(detail=f"{detail}; message kept in {final(kept)}", eml=kept)
        log.warning("report delivery %s", outcome["detail"])
    else:
        log.info("report %s", detail)
    _record(trail_path, run_id, recipients, status, outcome["detail"])
    return {**outcome, "attempts": attempts}


def _send_with_retries(
    message: EmailMessage,
    delivery: DeliveryConfig,
    smtp: SmtpSettings,
    sender: Callable[[EmailMessage, SmtpSettings, Credentials | None], None],
    environ: Mapping[str, str] | None,
) -> tuple[str, str, int, bool]:
    """Send, retrying transient failures as the policy says: ``sent`` or ``failed``, the detail, the attempts,
    and whether the server failed every attempt transiently (down or not answering: the next message would too)."""
    credentials = resolve_credentials(smtp, environ)  # a misconfiguration is an error, not a retry
    attempts = 0
    try:
        for attempt in Retrying(
            # A server that answers slowly cannot stretch the policy's bound (fairgate.policy.delivery).
            stop=stop_after_attempt(delivery.retries + 1) | stop_after_delay(delivery.longest_seconds),
            wait=wait_fixed(delivery.retry_delay_seconds),
            retry=retry_if_exception(is_transient),
            reraise=False,
        ):
            with attempt:
                attempts = attempt.retry_state.attempt_number
                sender(message, smtp, credentials)
    except (RetryError, *TRANSIENT) as exc:  # retries spent, or a permanent error (not retried)
        error = exc.last_attempt.exception() if isinstance(exc, RetryError) else exc
        where = f"{smtp.host}:{smtp.effective_port}"
        detail = f"failed after {attempts} attempt(s) to {where}: {type(error).__name__}: {error}"
        return "failed", detail, attempts, error is not None and is_transient(error)
    detail = f"sent to {len(delivery.recipients)} recipient(s) via {smtp.host}:{smtp.effective_port} ({smtp.security})"
    return "sent", detail, attempts, False


@task(name="deliver-report", cache_policy=NO_CACHE)
def deliver(
    result_doc: dict[str, Any],
    delivery: DeliveryConfig | None,
    report_paths: dict[str, Path | None],
    body: str,
    trail_path: Path | None,
    out_dir: Path | None = None,
    final_dir: Path | None = None,
) -> dict[str, Any]:
    """Prefect task: email the report (retries inside, with tenacity, so the failure is recorded once)."""
    return deliver_report(result_doc, delivery, report_paths, body, trail_path, out_dir=out_dir, final_dir=final_dir)


SENT_FOLDER = "sent"  # inside the outbox: messages re-sent by ``fairgate outbox send`` (kept, never sent twice)


def outbox_folder(delivery: DeliveryConfig, out_dir: Path) -> Path:
    """Where a run writing into ``out_dir`` kept its messages (``delivery.outbox_dir``, relative to ``out_dir``)."""
    return Path(out_dir) / delivery.outbox_dir


def send_outbox(
    outbox: Path,
    delivery: DeliveryConfig,
    trail_path: Path | None,
    *,
    sender: Callable[[EmailMessage, SmtpSettings, Credentials | None], None] = send_smtp,
    environ: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Send each kept ``.eml`` message in ``outbox`` through the policy's SMTP settings, with its retries.

    A message goes to the recipients it names (its To and Cc headers, as when it was first tried); each
    outcome is recorded in the trail's ``deliveries`` table under the run id the message carries; a sent
    message moves into ``outbox/sent/``, a failed one stays for the next attempt. Raises DeliveryError when
    the policy cannot send (no smtp section, a credential variable not set), before anything is tried.
    """
    smtp = delivery.smtp
    if smtp is None:
        raise DeliveryError(
            "the policy's delivery section has no smtp settings, so the outbox cannot be sent; add "
            "delivery.smtp (host, port, security) to the policy given with --policy"
        )
    resolve_credentials(smtp, environ)  # a missing credential is a configuration error, before any attempt
    outcomes: list[dict[str, Any]] = []
    unreachable: str | None = None
    for path in sorted(p for p in Path(outbox).glob("*.eml") if p.is_file()):  # a FIFO would block the read
        outcomes.append(_send_kept(path, delivery, smtp, trail_path, sender, environ, unreachable=unreachable))
        if outcomes[-1].pop("server_down"):
            # The server failed every attempt: the next messages would wait as long for the same answer.
            unreachable = outcomes[-1]["detail"].partition("; re-send")[0]
    return outcomes


def _send_kept(
    path: Path,
    delivery: DeliveryConfig,
    smtp: SmtpSettings,
    trail_path: Path | None,
    sender: Callable[[EmailMessage, SmtpSettings, Credentials | None], None],
    environ: Mapping[str, str] | None,
    *,
    unreachable: str | None = None,
) -> dict[str, Any]:
    """Send one kept message (not tried when an earlier one found the server ``unreachable``), record it."""
    message = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
    recipients = [address for _, address in getaddresses([*message.get_all("To", []), *message.get_all("Cc", [])])]
    run_id = str(message.get("X-Fairgate-Run-Id", ""))
    server_down = False
    if not recipients:
        status, detail, attempts = "failed", f"{path.name} names no recipient (To/Cc): not a fairgate message?", 0
    elif unreachable is not None:
        status, detail, attempts = "failed", f"not tried: an earlier message {unreachable}", 0
    else:
        status, detail, attempts, server_down = _send_with_retries(message, delivery, smtp, sender, environ)
    if status == "sent":
        target = path.parent / SENT_FOLDER / path.name
        target.parent.mkdir(exist_ok=True)
        os.replace(path, target)
        detail = f"{detail}; re-sent from the outbox ({path.name}), moved to {target}"
    else:
        detail = f"{detail}; re-send from the outbox: {path.name} kept"
    _record(trail_path, run_id, recipients, status, detail)
    return {
        "eml": str(path),
        "run_id": run_id,
        "recipients": recipients,
        "status": status,
        "detail": detail,
        "attempts": attempts,
        "server_down": server_down,
    }
