"""The fairness-accuracy frontier of group thresholds: the best accuracy at each allowed disparity.

Sweeping the tolerance from 0 to the audited model's own disparity and solving the threshold programme at
each step gives (tolerance, gap achieved, accuracy, objective); the points no other point beats on both gap
and accuracy form the Pareto curve that the report plots beside the current model and the chosen point.
The ROC hulls are built once (:class:`~fairgate.mitigation.thresholds.ThresholdProblem`); each step is one
small linear programme.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> groups = rng.choice(["a", "b"], size=4000)
>>> y = rng.random(4000) < np.where(groups == "a", 0.6, 0.3)
>>> scores = np.clip(0.4 * y + rng.normal(0.3, 0.2, 4000) - 0.15 * (groups == "b"), 0, 1)
>>> curve = frontier(scores, y, groups, y_pred=scores > 0.5, steps=5)
>>> [round(p.tolerance, 3) for p in curve.points]
[0.0, 0.062, 0.123, 0.185, 0.246]
>>> all(a.accuracy <= b.accuracy for a, b in zip(curve.pareto, curve.pareto[1:]))
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fairgate.mitigation.rates import Constraint, Objective, Performance, performance_of
from fairgate.mitigation.thresholds import ThresholdProblem


@dataclass(frozen=True)
class FrontierPoint:
    """One solve of the sweep: the tolerance asked, the gap reached, accuracy and objective (fit data)."""

    tolerance: float
    gap: float
    accuracy: float
    objective: float

    def to_dict(self) -> dict[str, float]:
        """Plain numbers."""
        return {"tolerance": self.tolerance, "gap": self.gap, "accuracy": self.accuracy, "objective": self.objective}


@dataclass(frozen=True)
class Frontier:
    """The sweep, its Pareto-optimal points (by increasing gap) and the current model's own point."""

    constraint: Constraint
    points: list[FrontierPoint]
    pareto: list[FrontierPoint]
    current: FrontierPoint

    def to_dict(self) -> dict[str, Any]:
        """JSON form for the mitigation output and the report's frontier plot."""
        return {
            "constraint": self.constraint,
            "current": self.current.to_dict(),
            "points": [p.to_dict() for p in self.points],
            "pareto": [p.to_dict() for p in self.pareto],
        }


def pareto_front(points: Sequence[FrontierPoint]) -> list[FrontierPoint]:
    """The points that no other point beats (lower or equal gap and strictly higher accuracy, or vice versa).

    Sorted by increasing gap, accuracy then strictly increases along the list.

    >>> pts = [FrontierPoint(0.0, 0.0, 0.60, 0.60), FrontierPoint(0.1, 0.1, 0.58, 0.58),
    ...        FrontierPoint(0.2, 0.2, 0.65, 0.65)]
    >>> [p.tolerance for p in pareto_front(pts)]
    [0.0, 0.2]
    """
    ordered = sorted(points, key=lambda p: (p.gap, -p.accuracy))
    front: list[FrontierPoint] = []
    for point in ordered:
        if not front or point.accuracy > front[-1].accuracy:
            front.append(point)
    return front


def frontier(
    scores: Sequence[float] | np.ndarray,
    y_true: Sequence[Any] | np.ndarray,
    groups: Sequence[Any] | np.ndarray,
    *,
    y_pred: Sequence[Any] | np.ndarray,
    constraint: Constraint = "equal_opportunity",
    objective: Objective = "accuracy",
    steps: int = 21,
    favorable_label: int = 1,
) -> Frontier:
    """Solve the thresholds at ``steps`` tolerances evenly spaced from 0 to the audited predictions' gap.

    Parameters are those of :func:`~fairgate.mitigation.thresholds.fit_thresholds`; ``steps`` >= 2.
    """
    problem = ThresholdProblem.prepare(scores, y_true, groups, favorable_label=favorable_label)
    current = performance_of(y_true, y_pred, groups, favorable_label=favorable_label)
    return frontier_of(problem, current, constraint=constraint, objective=objective, steps=steps)


def frontier_of(
    problem: ThresholdProblem,
    current: Performance,
    *,
    constraint: Constraint = "equal_opportunity",
    objective: Objective = "accuracy",
    steps: int = 21,
) -> Frontier:
    """:func:`frontier` on a prepared problem, given the audited predictions' performance."""
    if steps < 2:
        raise ValueError(f"a frontier needs at least 2 steps, not {steps}")
    disparity = min(current.gap(constraint), 1.0)
    points = []
    for tolerance in np.linspace(0.0, disparity, steps):
        _, after = problem.solve(constraint, float(tolerance), objective)
        points.append(_point(float(tolerance), after, constraint, objective))
    return Frontier(constraint, points, pareto_front(points), _point(disparity, current, constraint, objective))


def _point(tolerance: float, performance: Performance, constraint: Constraint, objective: Objective) -> FrontierPoint:
    return FrontierPoint(
        tolerance=tolerance,
        gap=performance.gap(constraint),
        accuracy=performance.accuracy,
        objective=performance.objective_value(objective),
    )
