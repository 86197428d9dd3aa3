"""``audit``: the whole engine in one call, for notebooks and the CLI alike."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fairgate.document.result import AuditResult
from fairgate.engine.adjudicate import ModelInfo, adjudicate
from fairgate.engine.cube import Cube, add_score_table, as_lazy, build_cube
from fairgate.engine.slicing import Slicing, SlicingResult, compute_slicing, plan_slicings, wants_auc
from fairgate.policy.core import Policy


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
    rows = as_lazy(data)  # once: converting an Arrow table or a pandas frame copies it
    cube = build_cube(rows, policy, source=source, exact_auc=False)
    plan = plan_slicings(cube, policy)
    # Slicings are independent (each draws its own bootstrap replicates) and their heavy steps release the
    # GIL, so two threads keep both cores busy. The second pass for exact AUC (the scored rows, sorted) runs
    # beside the slicings that do not need it; those that do are queued after them.
    with ThreadPoolExecutor(max_workers=2) as pool:
        scored = pool.submit(add_score_table, cube, rows, policy, source=source) if exact_auc else None

        def needs_scores(slicing: Slicing) -> bool:
            return scored is not None and wants_auc(slicing, policy)

        def run(slicing: Slicing) -> SlicingResult:
            source_cube: Cube = scored.result() if scored is not None and needs_scores(slicing) else cube
            return compute_slicing(source_cube, slicing, policy)

        futures = {s: pool.submit(run, s) for s in sorted(plan, key=needs_scores)}
        parts = [futures[s].result() for s in plan]
    return adjudicate(cube, parts, policy, model=model, run_id=run_id, context=context)
