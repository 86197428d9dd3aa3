"""Words and numbers a reader sees: the engine's reasons and notes through the one formatter and the one group name.

Every number in a reason reads as the reports print it (rounded once, a true minus sign, thousands separated),
every group by its values through the policy's ``labels:`` ("Black · Female", never "sex=2"), and the report's
views use the kind's words and carry no repeated rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fairgate.engine.diagnostics import worst_subgroups
from fairgate.engine.kinds import kind_of
from fairgate.engine.slicing import SlicingResult
from fairgate.engine.summaries import MetricValues, interval_obstacle
from fairgate.engine.text import MINUS, policy_labels
from fairgate.mitigation.advice import recommend
from fairgate.report.build import build_view, levels_heading
from fairgate.report.format import group_label, value_labels
from fairgate.report.model import SUPPRESSED
from fairgate.report.results import redact
from fairgate.report.suppress import Suppression
from tests.report.test_suppression_attack import _entry

LABELS = {"sex": {"1": "Female", "2": "Male"}}
GROUPS = [{"race": "Black", "sex": "1"}, {"race": "Black", "sex": "2"}, {"race": "White", "sex": "1"}]


def test_an_insufficient_interval_names_its_groups_by_the_policy_labels_with_their_counts() -> None:
    rates = np.array([0.4, 0.5, 0.6])
    values = MetricValues(rates, rates, rates, np.zeros((0, 3)), events=np.array([3.0, 40, 1234]))
    use = np.array([True, True, True])
    reason = interval_obstacle(GROUPS, {"true_positive_rate": values}, use, 2000, LABELS)
    assert reason is not None
    assert "true positive rate rests on fewer than min_events=2000 people in Black · Female (3)" in reason
    assert "White · Female (1,234)" in reason  # the one count rule: thousands separated
    assert "sex=" not in reason
    assert "=1" not in reason
    unlabelled = interval_obstacle(GROUPS, {"true_positive_rate": values}, use, 2000)
    assert unlabelled is not None
    assert "Black · 1 (3)" in unlabelled


TPR: dict[str, list[float | None]] = {
    "value": [0.51234, 0.7, 0.8, 0.9],
    "ci_low": [0.42252, 0.65, 0.75, 0.88],
    "ci_high": [0.60001, 0.75, 0.85, 0.92],
}


def test_the_worst_off_note_prints_its_numbers_once_rounded_and_its_group_by_label() -> None:
    n = [200.0, 1500.0, 300.0, 2000.0]
    groups = [*GROUPS, {"race": "White", "sex": "2"}]
    part = SlicingResult(
        slicing=("race", "sex"),
        groups=groups,
        n=n,
        rows=[int(x) for x in n],
        sufficient=[True] * 4,
        reference=None,
        metrics={"true_positive_rate": TPR},
        comparisons=[],
        summaries=[],
        results=[],
        counts={},
    )
    (note,) = [w["note"] for w in worst_subgroups([part], LABELS) if w["metric"] == "true_positive_rate"]
    assert note.startswith("Black · Female: true positive rate 0.512 (interval 0.422–0.601, n = 200)"), note


def test_recommendations_name_the_worst_off_group_by_the_policy_labels_and_the_kinds_words() -> None:
    doc: dict[str, Any] = {
        "task": "regression",
        "policy": {"sensitive_attributes": [{"name": "race"}, {"name": "sex", "labels": LABELS["sex"]}]},
        "results": [
            {"metric": "mean_residual_difference", "slicing": ["race", "sex"], "status": "fail", "value": 0.70312}
            | {"threshold": 0.2, "worst_group": {"race": "Black", "sex": "2"}, "critical": False}
        ],
        "diagnostics": {"base_rates": [{"slicing": ["race"], "differ": True}]},
    }
    reason = next(r for r in recommend(doc, None) if r["kind"] == "mitigation")["reason"]
    assert "The worst-off group is Black · Male." in reason
    # The policy names no outcome_unit: the generic words.
    assert "(0.703 outcome units against a threshold of 0.2 outcome units)" in reason
    assert "The mean outcome differs between groups here" in reason
    assert "Base rates" not in reason  # a regression has no base rates


def test_a_suppressed_group_is_unnamed_in_a_reason_by_its_labelled_name() -> None:
    groups = [_entry(["sex"], {"sex": "1"}, 4), _entry(["sex"], {"sex": "2"}, 100), _entry(["sex"], {"sex": "3"}, 90)]
    suppression = Suppression.of(groups, 10, 194)
    assert suppression.hides(["sex"], {"sex": "1"})
    with value_labels(LABELS):
        name = group_label({"sex": "1"}, ["sex"])
        text = f"true positive rate rests on fewer than min_events=10 people in {name} (4): its interval would be"
        hidden = redact(text, ["sex"], suppression)
    assert name == "Female"
    assert "Female" not in hidden
    assert "(4)" not in hidden
    assert "a group whose rates are withheld" in hidden


def test_regression_and_ranking_headings_say_their_outcome_level_not_base_rates() -> None:
    assert levels_heading(kind_of("binary")) == "Base rates and what they imply"
    assert levels_heading(kind_of("multiclass")) == "Base rates and what they imply"
    assert levels_heading(kind_of("regression")) == "Mean outcome by group and what it implies"
    assert levels_heading(kind_of("ranking")) == "Mean relevance by group and what it implies"


def test_policy_labels_read_a_policy_and_its_echo_alike() -> None:
    echo = {"sensitive_attributes": [{"name": "race"}, {"name": "sex", "labels": {1: "Female"}}]}
    assert policy_labels(echo) == {"sex": {"1": "Female"}}
    assert MINUS == "\u2212"


def test_a_withheld_group_worst_off_on_many_rates_takes_one_row(compas_doc: dict[str, Any]) -> None:
    view = build_view(compas_doc)
    hidden = [w for w in view.worst_subgroups if w.value_text == SUPPRESSED]
    assert len({(w.slicing_label, w.group) for w in hidden}) < len(hidden)  # the demo data has repeats to merge
    table_rates = [(row.adverse, row.rate) for row in view.worst_table]
    table_rates += [pair for row in view.worst_table for pair in row.also]
    assert sorted(table_rates) == sorted((w.adverse, w.rate) for w in view.worst_subgroups)  # every rate once
    withheld = [(w.slicing_label, w.group) for w in view.worst_table if w.value_text == SUPPRESSED]
    assert len(withheld) == len(set(withheld))  # one row per withheld group
    assert len(view.worst_table) < len(view.worst_subgroups)
