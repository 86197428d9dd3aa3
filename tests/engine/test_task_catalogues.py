"""The ``task:`` policy key: per-task metric catalogues, the checks that tie sections and metrics to the task, and
binary policies unchanged (their hash, their messages)."""

from __future__ import annotations

import pytest

import fairgate
from fairgate.engine.metrics import known_policy_metrics
from fairgate.engine.multiclass.catalogue import ADVERSE_PREFIX, CATALOGUE
from fairgate.engine.tasks import TASKS, find_metric, metric_catalogue
from fairgate.errors import PolicyError

BINARY = """
fairness_checker:
  sensitive_attributes: [{name: sex, values: [Male, Female], reference_group: Male}]
  metrics: [{name: disparate_impact_ratio, threshold: 0.8}]
"""

MULTICLASS = """
fairness_checker:
  task: multiclass
  multiclass: {classes: [Low, Medium, High], adverse_classes: [Medium, High]}
  sensitive_attributes: [{name: sex}]
  metrics:
    - {name: equalized_odds_difference, threshold: 0.1}
    - {name: adverse.disparate_impact_ratio, threshold: 0.8}
"""


def test_binary_catalogue_is_every_binary_policy_metric() -> None:
    assert sorted(metric_catalogue("binary")) == known_policy_metrics()


def test_names_shared_between_tasks_have_one_direction_and_summary() -> None:
    """A rule's direction is looked up by name alone (MetricRule does not know its task): shared names agree."""
    for task in TASKS:
        for name, metric in metric_catalogue(task).items():
            first = find_metric(name)
            assert first is not None
            assert (first.direction, first.summary) == (metric.direction, metric.summary), (task, name)


def test_multiclass_catalogue_has_the_summaries_and_the_adverse_binary_metrics() -> None:
    assert {"demographic_parity_difference", "equalized_odds_difference", "demographic_parity_ratio"} <= set(CATALOGUE)
    adverse = {n.removeprefix(ADVERSE_PREFIX) for n in CATALOGUE if n.startswith(ADVERSE_PREFIX)}
    assert {"disparate_impact_ratio", "false_positive_rate_difference", "equal_opportunity_difference"} <= adverse
    # Scores are not part of a multiclass audit: no AUC or calibration, no population indices.
    assert not {"auc_difference", "calibration_difference", "theil_index"} & adverse


def test_binary_policy_keeps_its_hash_and_dump() -> None:
    policy = fairgate.Policy.from_yaml(BINARY)
    canonical = policy.canonical_json()
    assert '"task"' not in canonical
    assert '"multiclass"' not in canonical
    assert '"regression"' not in canonical
    # The hash fairgate computed for this policy before the task key existed (main at bcc4d9d), also when the
    # default is written out.
    before = "70a69ceedf518ff48a46743b2255bb62797a2e8584b0ec1ecaefa46d805bf6c8"
    assert policy.sha256() == before
    assert fairgate.Policy.from_yaml(BINARY + "  task: binary\n").sha256() == before


def test_multiclass_policy_hash_counts_its_section() -> None:
    policy = fairgate.Policy.from_yaml(MULTICLASS)
    other = fairgate.Policy.from_yaml(MULTICLASS.replace("adverse_classes: [Medium, High]", "adverse_classes: [High]"))
    assert '"task":"multiclass"' in policy.canonical_json()
    assert policy.sha256() != other.sha256()


def test_rule_direction_of_a_multiclass_metric() -> None:
    policy = fairgate.Policy.from_yaml(MULTICLASS)
    assert [r.effective_direction for r in policy.metrics] == ["lower_is_better", "higher_is_better"]
    assert policy.rule_for("adverse.disparate_impact_ratio", ("sex",)).threshold == 0.8


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("equalized_odds_difference", "roc_auc_difference", "may judge"),
        ("equalized_odds_difference", "no_such_metric", "unknown metric 'no_such_metric'"),
        ("adverse_classes: [Medium, High]", "adverse_classes: null", "needs multiclass.adverse_classes"),
        ("threshold: 0.8}", "threshold: 1.5}", "out of range"),
        ("threshold: 0.8}", "threshold: 0.8, direction: lower_is_better}", "write direction: higher_is_better"),
        ("  sensitive_attributes", "  proxy: {}\n  sensitive_attributes", "binary audits only"),
        ("  sensitive_attributes", "  execution: {runner: dask}\n  sensitive_attributes", "binary audits only"),
    ],
)
def test_multiclass_policy_mistakes_are_named(old: str, new: str, message: str) -> None:
    assert old in MULTICLASS
    with pytest.raises(PolicyError, match=message):
        fairgate.Policy.from_yaml(MULTICLASS.replace(old, new))


def test_a_multiclass_metric_in_a_binary_policy_names_the_task() -> None:
    with pytest.raises(PolicyError, match="for task: binary"):
        fairgate.Policy.from_yaml(BINARY.replace("disparate_impact_ratio", "adverse.disparate_impact_ratio"))


def test_binary_unknown_metric_message_is_unchanged() -> None:
    with pytest.raises(PolicyError, match="unknown metric 'nope'; use one of: accuracy_difference"):
        fairgate.Policy.from_yaml(BINARY.replace("disparate_impact_ratio", "nope"))
