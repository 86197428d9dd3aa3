"""Policy section ``delivery:``: who receives the report and how it is sent.

Secrets never appear in the policy: it names the environment variables (or the Prefect Secret block) that
hold them, so a policy file can be committed and hashed into the audit trail.

>>> d = DeliveryConfig.model_validate({"recipients": ["risk@example.org"], "smtp": {"host": "mail.example"}})
>>> (d.smtp.security, d.smtp.effective_port)
('starttls', 587)
>>> d.render_subject(verdict="fail", model="credit", version="3", run_id="r1")
'[fairgate] FAIL: credit 3 (run r1)'
"""

from __future__ import annotations

import string
from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from fairgate.policy.base import STRICT

Security = Literal["starttls", "ssl", "none"]

# Fields a subject template may use; anything else is a typo caught when the policy is loaded.
SUBJECT_FIELDS = frozenset({"verdict", "model", "version", "run_id", "n_failed"})
_DEFAULT_PORTS: dict[str, int] = {"starttls": 587, "ssl": 465, "none": 25}
# The longest one report's delivery may take, every attempt timing out and every delay waited: a mail server
# that is down must not hold a run (or ``fairgate outbox send``) for hours.
MAX_DELIVERY_SECONDS = 900.0


class _Strict(BaseModel):
    model_config = STRICT


class SmtpSettings(_Strict):
    """How to reach the SMTP server: host, port, TLS mode, where the credentials live, and the timeout."""

    host: str = Field(min_length=1)
    """The SMTP server's host name."""
    port: int | None = Field(default=None, ge=1, le=65535)
    """The port; default by `security` (587 starttls, 465 ssl, 25 none)."""
    security: Security = "starttls"
    """`starttls`, `ssl` or `none` (refused with credentials: the password would cross the network in clear)."""
    username_env: str | None = None
    """The environment variable holding the user name (the value never goes in the policy)."""
    password_env: str | None = None
    """The environment variable holding the password (checked before the audit: exit 2 when unset)."""
    credentials_block: str | None = None
    """A Prefect Secret block holding the password (or JSON `{"username": ..., "password": ...}`)."""
    timeout_seconds: float = Field(default=15.0, gt=0, le=600)
    """Seconds allowed per network step (at most 600): a hung server must not hold the run for hours."""
    ca_file: str | None = None
    """A CA bundle for servers with a private certificate authority; absent: the system's store."""

    @property
    def effective_port(self) -> int:
        """The port to connect to: ``port`` if given, else the default for ``security`` (587, 465 or 25)."""
        return self.port if self.port is not None else _DEFAULT_PORTS[self.security]


class DeliveryConfig(_Strict):
    """Who receives the report, the message's sender, subject and attachments, and how it is sent.

    Without an ``smtp`` section the message is written as an .eml file to ``outbox_dir``; with one it is sent,
    transient failures retried ``retries`` times ``retry_delay_seconds`` apart.
    """

    enabled: bool = True
    """Send (or keep in the outbox) the report e-mail."""
    recipients: list[str] = []
    """Who receives the report."""
    sender: str = "fairgate@localhost"
    """The message's From address."""
    subject: str = "[fairgate] {verdict}: {model} {version} (run {run_id})"
    """The subject; `{verdict}`, `{model}`, `{version}` and `{run_id}` are filled in."""
    attach: list[Literal["pdf", "html"]] = ["pdf"]
    """What is attached: `pdf`, `html`."""
    smtp: SmtpSettings | None = None
    """How to reach the SMTP server; absent: the message is written as an `.eml` file to `outbox_dir` instead of being
    sent."""
    outbox_dir: str = "outbox"
    """Where kept messages go; a relative path is inside the run's output folder (written with the run's other
    files)."""
    retries: int = Field(default=3, ge=0, le=20)
    """Further attempts after a failed send (not after a rejected login or another permanent 5xx reply)."""
    retry_delay_seconds: float = Field(default=2.0, ge=0, le=3600)
    """Seconds between attempts. `(retries + 1) x timeout_seconds + retries x retry_delay_seconds` must stay within 900
    s."""
    required: bool = False
    """True: a send that finally fails ends the flow run `Failed` (state `DeliveryFailed`); false keeps it `Completed`.
    Either way the event `fairgate.delivery.failed` is emitted."""

    @field_validator("recipients")
    @classmethod
    def _addresses(cls, recipients: list[str]) -> list[str]:
        for address in recipients:
            if "@" not in address or any(c.isspace() for c in address.strip()):
                raise ValueError(f"recipient {address!r} is not an email address; write it as name@example.org")
        return [a.strip() for a in recipients]

    @field_validator("subject")
    @classmethod
    def _known_fields(cls, subject: str) -> str:
        try:
            fields = {name for _, name, _, _ in string.Formatter().parse(subject) if name is not None}
        except ValueError as exc:
            raise ValueError(
                f"subject template {subject!r} is malformed ({exc}); use {{verdict}}-style fields"
            ) from None
        unknown = fields - SUBJECT_FIELDS
        if unknown:
            raise ValueError(
                f"subject template uses unknown field(s) {sorted(unknown)}; available: {sorted(SUBJECT_FIELDS)}"
            )
        return subject

    @property
    def longest_seconds(self) -> float:
        """The longest one delivery may take: every attempt timing out, every delay between them waited."""
        timeout = self.smtp.timeout_seconds if self.smtp is not None else 0.0
        return (self.retries + 1) * timeout + self.retries * self.retry_delay_seconds

    @model_validator(mode="after")
    def _bounded(self) -> DeliveryConfig:
        if self.smtp is not None and self.longest_seconds > MAX_DELIVERY_SECONDS:
            raise ValueError(
                f"one delivery could take {self.longest_seconds:g} s ((retries + 1) x smtp.timeout_seconds + "
                f"retries x retry_delay_seconds); the most is {MAX_DELIVERY_SECONDS:g} s: lower retries, "
                "retry_delay_seconds or smtp.timeout_seconds"
            )
        return self

    @model_validator(mode="after")
    def _credentials_paired(self) -> DeliveryConfig:
        smtp = self.smtp
        if smtp is not None and (smtp.username_env is None) != (smtp.password_env is None):
            raise ValueError("smtp.username_env and smtp.password_env go together: give both or neither")
        has_credentials = smtp is not None and (smtp.password_env or smtp.credentials_block)
        if smtp is not None and has_credentials and smtp.security == "none":
            raise ValueError(
                "smtp.security: none with credentials would send the password in clear text; "
                "set security: starttls (port 587) or ssl (port 465), or remove the credentials"
            )
        return self

    def render_subject(self, *, verdict: str, model: str, version: str, run_id: str, n_failed: int = 0) -> str:
        """The subject line: the ``subject`` template filled in, the verdict in upper case."""
        return self.subject.format(
            verdict=verdict.upper(), model=model, version=version, run_id=run_id, n_failed=n_failed
        )
