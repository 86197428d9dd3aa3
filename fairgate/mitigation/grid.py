"""The frontier of a grid of retrained models: each model's accuracy and judged disparity, the Pareto set.

Fairlearn's ``GridSearch`` trains one model per Lagrange multiplier of the constraint
(``tasks/mitigation/grid_frontier.py``);
each model's predictions on the held-out people are paired with the original model's into a joint cube
(``fairgate.mitigation.compare.joint_cube``), from which every judged metric and accuracy follow as point
estimates: a cheap audit of each model (one cube, no bootstrap, no report). The plane's x is the constraint's
policy metric at its worst slicing, y is accuracy; the Pareto set is marked as in
:func:`fairgate.mitigation.plane.accuracy_fairness_plane`. The Pareto models are then compared with the original,
with paired intervals, by ``fairgate.mitigation.compare.compare_candidates``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fairgate.errors import PolicyError
from fairgate.mitigation.compare import JointCube, point_estimates
from fairgate.mitigation.plane import accuracy_fairness_plane
from fairgate.policy.core import Policy


def grid_frontier(joints: Mapping[str, JointCube], policy: Policy, metric: str) -> dict[str, Any]:
    """The grid's points on the accuracy-``metric`` plane (the original model first, as ``baseline``).

    Raises
    ------
    PolicyError
        When ``metric`` is undefined for some model (a group with no positive label, say): no frontier.
    """
    entries = [{"name": name, "decision": None, **point_estimates(joint, policy)} for name, joint in joints.items()]
    plane = accuracy_fairness_plane({"candidates": entries}, metric)
    if plane is None:
        raise PolicyError(f"{metric} is undefined for a model of the grid; no frontier can be drawn on it")
    return {
        "metric": plane["metric"],
        "direction": plane["direction"],
        "points": [
            {"name": p["name"], "role": p["role"], "accuracy": p["y"], "disparity": p["x"], "pareto": p["pareto"]}
            for p in plane["points"]
        ],
    }
