"""Number and label formatting for the report: metric names, rounding, counts, slicing and group labels."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from types import MappingProxyType
from typing import Any

from fairgate.engine.labels import slicing_label
from fairgate.engine.metric_labels import METRIC_LABELS as METRIC_LABELS
from fairgate.engine.metric_labels import metric_label as metric_label
from fairgate.engine.metrics import policy_metric
from fairgate.engine.text import MINUS as MINUS
from fairgate.engine.text import bracket_text as bracket_text
from fairgate.engine.text import estimate_text as estimate_text
from fairgate.engine.text import fmt as fmt
from fairgate.engine.text import fmt_bound as fmt_bound
from fairgate.engine.text import fmt_count as fmt_count
from fairgate.engine.text import fmt_p as fmt_p
from fairgate.engine.text import fmt_share as fmt_share
from fairgate.engine.text import fmt_signed as fmt_signed
from fairgate.engine.text import group_name, policy_labels, value_name
from fairgate.engine.text import interval_text as interval_text
from fairgate.engine.text import unit_text as unit_text
from fairgate.engine.text import visible_text as visible_text
from fairgate.policy.outcomes import RATE_ABBREVIATIONS, Outcomes, rate_phrase
from fairgate.report.model import KeyValue

#: Group metrics shown in the by-group tables, in reading order.
TABLE_METRICS: tuple[str, ...] = (
    "selection_rate",
    "base_rate",
    "true_positive_rate",
    "false_positive_rate",
    "false_negative_rate",
    "positive_predictive_value",
    "accuracy",
    "roc_auc",
    "expected_calibration_error",
)
#: The badge text of each result status; statuses that are neither pass nor fail get their own badge.
STATUS_MARKS: dict[str, str] = {
    "pass": "PASS",
    "fail": "FAIL",
    "inconclusive": "INCONCLUSIVE",
    "insufficient_data": "NO DATA",
}
#: Results that were not judged pass or fail (shown with their reason).
UNDECIDED_STATUSES = ("inconclusive", "insufficient_data")


def rate_label(name: str, words: Outcomes) -> str:
    """A group metric's short name with what it counts in the policy's words (other metrics: their name).

    >>> compas = Outcomes(favorable_decision="not flagged high-risk", unfavorable_decision="flagged high-risk",
    ...                   favorable_truth="did not reoffend", unfavorable_truth="reoffended")
    >>> rate_label("false_negative_rate", compas)
    'FNR – flagged high-risk among those who did not reoffend'
    >>> rate_label("accuracy", compas)
    'Accuracy'
    """
    phrase = rate_phrase(name, words)
    return f"{RATE_ABBREVIATIONS[name]} – {phrase}" if phrase else metric_label(name)


def policy_metric_label(name: str, words: Outcomes) -> str:
    """A policy metric's name; one built on a single error rate also says what that rate counts.

    >>> policy_metric_label("false_negative_rate_difference", Outcomes(unfavorable_decision="flagged high-risk",
    ...                                                                favorable_truth="did not reoffend"))
    'FNR difference (flagged high-risk among those who did not reoffend)'
    >>> policy_metric_label("equal_opportunity_difference", Outcomes())
    'Equal opportunity difference'
    """
    for summary in ("difference", "ratio"):
        base = name.removesuffix(f"_{summary}")
        phrase = rate_phrase(base, words) if base != name and name not in METRIC_LABELS else None
        if phrase:
            return f"{RATE_ABBREVIATIONS[base]} {summary} ({phrase})"
    return metric_label(name)


def roc_axes(words: Outcomes) -> tuple[str, str]:
    """The ROC chart's axis titles: the two rates it plots, in the policy's words."""
    return rate_label("false_positive_rate", words), rate_label("true_positive_rate", words)


def calibration_axes(words: Outcomes, favorable_label: int) -> tuple[str, str]:
    """The reliability chart's axis titles: the score is the predicted chance of the favourable outcome.

    With favourable label 0 the engine uses 1 - the model's score (a risk score turned into the chance of the
    favourable outcome), and the axis says so.

    >>> calibration_axes(Outcomes(favorable_truth="did not reoffend"), 0)[0]
    'Predicted chance: did not reoffend (1 − model score)'
    """
    flipped = " (1 − model score)" if favorable_label == 0 else " (model score)"
    return f"Predicted chance: {words.favorable_truth}{flipped}", f"Observed share who {words.favorable_truth}"


def base_metrics(name: str) -> tuple[str, ...]:
    """The group metrics a policy metric summarises (``equalized_odds_difference`` -> TPR and FPR)."""
    try:
        return tuple(policy_metric(name).bases)
    except (ValueError, AttributeError):
        for suffix in ("_difference", "_ratio"):
            if name.endswith(suffix):
                return (name.removesuffix(suffix),)
        return ()


def round_number(value: Any, digits: int = 4) -> float | None:
    """A finite number rounded for the view, None for anything undefined.

    >>> round_number(0.123456789), round_number(None), round_number(float("inf"))
    (0.1235, None, None)
    """
    if value is None or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return round(float(value), digits)


def slicing_key(slicing: Sequence[str]) -> str:
    """The label of a slicing.

    >>> slicing_key(["race", "sex"]), slicing_key([])
    ('race × sex', 'whole population')
    """
    return slicing_label(slicing)


#: The policy's ``labels:`` per attribute (coded value -> its reading), in force while a view is built.
_VALUE_LABELS: ContextVar[Mapping[str, Mapping[str, str]]] = ContextVar(
    "fairgate_value_labels", default=MappingProxyType({})
)


@contextmanager
def value_labels(labels: Mapping[str, Mapping[str, str]]) -> Iterator[None]:
    """Within the block, :func:`group_label` and :func:`value_label` read coded values through ``labels``.

    ``labels``: per attribute, the policy's ``labels:`` map (``{"sex": {"1": "Female (1)"}}``).
    """
    token = _VALUE_LABELS.set(labels)
    try:
        yield
    finally:
        _VALUE_LABELS.reset(token)


def labels_of(policy: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """The ``labels:`` maps of a policy echo's sensitive attributes (attributes without one are left out)."""
    return policy_labels(policy)


