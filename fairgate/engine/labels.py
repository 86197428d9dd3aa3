"""How slicings and groups are named: one spelling of a slicing's label, one key per group.

Every place that shows a slicing (report, CLI, JUnit, Prefect artifacts, mitigation advice) names it with
:func:`slicing_label`; every place that looks a group up by its attribute values keys it with
:func:`group_key`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from fairgate.engine.text import ValueLabels, group_name

SLICING_SEPARATOR = " × "
_KEY_ENCODER = json.JSONEncoder(ensure_ascii=False)  # json.dumps(..., ensure_ascii=False), built once
WHOLE_POPULATION = "whole population"


def spelled(name: str) -> str:
    """A metric's name inside a sentence: its words, lower case (``true_positive_rate`` -> "true positive rate").

    >>> spelled("true_positive_rate")
    'true positive rate'
    """
    return name.replace("_", " ")


def slicing_label(slicing: Sequence[str]) -> str:
    """The label of a slicing: its attributes joined with ``×``, or "whole population" for the empty slicing.

    >>> slicing_label(["race", "sex"])
    'race × sex'
    >>> slicing_label([])
    'whole population'
    """
    return SLICING_SEPARATOR.join(slicing) if slicing else WHOLE_POPULATION


def group_key(group: Mapping[str, Any] | None) -> str:
    """A key identifying a group by its attribute values, whatever their order; ``None`` is the empty group.

    Values are compared as text, as groups are everywhere in the audit document.

    >>> group_key({"sex": "Male", "race": "Black"}) == group_key({"race": "Black", "sex": "Male"})
    True
    >>> group_key({"race": "Black"})
    '{"race": "Black"}'
    """
    pairs = sorted((str(k), str(v)) for k, v in (group or {}).items())
    return _KEY_ENCODER.encode(dict(pairs))


def reason_label(group: Mapping[str, Any], labels: ValueLabels | None = None) -> str:
    """A group as the engine's reasons name it: the one group name (:func:`fairgate.engine.text.group_name`).

    ``labels``: the policy's value labels (:func:`fairgate.engine.text.policy_labels`); the report unnames a
    suppressed group by the same name.

    >>> reason_label({"race": "Black", "sex": "2"}, {"sex": {"2": "Female"}}), reason_label({})
    ('Black · Female', 'the population')
    """
    return group_name(group, labels=labels, empty="the population")


def reason_labels(groups: Sequence[Mapping[str, Any]], labels: ValueLabels | None = None) -> str:
    """Several groups in a reason: ``Black · Female; Other · Male``."""
    return "; ".join(reason_label(g, labels) for g in groups)


#: The one mark of a group whose figures a report withholds (small-cell suppression), whatever the reason: a
#: count of its own from 1 to k-1, or one its figures would reveal through a linked table. Two marks would tell
#: which hidden groups are small. The group is still named: a name is not a disclosure, its small counts are.
WITHHELD = "rates withheld"


def withheld_label(label: str) -> str:
    """A hidden group's name with the one mark.

    >>> withheld_label("Asian · Male")
    'Asian · Male (rates withheld)'
    """
    return f"{label} ({WITHHELD})"
