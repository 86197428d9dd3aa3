"""The metrics a policy may judge, per task (``task:`` of the policy): one catalogue per kind of model.

Binary audits keep ``fairgate.engine.metrics.policy_metric`` (its names, ranges and messages); every other kind
has its catalogue in its engine package (``fairgate/engine/<kind>/catalogue.py``, a module constant
``CATALOGUE: dict[str, TaskMetric]``), imported here only when asked for, so this module stays light.
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from typing import Literal, get_args

from fairgate.engine.metrics import PolicyMetric, SummaryOf, known_policy_metrics, policy_metric

Direction = Literal["lower_is_better", "higher_is_better"]
SummaryKind = Literal["difference", "ratio"]
TaskName = Literal["binary", "multiclass", "regression", "ranking"]
TASKS: tuple[str, ...] = get_args(TaskName)

#: The module holding each non-binary kind's ``CATALOGUE``.
_CATALOGUE_MODULES = {
    "multiclass": "fairgate.engine.multiclass.catalogue",
    "regression": "fairgate.engine.regression.catalogue",
    "ranking": "fairgate.engine.ranking.catalogue",
}


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
    """Every metric a policy with ``task: <task>`` may name, by name.

    A kind whose catalogue module is not installed has none (a policy of that task is then refused, naming
    the task).
    """
    if task == "binary":
        return {name: from_policy_metric(policy_metric(name)) for name in known_policy_metrics()}
    if task not in _CATALOGUE_MODULES:
        raise ValueError(f"unknown task {task!r}; use one of {list(TASKS)}")
    try:
        module = importlib.import_module(_CATALOGUE_MODULES[task])
    except ModuleNotFoundError as exc:
        path = _CATALOGUE_MODULES[task]
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
    for task in TASKS:
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
