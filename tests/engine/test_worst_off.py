"""One meaning of "worst-off" (issue 22): the group on the adverse side of the metric in the policy's outcome
words. A group held to a harsher decision threshold on the same scores is the worst-off group of every rate
with a side, in the judged results and in the worst-off subgroup diagnostics alike."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import fairgate
from fairgate.engine.diagnostics import worst_subgroups
from fairgate.engine.metrics import GroupMetric

RATES = [
    "selection_rate",
    "true_positive_rate",
    "false_positive_rate",
    "false_negative_rate",
    "true_negative_rate",
    "positive_predictive_value",
    "negative_predictive_value",
    "false_discovery_rate",
    "false_omission_rate",
]


def _frame(favorable: int) -> pl.DataFrame:
    """Same scores and outcomes in both groups; group 'held' needs a score of 0.7, group 'eased' 0.4."""
    rng = np.random.default_rng(3)
    n = 20_000
    group = rng.choice(["held", "eased"], n)
    region = rng.choice(["n", "s"], n)
    score = rng.uniform(size=n)
    outcome = (rng.uniform(size=n) < score).astype(int)  # the favourable outcome: more likely at high scores
    decision = (score >= np.where(group == "held", 0.7, 0.4)).astype(int)
    if favorable == 0:  # the same people in a policy whose favourable label is 0
        outcome, decision = 1 - outcome, 1 - decision
    return pl.DataFrame({"y_true": outcome, "y_pred": decision, "group": group, "region": region})


@pytest.mark.parametrize("favorable", [1, 0])
def test_a_harsher_threshold_makes_the_group_worst_off_on_every_rate(favorable: int) -> None:
    metrics = "\n".join(f"    - {{name: {rate}_difference, threshold: 0.99}}" for rate in RATES)
    policy = fairgate.Policy.from_yaml(f"""
fairness_checker:
  favorable_label: {favorable}
  sensitive_attributes: [{{name: group}}, {{name: region}}]
  metrics:
{metrics}
  intersectional_analysis: {{min_group_size: 30, attribute_pairs: [[group, region]], include_triples: false}}
  statistics: {{n_bootstrap: 0}}
""")
    document = fairgate.audit(_frame(favorable), policy).to_dict()
    by_metric = {r["metric"]: r for r in document["results"] if r["slicing"] == ["group"]}
    for rate in RATES:
        assert by_metric[f"{rate}_difference"]["worst_group"] == {"group": "held"}, rate
        assert by_metric[f"{rate}_difference"]["best_group"] == {"group": "eased"}, rate


def test_the_worst_off_subgroups_use_the_same_side() -> None:
    policy = fairgate.Policy.from_yaml("""
fairness_checker:
  sensitive_attributes: [{name: group}, {name: region}]
  metrics: [{name: selection_rate_difference, threshold: 0.99}]
  intersectional_analysis: {min_group_size: 30, include_triples: false}
  statistics: {n_bootstrap: 0}
""")
    cube = fairgate.build_cube(_frame(1), policy)
    parts = [fairgate.compute_slicing(cube, s, policy) for s in fairgate.plan_slicings(cube, policy)]
    named = {entry["metric"]: entry["group"]["group"] for entry in worst_subgroups(parts)}
    for rate in RATES:
        assert GroupMetric.registry[rate].higher_is_better is not None
        assert named[rate] == "held", rate
