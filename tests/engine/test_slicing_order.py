"""The slicing threads' order (largest first; the readers of each parent drawn ahead together); the parts come back in
the plan's order, unchanged; a parent drawn ahead gives its readers the very draws."""

from __future__ import annotations

import numpy as np
import polars as pl

import fairgate
from fairgate.engine.audit import largest_first, slicings_binary, thread_order
from fairgate.engine.bootstrap import draw_ahead, shared_draws
from fairgate.engine.replicate_sources import replicate_parent, shared_parents
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


def test_the_threads_take_the_readers_of_each_drawn_ahead_parent_together() -> None:
    frame, policy = _frame(), _policy()
    cube = fairgate.build_cube(frame, policy, exact_auc=False)
    plan = plan_slicings(cube, policy)
    parents = shared_parents(cube, policy)
    assert parents == [("sex", "band", "region")]  # one triple: every other slicing sums its draws
    order = thread_order(cube, plan, policy)
    assert sorted(order) == sorted(plan)
    # the last parent drawn ahead (here the only one) is read first: its first reader draws it
    assert order[0] == parents[-1]
    assert [replicate_parent(cube, s, policy) for s in order] == [parents[-1]] * len(plan)


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
