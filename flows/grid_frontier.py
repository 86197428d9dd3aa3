"""The GridSearch frontier step of the ``fairgate-retrain`` flow (``fairgate mitigate --method retrain --frontier N``).

A recipe of tasks (tasks/mitigation/grid_frontier.py): the grid is fitted with the retrain's checks (bad input is
refused
before anything is written), then each grid model is audited cheaply on the held-out people (one joint cube with
the original, point estimates), and the frontier, its chart and the comparison of its Pareto models with the
original are written beside the retrain's outputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tasks.mitigation.grid_frontier import audit_grid, fit_grid, grid_predictions, write_grid_frontier


def fit_frontier_grid(plan: dict[str, Any], grid_size: int) -> Any:
    """Fairlearn's GridSearch on the training set under the plan's constraint (before any output is written)."""
    return fit_grid(plan["estimator"], plan["train"], plan["choice"], grid_size)


def write_frontier(plan: dict[str, Any], fitted: Any, grid: Any, files: dict[str, Any]) -> dict[str, Any]:
    """Audit every grid model against the unconstrained original and write the frontier and the comparison."""
    features = plan["eval"].features
    original = np.asarray(fitted.baseline.predict(features), dtype=np.int64)
    models = grid_predictions(grid, features)
    joints = audit_grid(plan, original, models)
    return write_grid_frontier(plan, files, grid, models, joints)
