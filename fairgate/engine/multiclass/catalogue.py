"""The metrics a ``task: multiclass`` policy may judge.

Each summary of ``fairgate.engine.multiclass.slicing.SUMMARIES`` is judged on its *worst case over classes*:
class c's one-vs-rest rate (e.g. the share predicted c) is summarised across groups, and the largest difference
(smallest ratio) over the classes is the judged value; the per-class values are in the document beside it.

With ``multiclass.adverse_classes`` the model is also a binary decision, "adverse class or not", and every binary
metric that needs no scores may be judged on it under the name ``adverse.<binary metric>`` (e.g.
``adverse.disparate_impact_ratio``). The favourable outcome is a class outside the adverse ones, so the binary
``selection_rate`` of that decision is the share *not* predicted adverse, as AIF360 counts favourable outcomes.
"""

from __future__ import annotations

from fairgate.engine.labels import spelled
from fairgate.engine.metrics import GroupMetric, known_policy_metrics, policy_metric
from fairgate.engine.multiclass.slicing import SUMMARIES
from fairgate.engine.tasks import TaskMetric, from_policy_metric

#: The prefix naming a binary metric of the "adverse or not" decision in a multiclass policy.
ADVERSE_PREFIX = "adverse."


def _summary_metric(name: str, bases: tuple[str, ...], kind: str) -> TaskMetric:
    over = " and ".join(spelled(b) for b in bases)
    if kind == "difference":
        text = f"the largest gap between groups in a class's one-vs-rest {over}, worst class (0 is parity)"
        return TaskMetric(name, "lower_is_better", (0.0, 1.0), 0.1, "difference", text)
    text = f"the smallest over largest one-vs-rest {over} across groups, worst class (1 is parity)"
    return TaskMetric(name, "higher_is_better", (0.0, 1.0), 0.8, "ratio", text)


def _needs_scores(name: str) -> bool:
    """Whether a binary policy metric needs scores or the rows (AUC, calibration, population indices)."""
    metric = policy_metric(name)
    if metric.population_level:
        return True
    return any(base not in GroupMetric.registry or GroupMetric.registry[base].needs_scores for base in metric.bases)


def adverse_metrics() -> dict[str, TaskMetric]:
    """``adverse.<name>`` for every binary metric that the decision "adverse or not" can be judged on."""
    out = {}
    for name in known_policy_metrics():
        if _needs_scores(name):
            continue
        entry = from_policy_metric(policy_metric(name), ADVERSE_PREFIX + name)
        text = f"{entry.text}, of the decision 'not an adverse class' (multiclass.adverse_classes)"
        out[entry.name] = TaskMetric(
            entry.name, entry.direction, entry.threshold_range, entry.example_threshold, entry.summary, text
        )
    return out


CATALOGUE: dict[str, TaskMetric] = {
    **{name: _summary_metric(name, bases, kind) for name, (bases, kind) in SUMMARIES.items()},
    **adverse_metrics(),
}


def adverse_label(label: str) -> str:
    """The label of an ``adverse.<metric>`` rule from its binary metric's label (one wording for every page).

    >>> adverse_label("Disparate impact ratio")
    'Disparate impact ratio, adverse or not'
    """
    return f"{label}, adverse or not"


def binary_name(name: str) -> str | None:
    """The binary metric an ``adverse.`` rule judges, or None for a per-class summary.

    >>> binary_name("adverse.disparate_impact_ratio"), binary_name("demographic_parity_difference")
    ('disparate_impact_ratio', None)
    """
    return name.removeprefix(ADVERSE_PREFIX) if name.startswith(ADVERSE_PREFIX) else None
