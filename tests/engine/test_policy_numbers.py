"""Every number a policy sets is finite and in range (issue 29): no override, delay or seed opens or hangs a run."""

from __future__ import annotations

import pytest

import fairgate
from fairgate.errors import PolicyError

BASE = """\
fairness_checker:
  sensitive_attributes: [{name: race}]
  metrics:
    - {name: disparate_impact_ratio, threshold: 0.8}
    - {name: equal_opportunity_difference, threshold: 0.1}
"""


def _refused(extra: str) -> str:
    with pytest.raises(PolicyError) as caught:
        fairgate.Policy.from_yaml(BASE + extra, source="p.yaml")
    return " ".join(caught.value.message.split())


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        # The replayed gate openers: each used to pass COMPAS, which fails both metrics by race.
        ("  overrides: [{metric: disparate_impact_ratio, threshold: -3.0, reason: x12}]", "threshold -3.0"),
        (
            "  overrides: [{metric: equal_opportunity_difference, threshold: 1e9, reason: x12}]",
            "threshold 1000000000.0",
        ),
        ("  overrides: [{metric: disparate_impact_ratio, threshold: 1.5, reason: x12}]", "threshold 1.5"),
        # Without metric: the override applies to every judged metric, so each one's range holds.
        ("  overrides: [{slicing: [race], threshold: 2.0, reason: x12}]", "for 'disparate_impact_ratio'"),
    ],
)
def test_an_override_threshold_outside_the_metrics_range_is_refused(extra: str, fragment: str) -> None:
    message = _refused(extra + "\n")
    assert fragment in message
    assert "out of range" in message
    assert "overrides[0]" in message


def test_an_override_and_a_metrics_entry_share_one_range_rule() -> None:
    with pytest.raises(PolicyError) as as_metric:
        fairgate.Policy.from_yaml(BASE.replace("threshold: 0.8", "threshold: -3.0"))
    override = _refused("  overrides: [{metric: disparate_impact_ratio, threshold: -3.0, reason: x12}]\n")
    rule = "threshold -3.0 for 'disparate_impact_ratio' is out of range"
    assert rule in " ".join(as_metric.value.message.split())
    assert rule in override


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan", ".NaN"])
@pytest.mark.parametrize(
    "template",
    [
        "  overrides: [{threshold: VALUE, reason: x12}]",
        "  metrics_extra: VALUE",  # replaced below: a metrics entry's threshold
        "  comparison: {margin: VALUE}",
        "  monitoring: {alerts: [{metric: disparate_impact_ratio, min_change: VALUE}]}",
        "  mitigation: {tolerance: VALUE}",
        "  delivery: {recipients: [a@example.org], retry_delay_seconds: VALUE}",
        "  delivery: {recipients: [a@example.org], smtp: {host: localhost, timeout_seconds: VALUE}}",
        "  columns: {decision_threshold: VALUE}",
    ],
)
def test_no_policy_number_may_be_infinite_or_nan(template: str, value: str) -> None:
    if template.startswith("  metrics_extra"):
        with pytest.raises(PolicyError) as caught:
            fairgate.Policy.from_yaml(BASE.replace("threshold: 0.8", f"threshold: {value}"))
        message = caught.value.message
    else:
        message = _refused(template.replace("VALUE", value) + "\n")
    assert "finite number" in message or "out of range" in message, message


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        ("  statistics: {seed: -1}", "statistics.seed"),
        ("  delivery: {recipients: [a@example.org], retry_delay_seconds: 1e9}", "retry_delay_seconds"),
        ("  delivery: {recipients: [a@example.org], smtp: {host: h, timeout_seconds: 1e9}}", "timeout_seconds"),
    ],
)
def test_seeds_are_non_negative_and_waits_are_bounded(extra: str, fragment: str) -> None:
    assert fragment in _refused(extra + "\n")


def test_an_override_inside_the_range_is_still_accepted() -> None:
    policy = fairgate.Policy.from_yaml(
        BASE + "  overrides: [{metric: disparate_impact_ratio, slicing: [race], threshold: 0.7, reason: x12}]\n"
    )
    assert policy.rule_for("disparate_impact_ratio", ("race",)).threshold == 0.7


@pytest.mark.parametrize(
    "delivery",
    [
        "{recipients: [a@example.org], retries: 20, retry_delay_seconds: 3600, smtp: {host: h}}",
        "{recipients: [a@example.org], retries: 5, smtp: {host: h, timeout_seconds: 600}}",
    ],
)
def test_one_delivery_is_bounded_in_time(delivery: str) -> None:
    """Each number in range, but together a mail server that is down would hold the run for hours."""
    message = _refused(f"  delivery: {delivery}\n")
    assert "one delivery could take" in message, message
    assert "the most is 900 s" in message, message
    assert "\n" not in message


def test_a_policy_error_is_one_line() -> None:
    message = _refused("  statistics: {seed: -1}\n  delivery: {recipients: [a@example.org], retries: -1}\n")
    assert "\n" not in message
    assert message.startswith("p.yaml is not a valid fairgate policy: fairness_checker.")
    assert "statistics.seed" in message
    assert "delivery.retries" in message
