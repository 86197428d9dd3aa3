"""``audit``: the whole engine in one call, for notebooks and the CLI alike."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fairgate.document.result import AuditResult
from fairgate.engine.adjudicate import ModelInfo, adjudicate
from fairgate.engine.collection import paused_collection
from fairgate.engine.cube import Cube, add_score_table, as_lazy, build_cube
from fairgate.engine.kinds import KindSteps, kind_of
from fairgate.engine.replicate_sources import draw_parents_ahead, replicate_parent, shared_parents
from fairgate.engine.slicing import Slicing, SlicingResult, compute_slicing, plan_slicings, wants_auc
from fairgate.policy.core import Policy


@paused_collection
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
    """Audit one model's predictions on a Polars/pandas frame or Arrow table against a policy, of any kind.

    The frame holds the columns ``policy.columns`` names for the policy's ``task:`` (binary: label,
    prediction and/or score; multiclass: classes; regression: numbers; ranking: list id, rank and relevance)
    and one column per sensitive attribute. See docs/guides/python.md for an example. ``exact_auc`` (binary; default:
    the policy's ``statistics.exact_auc``) keeps a score table for exact per-group ROC AUC.
    """
    steps = kind_of(policy.task).steps()
    if steps.audit is not None:  # the kind's own one-call path
        return steps.audit(
            data, policy, model=model, run_id=run_id, context=context, source=source, exact_auc=exact_auc
        )
    cube = steps.count(data, policy, source=source)
    return audit_counted(cube, policy, model=model, run_id=run_id, context=context)


@paused_collection
def audit_counted(
    cube: Any,
    policy: Policy,
    *,
    model: ModelInfo | None = None,
    run_id: str | None = None,
    context: dict[str, Any] | None = None,
) -> AuditResult:
    """Audit a cube already counted, of the policy's kind: every planned slicing, then adjudication.

    The second half of :func:`audit`, for a cube counted elsewhere (e.g. inside DuckDB by
    tasks/inputs/cube_sql.py, so that no row reaches Python). The same cube gives the same result.
    """
    steps = kind_of(policy.task).steps()
    parts = steps.slicings(cube, policy)
    result: AuditResult = steps.adjudicate(cube, parts, policy, model=model, run_id=run_id, context=context)
    return result


def audit_binary(
    data: Any,
    policy: Policy,
    *,
    model: ModelInfo | None = None,
    run_id: str | None = None,
    context: dict[str, Any] | None = None,
    source: str = "the audited data",
    exact_auc: bool | None = None,
) -> AuditResult:
    """A binary audit in one call: the exact-AUC pass over the scored rows runs beside the slicings."""
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

        futures = {s: pool.submit(run, s) for s in sorted(largest_first(plan), key=needs_scores)}
        parts = [futures[s].result() for s in plan]
    return adjudicate(cube, parts, policy, model=model, run_id=run_id, context=context)


def count_binary(rows: Any, policy: Policy, *, source: str = "the aligned rows") -> Cube:
    """The binary cube of the rows, with the score table when the policy asks for exact AUC."""
    return build_cube(rows, policy, source=source, exact_auc=policy.statistics.exact_auc)


def slicings_binary(cube: Cube, policy: Policy) -> list[SlicingResult]:
    """Every planned slicing of the binary cube, on two threads.

    Where slicings share drawn replicates, the first task draws the shared parents' replicates ahead of their
    readers, one after another (``fairgate.engine.replicate_sources.draw_parents_ahead``: drawing releases the
    GIL), while the other thread computes the slicings, whose statistics mostly hold it; the drawing thread
    then computes slicings too. The parts come back in the plan's order; the order they are computed in
    changes no result (every draw comes from its slicing's own stream).
    """
    plan = plan_slicings(cube, policy)
    with ThreadPoolExecutor(max_workers=2) as pool:
        if shared_parents(cube, policy):
            pool.submit(draw_parents_ahead, cube, policy)  # an error reaches the readers of that parent
        futures = {s: pool.submit(compute_slicing, cube, s, policy) for s in thread_order(cube, plan, policy)}
        return [futures[s].result() for s in plan]


def thread_order(cube: Cube, plan: list[Slicing], policy: Policy) -> list[Slicing]:
    """The slicings in the order the threads take them.

    First those that draw their own replicates, and the readers of the parent drawn ahead last (the first of
    them draws it, beside the drawing thread's first parent); then the readers of each other shared parent in the
    order the parents are drawn ahead; each part :func:`largest_first`.
    """
    parents = shared_parents(cube, policy)
    rank = {parent: i for i, parent in enumerate(parents[:-1])}

    def drawn_after(slicing: Slicing) -> int:
        parent = replicate_parent(cube, slicing, policy)
        return rank.get(parent, -1) if parent is not None else -1

    return sorted(largest_first(plan), key=drawn_after)


def largest_first(plan: list[Slicing]) -> list[Slicing]:
    """The slicings with the most attributes (the most groups and cells: the longest to compute) first.

    Two threads then finish together: started last, a triple would run alone at the end while the other
    thread has nothing left. The order changes no result (each slicing draws from its own stream).
    """
    return sorted(plan, key=len, reverse=True)


#: The kind registry's entry point (fairgate/engine/kinds.py).
STEPS = KindSteps(count=count_binary, slicings=slicings_binary, adjudicate=adjudicate, audit=audit_binary)
