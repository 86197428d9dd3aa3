"""How slicings and groups are named: one spelling of a slicing's label, one key per group.

Every place that shows a slicing (report, CLI, JUnit, Prefect artifacts, mitigation advice) names it with
:func:`slicing_label`; every place that looks a group up by its attribute values keys it with
:func:`group_key`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from fairgate.policy.outcomes import RATE_ABBREVIATIONS

SLICING_SEPARATOR = " × "
WHOLE_POPULATION = "whole population"
#: Metric names in words, for every text a reader sees (the JSON keeps the names); one table for the engine's
#: sentences (recommendations, notes) and the reports.
METRIC_LABELS: dict[str, str] = {
    **RATE_ABBREVIATIONS,  # the rates' short names, one table (fairgate.policy.outcomes)
    "accuracy": "Accuracy",
    "roc_auc": "AUC",
    "expected_calibration_error": "ECE",
    "demographic_parity_difference": "Demographic parity difference",
    "demographic_parity_ratio": "Demographic parity ratio",
    "disparate_impact_ratio": "Disparate impact ratio",
    "equal_opportunity_difference": "Equal opportunity difference",
    "equal_opportunity_ratio": "Equal opportunity ratio",
    "equalized_odds_difference": "Equalized odds difference",
    "equalized_odds_ratio": "Equalized odds ratio",
    "predictive_parity_difference": "Predictive parity difference",
    "calibration_difference": "Calibration difference",
    "auc_difference": "AUC difference",
    "theil_index": "Theil index",
    "generalized_entropy_index": "Generalized entropy index",
    # task: regression (fairgate.engine.regression.catalogue): the names that do not read well spelled out.
    "ks_distance": "KS distance, worst group vs the rest",
    "ks_distance_vs_reference": "KS distance, worst group vs the reference",
    "wasserstein_distance": "Wasserstein distance, worst group vs the rest",
    "wasserstein_distance_vs_reference": "Wasserstein distance, worst group vs the reference",
    "r2_score": "R²",
    "r2_score_difference": "R² difference",
}


def metric_label(name: str) -> str:
    """Human name of a metric.

    >>> metric_label("false_positive_rate_difference")
    'False positive rate difference'
    >>> metric_label("equal_opportunity_difference")
    'Equal opportunity difference'
    """
    return METRIC_LABELS.get(name) or name.replace("_", " ").capitalize()


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
    return json.dumps(dict(pairs), ensure_ascii=False)


def reason_label(group: Mapping[str, Any]) -> str:
    """A group as the engine's reasons name it: ``race=Black, sex=2`` (the report unnames suppressed ones by it).

    >>> reason_label({"race": "Black", "sex": "2"}), reason_label({})
    ('race=Black, sex=2', 'the population')
    """
    return ", ".join(f"{k}={v}" for k, v in group.items()) or "the population"


def reason_labels(groups: Sequence[Mapping[str, Any]]) -> str:
    """Several groups in a reason: ``race=Black, sex=2; race=Other, sex=1``."""
    return "; ".join(reason_label(g) for g in groups)
