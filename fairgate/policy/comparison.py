"""Policy section ``comparison:``: when a candidate model may replace the baseline (``fairgate compare``).

A change is *worse* only on evidence: its paired interval lies wholly on the worse side of ``margin`` (for a
lower-is-better metric the interval of candidate - baseline lies above ``+margin``; for a higher-is-better one,
below ``-margin``). Noise alone thus never blocks a promotion, and ``margin`` tolerates a small, accepted loss.

>>> rule = Comparison.model_validate({"rule": "no_worse_fairness", "margin": 0.01})
>>> rule.rule, rule.margin, rule.accuracy_margin
('no_worse_fairness', 0.01, 0.0)
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from fairgate.policy.base import STRICT

# no_worse_fairness: not promoted when any judged fairness metric is worse (the rule: a candidate that
# improves accuracy but worsens fairness is not promoted). no_worse_fairness_or_accuracy: nor when accuracy is.
PromotionRule = Literal["no_worse_fairness", "no_worse_fairness_or_accuracy"]


class Comparison(BaseModel):
    """How ``fairgate compare`` decides promote / do_not_promote."""

    model_config = STRICT

    rule: PromotionRule = "no_worse_fairness"
    # Tolerated worsening of a fairness metric (its own units: a difference's points, a ratio's fraction).
    margin: float = Field(default=0.0, ge=0.0, le=1.0)
    # Tolerated loss of overall accuracy (a fraction, 0.01 = one percentage point), for the second rule.
    accuracy_margin: float = Field(default=0.0, ge=0.0, le=1.0)
    # Intervals that decide hold jointly over every judged change (Bonferroni over statistics.alpha), so a
    # candidate no different from the baseline is refused with probability at most alpha, however many
    # metrics and slicings are compared.
    simultaneous: bool = True
    # A candidate is promotable only when its own audit passes the policy. True allows promoting a candidate that
    # fails the policy but is significantly better than the baseline on some judged fairness metric (and worse
    # on none); the comparison then says plainly that the promoted model still fails the policy.
    promote_failing_if_better: bool = False
