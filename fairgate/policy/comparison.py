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
    """`no_worse_fairness`: refuse a candidate that worsens any judged fairness metric; `no_worse_fairness_or_accuracy`:
    also one that loses accuracy."""
    margin: float = Field(default=0.0, ge=0.0, le=1.0)
    """Tolerated worsening of a fairness metric, in its own units (a difference's points, a ratio's fraction): a change
    is worse when its interval lies wholly beyond it."""
    accuracy_margin: float = Field(default=0.0, ge=0.0, le=1.0)
    """Tolerated loss of overall accuracy (0.01 = one percentage point), for `no_worse_fairness_or_accuracy`."""
    simultaneous: bool = True
    """The deciding intervals hold jointly over every judged change of every candidate (Bonferroni at
    `statistics.alpha`), so a candidate no different from the baseline is refused at most alpha of the time."""
    promote_failing_if_better: bool = False
    """Allow promoting a candidate that fails the policy when it is significantly better than the baseline on some
    judged fairness metric and worse on none; the comparison then says plainly that it still fails."""
