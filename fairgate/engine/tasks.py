"""The metrics a policy may judge, per task (``task:`` of the policy): one catalogue per kind of model.

Each kind's catalogue is a module constant ``CATALOGUE: dict[str, TaskMetric]`` in the module the kind registry
names (fairgate/engine/kinds.py; binary's is built from ``fairgate.engine.metrics``), imported here only when
asked for, so this module stays light.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from fairgate.engine.kinds import KINDS, kind_of
from fairgate.engine.metrics import PolicyMetric, SummaryOf
from fairgate.engine.text import unit_text

Direction = Literal["lower_is_better", "higher_is_better"]
SummaryKind = Literal["difference", "ratio"]
#: The kinds, in the registry's order (binary first): find_metric looks a name up in this order.
TASKS: tuple[str, ...] = tuple(KINDS)


@dataclass(frozen=True)
class TaskMetric:
    """A metric a policy of some task may judge.

    Its natural direction, the thresholds it accepts, how it summarises groups (a ``difference`` judged like
    max - min, a ``ratio`` like min / max) and a short text.

    >>> metric_catalogue("binary")["disparate_impact_ratio"].summary
    'ratio'
    """

    name: str
    direction: Direction
    threshold_range: tuple[float, float]
    example_threshold: float
    summary: SummaryKind
    text: str
    # The power of the outcome's unit the metric (and its threshold) is in: 0 none (rates, ratios, shares, R²),
    # 1 the outcome's own (a gap in mean outcome, an absolute error), 2 its square (a squared error).
    unit_power: int = 0

    def describe(self) -> str:
        """The plain-language description (as ``PolicyMetric.describe``)."""
        return self.text


def from_policy_metric(metric: PolicyMetric, name: str | None = None) -> TaskMetric:
    """A binary policy metric as a catalogue entry (``name`` to list it under another name)."""
    summary: SummaryKind = metric.summary if isinstance(metric, SummaryOf) else "difference"
    return TaskMetric(
        name=name or metric.name,
        direction=metric.direction,
        threshold_range=metric.threshold_range,
        example_threshold=metric.example_threshold,
        summary=summary,
        text=metric.describe(),
    )


@functools.cache
def metric_catalogue(task: str) -> dict[str, TaskMetric]:
    """Every metric a policy with ``task: <task>`` may name, by name (the kind's ``CATALOGUE``).

    A kind whose catalogue module is not installed has none (a policy of that task is then refused, naming
    the task).
    """
    path = kind_of(task).catalogue
    try:
        module = importlib.import_module(path)
    except ModuleNotFoundError as exc:
        if exc.name is None or not (path == exc.name or path.startswith(exc.name + ".")):
            raise  # a module the catalogue itself imports is missing: a real fault
        return {}
    catalogue: dict[str, TaskMetric] = module.CATALOGUE
    return catalogue


def find_metric(name: str) -> TaskMetric | None:
    """The catalogue entry called ``name`` in the first task (binary first) that knows it, else None.

    Names shared by several tasks mean the same kind of summary there, with the same direction (checked by
    tests/engine/test_task_catalogues.py), so a rule's direction does not depend on which one is found.
    """
    for task in KINDS:  # the registry's order, binary first (read live: a kind may be registered later)
        metric = metric_catalogue(task).get(name)
        if metric is not None:
            return metric
    return None


def unknown_metric_message(name: str, task: str) -> str:
    """The error for a metric the task does not judge: the task and its metrics."""
    known = sorted(metric_catalogue(task))
    if not known:
        return f"metric {name!r}: task {task!r} has no metric catalogue in this installation"
    return f"unknown metric {name!r} for task: {task}; a {task} policy may judge: {', '.join(known)}"


def metric_units(task: str, policy: Mapping[str, Any] | None) -> dict[str, str]:
    """The unit each of the kind's metrics is printed in ("" for a rate, share or ratio).

    The kind's catalogue says which power of the outcome's unit a metric is in (``TaskMetric.unit_power``); the
    policy's options section of the kind names the unit (``regression.outcome_unit``), else "outcome units".
    """
    options = policy.get(task) if isinstance(policy, Mapping) else None
    unit = str((options or {}).get("outcome_unit") or "outcome units")
    return {name: unit_text(m.unit_power, unit) for name, m in metric_catalogue(task).items()}
