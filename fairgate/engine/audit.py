"""``audit``: the whole engine in one call, for notebooks and the CLI alike."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fairgate.document.result import AuditResult
from fairgate.engine.adjudicate import ModelInfo, adjudicate
from fairgate.engine.collection import paused_collection
from fairgate.engine.cube import Cube, add_score_table, as_lazy, build_cube
from fairgate.engine.kinds import KindSteps, kind_of
from fairgate.engine.replicate_sources import draw_parent_ahead, replicate_parent, shared_parents
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
    parts = _slicings_beside_scores(cube, rows, policy, source) if exact_auc else slicings_binary(cube, policy)
    return adjudicate(cube, parts, policy, model=model, run_id=run_id, context=context)


def _slicings_beside_scores(cube: Cube, rows: Any, policy: Policy, source: str) -> list[SlicingResult]:
    """Every planned slicing, with the second pass for exact AUC (the scored rows, sorted) on a thread beside them.

    Slicings are independent (each draws its own bootstrap replicates) and their heavy steps release the GIL,
    so two threads keep both cores busy; the slicings that need the score table are queued after the others.
    """
    plan = plan_slicings(cube, policy)
    with ThreadPoolExecutor(max_workers=2) as pool:
        scored = pool.submit(add_score_table, cube, rows, policy, source=source)

        def needs_scores(slicing: Slicing) -> bool:
            return wants_auc(slicing, policy)

        def run(slicing: Slicing) -> SlicingResult:
            return compute_slicing(scored.result() if needs_scores(slicing) else cube, slicing, policy)

        futures = {s: pool.submit(run, s) for s in sorted(largest_first(plan), key=needs_scores)}
        return [futures[s].result() for s in plan]


def count_binary(rows: Any, policy: Policy, *, source: str = "the aligned rows") -> Cube:
    """The binary cube of the rows, with the score table when the policy asks for exact AUC."""
    return build_cube(rows, policy, source=source, exact_auc=policy.statistics.exact_auc)


def slicings_binary(cube: Cube, policy: Policy) -> list[SlicingResult]:
    """Every planned slicing of the binary cube, on two threads taking the work in order of readiness.

    Where slicings share drawn replicates, a thread draws the shared parents' replicates ahead of their readers,
    one parent after another (drawing releases the GIL), while the other computes the slicings whose parent is
    drawn (their statistics mostly hold it), the largest ready one first; both draw while nothing is ready
    (:class:`ReadyOrder`). The parts come back in the plan's order; the order they are computed in changes no
    result (every draw comes from its slicing's own stream).
    """
    plan = plan_slicings(cube, policy)
    order = ReadyOrder(cube, plan, policy)
    with ThreadPoolExecutor(max_workers=2) as pool:
        for worker in [pool.submit(order.work) for _ in range(2)]:
            worker.result()
    return order.parts()


class ReadyOrder:
    """The slicings' work shared by the threads: draw a parent's replicates ahead, or compute a ready slicing.

    A thread free for work draws the next shared parent when no other thread is drawing (in the order
    ``fairgate.engine.replicate_sources.shared_parents`` gives), so that one core keeps drawing while the other
    computes; otherwise it computes the largest slicing whose replicates are ready (its own to draw, or its
    parent drawn), so that a slicing starts as soon as its parent is drawn and both threads end on small
    slicings; with nothing ready it draws the next parent too, or waits for one.
    """

    def __init__(self, cube: Cube, plan: list[Slicing], policy: Policy) -> None:
        self.cube, self.policy = cube, policy
        self.to_draw = shared_parents(cube, policy)
        self.parent = {s: replicate_parent(cube, s, policy) for s in plan}
        self.waiting = largest_first(plan)
        self.drawn: set[Slicing] = set()
        self.drawing = 0
        self.done: dict[Slicing, SlicingResult] = {}
        self.failed: BaseException | None = None
        self.changed = threading.Condition()
        self.plan = plan

    def work(self) -> None:
        """Take work until none is left (or another thread failed)."""
        while (task := self._next()) is not None:
            draw, slicing = task
            try:
                if draw:
                    draw_parent_ahead(self.cube, slicing, self.policy)
                    self._finish(slicing, None)
                else:
                    self._finish(slicing, compute_slicing(self.cube, slicing, self.policy))
            except BaseException as error:
                with self.changed:
                    self.failed = self.failed or error
                    self.changed.notify_all()
                raise

    def _finish(self, slicing: Slicing, result: SlicingResult | None) -> None:
        """Record a task done (a parent drawn: no result; or a slicing's result) and wake a waiting thread."""
        with self.changed:
            if result is None:
                self.drawing -= 1
                self.drawn.add(slicing)
            else:
                self.done[slicing] = result
            self.changed.notify_all()

    def parts(self) -> list[SlicingResult]:
        """The slicings' results in the plan's order."""
        if self.failed is not None:
            raise self.failed
        return [self.done[s] for s in self.plan]

    def _next(self) -> tuple[bool, Slicing] | None:
        """(whether to draw, the slicing): the next task for a free thread; None when nothing is left."""
        with self.changed:
            while self.failed is None and (self.waiting or self.to_draw):
                if self.to_draw and not self.drawing:
                    return self._draw()
                ready = next((s for s in self.waiting if self.parent[s] in self.drawn or self.parent[s] is None), None)
                if ready is not None:
                    self.waiting.remove(ready)
                    return False, ready
                if self.to_draw:
                    return self._draw()
                self.changed.wait()
            return None

    def _draw(self) -> tuple[bool, Slicing]:
        self.drawing += 1
        return True, self.to_draw.pop(0)


def largest_first(plan: list[Slicing]) -> list[Slicing]:
    """The slicings with the most attributes (the most groups and cells: the longest to compute) first.

    Two threads then finish together: started last, a triple would run alone at the end while the other
    thread has nothing left. The order changes no result (each slicing draws from its own stream).
    """
    return sorted(plan, key=len, reverse=True)


#: The kind registry's entry point (fairgate/engine/kinds.py).
STEPS = KindSteps(count=count_binary, slicings=slicings_binary, adjudicate=adjudicate, audit=audit_binary)
