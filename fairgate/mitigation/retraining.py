"""Constrained retraining, the pure part: which fairness constraint a policy asks for, and the accuracy it costs.

The training itself (Fairlearn's ``ExponentiatedGradient``) runs in ``tasks/mitigation/training.py``: Fairlearn is an
optional extra and the engine imports neither it nor scikit-learn.

The constraint follows the policy's metrics, first match in the policy's order (the order the user wrote them):
selection-rate metrics (demographic parity, disparate impact) -> demographic parity; equal opportunity -> true
positive rate parity; equalized odds -> equalized odds. A difference metric's threshold becomes the constraint's
difference bound; a ratio metric's threshold its ratio bound (Fairlearn compares each group with the overall
rate, the audit compares groups with the reference group: a bound met in training is a target, the re-audit
is the judge).

>>> policy = Policy.model_validate({"sensitive_attributes": [{"name": "sex"}],
...     "metrics": [{"name": "predictive_parity_difference", "threshold": 0.1},
...                 {"name": "disparate_impact_ratio", "threshold": 0.8}]})
>>> choose_constraint(policy)
ConstraintChoice(family='demographic_parity', metric='disparate_impact_ratio', difference_bound=None, ratio_bound=0.8)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from fairgate.errors import PolicyError
from fairgate.policy.core import Policy

Family = Literal["demographic_parity", "true_positive_rate_parity", "equalized_odds"]
FAMILIES: tuple[Family, ...] = ("demographic_parity", "true_positive_rate_parity", "equalized_odds")

_FAMILY_OF: dict[str, Family] = {
    "demographic_parity_difference": "demographic_parity",
    "demographic_parity_ratio": "demographic_parity",
    "disparate_impact_ratio": "demographic_parity",
    "equal_opportunity_difference": "true_positive_rate_parity",
    "equal_opportunity_ratio": "true_positive_rate_parity",
    "equalized_odds_difference": "equalized_odds",
    "equalized_odds_ratio": "equalized_odds",
}


@dataclass(frozen=True)
class ConstraintChoice:
    """The constraint family, the policy metric it answers, and its bound (exactly one of the two is set)."""

    family: Family
    metric: str
    difference_bound: float | None
    ratio_bound: float | None

    def record(self, attributes: list[str]) -> dict[str, Any]:
        """The constraint as a mitigation's JSON keeps it, with the sensitive ``attributes`` it was trained over."""
        return {**asdict(self), "attributes": attributes}


def choose_constraint(policy: Policy, family: Family | None = None) -> ConstraintChoice:
    """The constraint for the policy's first metric that retraining can target (of ``family``, if given).

    Raises
    ------
    PolicyError
        No metric of the policy (of that family) can be a training constraint.
    """
    for rule in policy.metrics:
        found = _FAMILY_OF.get(rule.name)
        if found is None or (family is not None and found != family):
            continue
        ratio = rule.name.endswith("_ratio")
        return ConstraintChoice(
            family=found,
            metric=rule.name,
            difference_bound=None if ratio else rule.threshold,
            ratio_bound=rule.threshold if ratio else None,
        )
    wanted = f"{family} metric" if family else "metric retraining can constrain"
    raise PolicyError(
        f"the policy has no {wanted}: constrained retraining targets "
        f"{', '.join(sorted(k for k, v in _FAMILY_OF.items() if family in (None, v)))}; add one to the policy's "
        "metrics (or choose another --constraint)"
    )


def accuracy_cost(
    y_true: Sequence[int] | np.ndarray[Any, Any],
    before: Sequence[int] | np.ndarray[Any, Any],
    after: Sequence[int] | np.ndarray[Any, Any],
    groups: Sequence[str] | np.ndarray[Any, Any],
) -> dict[str, Any]:
    """Accuracy before and after mitigation, overall and per group, and the change (after - before).

    >>> cost = accuracy_cost([1, 0, 1, 0], [1, 0, 1, 1], [1, 0, 0, 1], ["a", "a", "b", "b"])
    >>> cost["overall"]
    {'rows': 4, 'before': 0.75, 'after': 0.5, 'change': -0.25}
    >>> cost["groups"]["b"]
    {'rows': 2, 'before': 0.5, 'after': 0.0, 'change': -0.5}
    """
    truth, old, new, group = (np.asarray(a) for a in (y_true, before, after, groups))
    if not (truth.shape == old.shape == new.shape == group.shape):
        raise ValueError("y_true, before, after and groups must have the same length")
    return {
        "overall": _accuracies(truth, old, new),
        "groups": {str(g): _accuracies(truth[group == g], old[group == g], new[group == g]) for g in np.unique(group)},
    }


def _accuracies(truth: np.ndarray[Any, Any], old: np.ndarray[Any, Any], new: np.ndarray[Any, Any]) -> dict[str, Any]:
    if truth.size == 0:
        return {"rows": 0, "before": None, "after": None, "change": None}
    before, after = float(np.mean(old == truth)), float(np.mean(new == truth))
    return {"rows": int(truth.size), "before": before, "after": after, "change": after - before}