def value_label(attribute: str, value: Any) -> str:
    """A group value as the report prints it: the policy's label for a coded value, else the value itself.

    >>> with value_labels({"sex": {"1": "Female (1)"}}):
    ...     value_label("sex", 1), value_label("sex", "2"), value_label("race", "1")
    ('Female (1)', '2', '1')
    """
    return value_name(attribute, value, _VALUE_LABELS.get())


def group_label(group: Mapping[str, Any] | None, slicing: Sequence[str] | None = None) -> str:
    """``{"sex": "Female", "race": "Black"}`` -> ``"Female · Black"`` (values only: the columns say which).

    The core's one group name (:func:`fairgate.engine.text.group_name`): hidden characters shown escaped, coded
    values read through the policy's ``labels:`` in force (:func:`value_labels`).
    """
    return group_name(group, slicing, _VALUE_LABELS.get())


def short(value: Any) -> str:
    """A value of any shape as one short cell text (floats at 3 digits)."""
    if isinstance(value, float):
        return fmt(value)
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={short(x)}" for k, x in value.items())
    if isinstance(value, list):
        return ", ".join(short(x) for x in value)
    return str(value)


def inline(item: Mapping[str, Any]) -> str:
    """A mapping as ``key: value; ...`` (its slicing left out: the row says it)."""
    return "; ".join(f"{k}: {short(v)}" for k, v in item.items() if k != "slicing")


def flatten(value: Any, prefix: str = "", limit: int = 60) -> list[KeyValue]:
    """Nested facts (alignment, validation, inputs) as key/value rows, for a table whatever their shape.

    >>> [(kv.key, kv.value) for kv in flatten({"a": {"b": 1, "c": [1, 2]}, "d": 0.12345})]
    [('a.b', '1'), ('a.c', '1, 2'), ('d', '0.123')]
    """
    out: list[KeyValue] = []
    if value is None:
        return out
    if not isinstance(value, Mapping):
        return [KeyValue(prefix or "value", short(value))]
    for k, v in value.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        if isinstance(v, Mapping):
            out.extend(flatten(v, key, limit))
        elif isinstance(v, list) and v and isinstance(v[0], Mapping):
            listed = " | ".join(inline(x) for x in v[:5]) + (" | …" if len(v) > 5 else "")
            out.append(KeyValue(key, f"{len(v)} item(s): {listed}"))
        else:
            out.append(KeyValue(key, short(v)))
        if len(out[-1].value) > 240:  # a report cell, not a dump: the JSON document has the rest
            out[-1] = KeyValue(out[-1].key, out[-1].value[:239] + "…")
        if len(out) >= limit:
            out.append(KeyValue("…", "truncated; see the JSON document"))
            break
    return out
