"""Per-group rates and accuracy of a decision rule, in the engine's favourable-outcome terms.

"Positive" is the favourable label (policy ``favorable_label``), as everywhere in the engine: the true positive
rate is the share of people whose truth is favourable who receive the favourable decision (equal opportunity),
the false positive rate the share of the others who receive it. The same summary describes realised 0/1
predictions (:func:`performance_of`) and the expected rates of a randomised threshold rule (from the LP).

>>> perf = performance_of(
...     y_true=[1, 1, 0, 0, 1, 0], y_pred=[1, 0, 0, 1, 1, 0], groups=["a", "a", "a", "b", "b", "b"]
... )
>>> round(perf.accuracy, 4), perf.groups["a"].tpr, perf.tpr_gap
(0.6667, 0.5, 0.5)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

Constraint = Literal["equal_opportunity", "equalized_odds"]
CONSTRAINTS: tuple[Constraint, ...] = ("equal_opportunity", "equalized_odds")


@dataclass(frozen=True)
class CostMatrix:
    """The cost of each decision outcome, positive = favourable label; the optimiser minimises the mean cost.

    ``fp``: favourable decision for a person whose truth is unfavourable; ``fn``: unfavourable decision for a
    person whose truth is favourable; ``tp``/``tn``: the correct decisions (usually 0).
    """

    fp: float
    fn: float
    tp: float = 0.0
    tn: float = 0.0

    def __post_init__(self) -> None:
        if not all(np.isfinite([self.fp, self.fn, self.tp, self.tn])):
            raise ValueError(f"cost matrix entries must be finite numbers; got {self}")


Objective = Literal["accuracy", "balanced_accuracy"] | CostMatrix


@dataclass(frozen=True)
class GroupPerformance:
    """One group's counts and rates (``tpr``/``fpr`` over the favourable/unfavourable truth)."""

    positives: int
    negatives: int
    tpr: float
    fpr: float

    @property
    def n(self) -> int:
        """Rows in the group."""
        return self.positives + self.negatives

    @property
    def accuracy(self) -> float:
        """Share of correct decisions in the group."""
        return (self.positives * self.tpr + self.negatives * (1.0 - self.fpr)) / self.n

    @property
    def selection_rate(self) -> float:
        """Share of the group given the favourable decision."""
        return (self.positives * self.tpr + self.negatives * self.fpr) / self.n


@dataclass(frozen=True)
class Performance:
    """Accuracy overall and per group, and the gaps the constraints bound."""

    groups: dict[str, GroupPerformance]

    @property
    def accuracy(self) -> float:
        """Share of correct decisions overall."""
        n = sum(g.n for g in self.groups.values())
        return sum(g.accuracy * g.n for g in self.groups.values()) / n

    @property
    def balanced_accuracy(self) -> float:
        """Mean of the overall true positive and true negative rates."""
        pos = sum(g.positives for g in self.groups.values())
        neg = sum(g.negatives for g in self.groups.values())
        tp = sum(g.positives * g.tpr for g in self.groups.values())
        tn = sum(g.negatives * (1.0 - g.fpr) for g in self.groups.values())
        return 0.5 * (tp / pos + tn / neg)

    @property
    def tpr_gap(self) -> float:
        """Largest true positive rate minus the smallest (the engine's equal_opportunity_difference)."""
        rates = [g.tpr for g in self.groups.values()]
        return max(rates) - min(rates)

    @property
    def fpr_gap(self) -> float:
        """Largest false positive rate minus the smallest."""
        rates = [g.fpr for g in self.groups.values()]
        return max(rates) - min(rates)

    def gap(self, constraint: Constraint) -> float:
        """The disparity ``constraint`` bounds: the TPR gap, or the larger of the TPR and FPR gaps."""
        return self.tpr_gap if constraint == "equal_opportunity" else max(self.tpr_gap, self.fpr_gap)

    def objective_value(self, objective: Objective) -> float:
        """The objective's value: accuracy, balanced accuracy, or minus the mean cost (higher is better)."""
        if objective == "accuracy":
            return self.accuracy
        if objective == "balanced_accuracy":
            return self.balanced_accuracy
        assert isinstance(objective, CostMatrix)
        total = sum(
            g.positives * (g.tpr * objective.tp + (1 - g.tpr) * objective.fn)
            + g.negatives * (g.fpr * objective.fp + (1 - g.fpr) * objective.tn)
            for g in self.groups.values()
        )
        return -total / sum(g.n for g in self.groups.values())

    def to_dict(self, constraint: Constraint | None = None) -> dict[str, Any]:
        """Plain numbers for the thresholds file and the report."""
        out: dict[str, Any] = {
            "accuracy": self.accuracy,
            "balanced_accuracy": self.balanced_accuracy,
            "tpr_gap": self.tpr_gap,
            "fpr_gap": self.fpr_gap,
            "groups": {
                name: {
                    "n": g.n,
                    "accuracy": g.accuracy,
                    "true_positive_rate": g.tpr,
                    "false_positive_rate": g.fpr,
                    "selection_rate": g.selection_rate,
                }
                for name, g in self.groups.items()
            },
        }
        if constraint is not None:
            out["gap"] = self.gap(constraint)
        return out


def favourable_truth(y_true: Sequence[Any] | np.ndarray, favorable_label: int) -> np.ndarray:
    """Boolean array: truth is the favourable label; raises on labels other than 0/1."""
    labels = np.asarray(y_true)
    if labels.ndim != 1:
        raise ValueError("labels must be one-dimensional")
    bad = ~np.isin(labels, (0, 1))
    if bad.any():
        raise ValueError(f"labels must be 0 or 1; found {labels[bad][0]!r} in {int(bad.sum())} row(s)")
    if favorable_label not in (0, 1):
        raise ValueError(f"favorable_label must be 0 or 1, not {favorable_label!r}")
    favourable: np.ndarray = labels == favorable_label
    return favourable


def group_codes(groups: Sequence[Any] | np.ndarray, n: int) -> tuple[list[str], np.ndarray]:
    """Sorted group names (as strings) and each row's index into them."""
    values = np.asarray(groups).astype(str)
    if values.shape != (n,):
        raise ValueError(f"groups must have one value per row ({n}); got shape {values.shape}")
    names, codes = np.unique(values, return_inverse=True)
    return [str(name) for name in names], codes


def performance_of(
    y_true: Sequence[Any] | np.ndarray,
    y_pred: Sequence[Any] | np.ndarray,
    groups: Sequence[Any] | np.ndarray,
    *,
    favorable_label: int = 1,
) -> Performance:
    """The performance of 0/1 predictions (raw labels, recoded to the favourable outcome here)."""
    truth = favourable_truth(y_true, favorable_label)
    decided = favourable_truth(y_pred, favorable_label)
    if decided.shape != truth.shape:
        raise ValueError(f"y_pred has {decided.size} rows, y_true {truth.size}")
    names, codes = group_codes(groups, truth.size)
    k = len(names)
    pos = np.bincount(codes, weights=truth, minlength=k)
    neg = np.bincount(codes, weights=~truth, minlength=k)
    tp = np.bincount(codes, weights=truth & decided, minlength=k)
    fp = np.bincount(codes, weights=~truth & decided, minlength=k)
    return Performance(
        {
            name: GroupPerformance(
                positives=int(pos[i]),
                negatives=int(neg[i]),
                tpr=float(tp[i] / pos[i]) if pos[i] else float("nan"),
                fpr=float(fp[i] / neg[i]) if neg[i] else float("nan"),
            )
            for i, name in enumerate(names)
        }
    )
