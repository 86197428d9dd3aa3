"""The slicing threads' order (one thread drawing the shared parents ahead, the other computing the largest ready
slicing); the parts come back in the plan's order, unchanged; a parent drawn ahead gives its readers the very draws."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import fairgate
from fairgate.engine import audit as audit_module
from fairgate.engine.audit import ReadyOrder, largest_first, slicings_binary
from fairgate.engine.bootstrap import draw_ahead, shared_draws
from fairgate.engine.replicate_sources import replicate_parent, shared_parents, slicing_cells
from fairgate.engine.slicing import compute_slicing, plan_slicings


def _frame(n: int = 4000) -> pl.DataFrame:
    rng = np.random.default_rng(5)
    y = (rng.random(n) < 0.4).astype(int)
    score = 1.0 / (1.0 + np.exp(-(1.2 * y + rng.normal(-0.5, 1.0, n))))
    return pl.DataFrame(
        {
            "sex": rng.choice(["f", "m"], n),
            "band": rng.choice(["young", "mid", "old"], n),
            "region": rng.choice(["n", "s", "e", "w"], n),
            "y_true": y,
            "score": score,
            "y_pred": (score >= 0.5).astype(int),
        }
    )


def _policy() -> fairgate.Policy:
    return fairgate.Policy.model_validate(
        {
            "sensitive_attributes": [{"name": "sex"}, {"name": "band"}, {"name": "region"}],
            "metrics": [
                {"name": "demographic_parity_difference", "threshold": 0.1},
                {"name": "calibration_difference", "threshold": 0.05},
            ],
            "intersectional_analysis": {"min_group_size": 30, "include_triples": True},
            "statistics": {"n_bootstrap": 100, "seed": 3},
        }
    )


def test_triples_start_first_then_pairs_then_single_attributes() -> None:
    plan = [(), ("a",), ("b",), ("a", "b"), ("a", "c"), ("a", "b", "c")]
    assert largest_first(plan) == [("a", "b", "c"), ("a", "b"), ("a", "c"), ("a",), ("b",), ()]


def test_threaded_slicings_come_back_in_plan_order_with_the_serial_values() -> None:
    frame, policy = _frame(), _policy()
    cube = fairgate.build_cube(frame, policy, exact_auc=False)
    plan = plan_slicings(cube, policy)
    assert any(len(s) == 3 for s in plan)  # the largest-first order differs from the plan's
    threaded = slicings_binary(cube, policy)
    assert [part.slicing for part in threaded] == plan
    for part, slicing in zip(threaded, plan, strict=True):
        serial = compute_slicing(cube, slicing, policy)
        assert _figures(part) == _figures(serial)


def _figures(part: fairgate.SlicingResult) -> list[tuple[object, ...]]:
    return [(r["metric"], r["value"], r["ci_low"], r["ci_high"]) for r in part.results] + [
        (s["metric"], s["difference"], s["difference_ci_low"], s["difference_ci_high"]) for s in part.summaries
    ]


def _wide_policy() -> fairgate.Policy:
    """Four attributes with triples: several shared parents to draw ahead."""
    return fairgate.Policy.model_validate(
        {
            "sensitive_attributes": [{"name": a} for a in ("sex", "band", "region", "tier")],
            "metrics": [{"name": "demographic_parity_difference", "threshold": 0.1}],
            "intersectional_analysis": {"min_group_size": 5, "include_triples": True},
            "statistics": {"n_bootstrap": 50, "seed": 3},
        }
    )


def _wide_cube() -> fairgate.Cube:
    frame = _frame().with_columns(tier=pl.Series(np.random.default_rng(6).choice(["x", "y"], 4000)))
    return fairgate.build_cube(frame, _wide_policy(), exact_auc=False)


def test_one_thread_draws_ahead_while_the_other_computes_the_largest_ready_slicing() -> None:
    cube, policy = _wide_cube(), _wide_policy()
    plan = plan_slicings(cube, policy)
    parents = shared_parents(cube, policy)
    assert len(parents) >= 3  # every triple is drawn ahead (the most read first)
    # second, beside the first while nothing is ready to compute: the longest draw (the most occupied cells)
    cells = {p: np.count_nonzero(slicing_cells(cube, p, policy)[1]) for p in parents}
    assert cells[parents[1]] == max(cells[p] for p in parents[1:])
    assert len(set(cells.values())) > 1  # the order is a choice here
    order = ReadyOrder(cube, plan, policy)
    # Nothing is ready at first: both threads draw (the parents in order).
    assert order._next() == (True, parents[0])
    assert order._next() == (True, parents[1])
    order._finish(parents[0], None)
    # One thread still draws: the free one computes the largest slicing whose parent is drawn.
    readers = [s for s in largest_first(plan) if replicate_parent(cube, s, policy) == parents[0]]
    assert order._next() == (False, readers[0])
    order._finish(parents[1], None)
    # Nobody draws now: the next free thread keeps the drawing going.
    assert order._next() == (True, parents[2])
    taken = order._next()
    assert taken is not None
    draws, slicing = taken
    assert not draws
    assert len(slicing) == 3  # the largest ready: a triple drawn, before any pair
    assert replicate_parent(cube, slicing, policy) in parents[:2]


def test_every_slicing_starts_after_its_parent_is_drawn_and_each_parent_is_drawn_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cube, policy = _wide_cube(), _wide_policy()
    plan = plan_slicings(cube, policy)
    events: list[tuple[str, tuple[str, ...]]] = []
    draw, compute = audit_module.draw_parent_ahead, audit_module.compute_slicing

    def drawing(cube_: fairgate.Cube, parent: tuple[str, ...], policy_: fairgate.Policy) -> None:
        draw(cube_, parent, policy_)
        events.append(("drawn", parent))

    def computing(cube_: fairgate.Cube, slicing: tuple[str, ...], policy_: fairgate.Policy) -> object:
        events.append(("start", slicing))
        return compute(cube_, slicing, policy_)

    monkeypatch.setattr(audit_module, "draw_parent_ahead", drawing)
    monkeypatch.setattr(audit_module, "compute_slicing", computing)
    parts = slicings_binary(cube, policy)
    assert [p.slicing for p in parts] == plan
    drawn = [s for kind, s in events if kind == "drawn"]
    assert sorted(drawn) == sorted(shared_parents(cube, policy))
    for slicing in plan:
        parent = replicate_parent(cube, slicing, policy)
        assert events.index(("drawn", parent)) < events.index(("start", slicing))


def test_a_parent_drawn_ahead_gives_its_readers_the_draws_they_would_draw() -> None:
    calls: list[int] = []
    owner = type("Owner", (), {})()

    def draw() -> np.ndarray:
        calls.append(1)
        return np.random.default_rng(len(calls)).random(3)

    draw_ahead(owner, "key", 2, draw)
    first = shared_draws(owner, "key", 2, draw)
    assert len(calls) == 1
    draw_ahead(owner, "key", 2, draw)  # being read: not drawn again
    second = shared_draws(owner, "key", 2, draw)
    assert len(calls) == 1
    assert first is second
    draw_ahead(owner, "key", 2, draw)  # read out: not drawn ahead for nobody
    assert len(calls) == 1
    again = shared_draws(owner, "key", 2, draw)  # a later read draws once more
    assert len(calls) == 2
    assert again is not first


def test_an_error_in_one_slicing_reaches_the_caller_and_stops_both_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    cube, policy = _wide_cube(), _wide_policy()
    parents = shared_parents(cube, policy)
    started: list[tuple[str, ...]] = []
    compute = audit_module.compute_slicing

    def failing(cube_: fairgate.Cube, slicing: tuple[str, ...], policy_: fairgate.Policy) -> object:
        started.append(slicing)
        if slicing == parents[0]:
            raise RuntimeError("no")
        return compute(cube_, slicing, policy_)

    monkeypatch.setattr(audit_module, "compute_slicing", failing)
    with pytest.raises(RuntimeError, match="no"):
        slicings_binary(cube, policy)
    assert len(started) < len(plan_slicings(cube, policy))  # the other thread took no more work after it


def test_an_audit_without_exact_auc_takes_the_slicings_in_order_of_readiness(monkeypatch: pytest.MonkeyPatch) -> None:
    frame, policy = _frame(), _policy()
    taken: list[int] = []
    threaded = audit_module.slicings_binary

    def counting(cube: fairgate.Cube, policy_: fairgate.Policy) -> list[fairgate.SlicingResult]:
        parts = threaded(cube, policy_)
        taken.append(len(parts))
        return parts

    monkeypatch.setattr(audit_module, "slicings_binary", counting)
    document = fairgate.audit(frame, policy, exact_auc=False).to_dict()
    assert taken == [len(document["slicings"])]
    fairgate.audit(frame, policy, exact_auc=True)  # the score table's pass: its own threads
    assert len(taken) == 1
