"""The two slicing threads start with the largest slicings; the parts come back in the plan's order, unchanged."""

from __future__ import annotations

import numpy as np
import polars as pl

import fairgate
from fairgate.engine.audit import largest_first, slicings_binary
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
