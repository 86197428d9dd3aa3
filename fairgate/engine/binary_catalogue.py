"""The binary kind's metric catalogue: every policy metric of ``fairgate.engine.metrics``, by name."""

from __future__ import annotations

from fairgate.engine.metrics import known_policy_metrics, policy_metric
from fairgate.engine.tasks import TaskMetric, from_policy_metric

CATALOGUE: dict[str, TaskMetric] = {name: from_policy_metric(policy_metric(name)) for name in known_policy_metrics()}
