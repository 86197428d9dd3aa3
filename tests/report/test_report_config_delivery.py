"""The policy's delivery section: defaults, and mistakes caught when the policy is loaded."""

from __future__ import annotations

import pytest

import fairgate
from fairgate.errors import PolicyError

BASE = """
fairness_checker:
  sensitive_attributes: [{name: sex, values: [M, F]}]
  metrics: [{name: disparate_impact_ratio, threshold: 0.8}]
  delivery:
"""


def _policy(delivery: str) -> fairgate.Policy:
    return fairgate.Policy.from_yaml(BASE + delivery, source="policy.yaml")


def test_defaults_and_ports() -> None:
    policy = _policy("    recipients: [risk@example.org]\n    smtp: {host: mail.example.org, security: ssl}\n")
    delivery = policy.delivery
    assert delivery is not None
    assert delivery.smtp is not None
    assert delivery.smtp.effective_port == 465
    assert delivery.attach == ["pdf"]
    assert delivery.retries == 3
    assert _policy("    recipients: [a@b.c]\n").delivery.smtp is None  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("snippet", "message"),
    [
        ("    recipients: [not-an-address]\n", "is not an email address"),
        ("    subject: '{verdict} {team}'\n", "unknown field(s) ['team']"),
        ("    smtp: {host: h, username_env: U}\n", "go together"),
        ("    smtp: {host: h, security: tls}\n", "delivery.smtp.security"),
        ("    smtp: {host: h, password: hunter2}\n", "delivery.smtp.password: unknown key"),
    ],
)
def test_mistakes_are_explained(snippet: str, message: str) -> None:
    with pytest.raises(PolicyError) as caught:
        _policy(snippet)
    assert message in caught.value.message
    assert "policy.yaml" in caught.value.message


def test_subject_template() -> None:
    delivery = _policy("    subject: '{model}@{version}: {verdict} ({n_failed} failed)'\n").delivery
    assert delivery is not None
    text = delivery.render_subject(verdict="fail", model="m", version="2", run_id="r", n_failed=3)
    assert text == "m@2: FAIL (3 failed)"
