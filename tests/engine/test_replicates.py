"""Per-slicing bootstrap replicates: reproducible wherever a slicing runs, and tied to the policy's seed.

Each slicing draws its own multinomial replicates (fairgate/bootstrap.py), so a slicing computed alone (as one
Prefect task) must give exactly the intervals it gets inside ``fairgate.engine.audit`` (threads, other slicings).
"""

from __future__ import annotations

import numpy as np
import polars as pl

import fairgate
from fairgate.engine.bootstrap import draw_counts, slicing_seed


def _frame(seed: int = 3, n: int = 3000) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(int)
    score = 1.0 / (1.0 + np.exp(-(1.0 * y + rng.normal(-0.4, 1.0, n))))
    return pl.DataFrame(
        {
            "sex": rng.choice(["f", "m"], n),
            "band": rng.choice(["young", "mid", "old"], n),
            "y_true": y,
            "score": score,
            "y_pred": (score >= 0.5).astype(int),
        }
    )


def _policy(seed: int) -> fairgate.Policy:
    return fairgate.Policy.model_validate(
        {
            "sensitive_attributes": [{"name": "sex"}, {"name": "band"}],
            "metrics": [
                {"name": "equalized_odds_difference", "threshold": 0.1},
                {"name": "calibration_difference", "threshold": 0.05},
            ],
            "intersectional_analysis": {"min_group_size": 1},
            "statistics": {"n_bootstrap": 200, "seed": seed},
        }
    )


def _intervals(part: fairgate.SlicingResult) -> list[tuple[str, float | None, float | None]]:
    return [(r["metric"], r["ci_low"], r["ci_high"]) for r in part.results] + [
        (s["metric"], s["difference_ci_low"], s["difference_ci_high"]) for s in part.summaries
    ]


def test_a_slicing_alone_gets_the_intervals_it_gets_inside_the_audit() -> None:
    frame, policy = _frame(), _policy(seed=7)
    document = fairgate.audit(frame, policy, exact_auc=False).to_dict()
    cube = fairgate.build_cube(frame, policy, exact_auc=False)
    for slicing in [("sex",), ("band",), ("sex", "band")]:
        alone = fairgate.compute_slicing(cube, slicing, policy)
        inside = {
            (r["metric"], r["ci_low"], r["ci_high"]) for r in document["results"] if tuple(r["slicing"]) == slicing
        }
        assert {entry for entry in _intervals(alone) if entry in inside} == inside
        assert inside  # something was compared


def test_the_seed_and_the_slicing_choose_the_replicates() -> None:
    frame = _frame()
    cube = fairgate.build_cube(frame, _policy(seed=7), exact_auc=False)
    first = _intervals(fairgate.compute_slicing(cube, ("band",), _policy(seed=7)))
    again = _intervals(fairgate.compute_slicing(cube, ("band",), _policy(seed=7)))
    other_seed = _intervals(fairgate.compute_slicing(cube, ("band",), _policy(seed=8)))
    assert first == again
    assert first != other_seed
    assert slicing_seed(7, ("sex",)).entropy != slicing_seed(7, ("band",)).entropy


def test_each_replicate_resamples_all_rows() -> None:
    rows = np.array([5.0, 0.5e3, 12.0, 3.0])
    counts = draw_counts(rows, 50, np.random.SeedSequence(1))
    assert counts.shape == (50, 4)
    assert (counts.sum(axis=1) == rows.sum()).all()
    assert counts.std(axis=0).min() > 0  # resampled, not copied
    assert draw_counts(rows, 0, np.random.SeedSequence(1)).shape == (0, 4)
