"""A metric's name inside a sentence is in lower case (an abbreviation stays as it is), one rule everywhere."""

from __future__ import annotations

import re

from fairgate.engine.metric_labels import METRIC_LABELS, in_sentence, metric_words
from fairgate.policy.outcomes import Outcomes
from fairgate.report.glossary import policy_metrics

_JUDGED = [
    "demographic_parity_difference",
    "demographic_parity_ratio",
    "disparate_impact_ratio",
    "equal_opportunity_difference",
    "equalized_odds_ratio",
    "predictive_parity_difference",
    "calibration_difference",
    "auc_difference",
]


def test_words_inside_a_sentence() -> None:
    assert metric_words("disparate_impact_ratio") == "disparate impact ratio"
    assert metric_words("selection_rate") == "selection rate"
    assert metric_words("true_positive_rate") == "TPR"  # an abbreviation keeps its capitals
    assert in_sentence("R² difference") == "R² difference"
    assert in_sentence("KS distance, worst group vs the rest") == "KS distance, worst group vs the rest"


def test_the_glossary_writes_no_capitalised_metric_name_mid_sentence() -> None:
    capitalised = [label for label in METRIC_LABELS.values() if label != in_sentence(label)]
    for row in policy_metrics(_JUDGED, Outcomes()):
        for text in (row.formula, row.meaning):
            for label in capitalised:
                # At the start of the cell a capital is right; anywhere after it, not.
                assert not re.search(rf"(?<=.)\b{re.escape(label)}\b", text), (label, text)
    rows = {row.term: row for row in policy_metrics(["disparate_impact_ratio"], Outcomes())}
    assert rows["Disparate impact ratio"].formula == "min / max of selection rate over groups"
