"""``audit``: the whole engine in one call, for notebooks and the CLI alike."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fairgate.adjudicate import ModelInfo, adjudicate
from fairgate.config import Policy
from fairgate.cube import build_cube
from fairgate.result import AuditResult
from fairgate.slicing import compute_slicing, plan_slicings


def audit(
    data: Any,
    policy: Policy,
    *,
    model: ModelInfo | None = None,
    run_id: str | None = None,
    context: dict[str, Any] | None = None,
    source: str = "the audited data",
    exact_auc: bool | None = None,
) -> AuditResult:
    """Audit one model's predictions on a Polars/pandas frame or Arrow table against a policy.

    The frame holds the label, prediction and/or score columns named in ``policy.columns`` and one column
    per sensitive attribute. See the README for an example. ``exact_auc`` (default: the policy's
    ``statistics.exact_auc``) keeps a score table for exact per-group ROC AUC.
    """
    if exact_auc is None:
        exact_auc = policy.statistics.exact_auc
    cube = build_cube(data, policy, source=source, exact_auc=exact_auc)
    # Slicings are independent (each draws its own bootstrap replicates); their heavy steps (multinomial
    # draws, sorts) release the GIL, so two threads keep both cores busy. Results come back in plan order.
    with ThreadPoolExecutor(max_workers=2) as pool:
        parts = list(pool.map(lambda s: compute_slicing(cube, s, policy), plan_slicings(cube, policy)))
    return adjudicate(cube, parts, policy, model=model, run_id=run_id, context=context)
