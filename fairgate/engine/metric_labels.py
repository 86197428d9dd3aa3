"""Metric names in words: one table for every text a reader sees (the JSON keeps the names).

The engine's sentences (recommendations, the impossibility note, promotion reasons, drift alerts) and every report
name a metric with :func:`metric_label`.
"""

from __future__ import annotations

from fairgate.policy.outcomes import RATE_ABBREVIATIONS

METRIC_LABELS: dict[str, str] = {
    **RATE_ABBREVIATIONS,  # the rates' short names, one table (fairgate.policy.outcomes)
    "accuracy": "Accuracy",
    "roc_auc": "AUC",
    "expected_calibration_error": "ECE",
    "demographic_parity_difference": "Demographic parity difference",
    "label_disagreement_difference": "Label disagreement difference",
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


def in_sentence(label: str) -> str:
    """A metric's label inside a sentence: its first word in lower case, unless it is an abbreviation.

    >>> in_sentence("Disparate impact ratio"), in_sentence("FPR difference"), in_sentence("R² difference")
    ('disparate impact ratio', 'FPR difference', 'R² difference')
    >>> in_sentence("KS distance, worst group vs the rest"), in_sentence("")
    ('KS distance, worst group vs the rest', '')
    """
    if len(label) > 1 and label[0].isupper() and label[1].islower():
        return label[0].lower() + label[1:]
    return label


def metric_words(name: str) -> str:
    """A metric's name in words inside a sentence (:func:`metric_label`, lower case unless an abbreviation).

    >>> metric_words("disparate_impact_ratio"), metric_words("true_positive_rate"), metric_words("selection_rate")
    ('disparate impact ratio', 'TPR', 'selection rate')
    """
    return in_sentence(metric_label(name))
