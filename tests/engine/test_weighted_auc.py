"""Exact AUC with row weights (probabilistic group membership) agrees with sklearn's weighted roc_auc_score.

Both of the engine's paths are exercised: continuous scores (every row its own run) and scores with ties
(equal scores collapsed into runs), on every group of one attribute and of a pair, including a declared
group with no rows.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from sklearn.metrics import roc_auc_score

import fairgate

TOL = 1e-9


def _frame(ties: bool, seed: int = 5, n: int = 4000) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    region = rng.choice(["north", "south", "east"], n)
    band = rng.choice(["young", "old"], n)
    y = (rng.random(n) < 0.4).astype(int)
    score = 1.0 / (1.0 + np.exp(-(1.2 * y + rng.normal(-0.5, 1.0, n))))  # continuous: no two rows tie
    if ties:
        score = np.round(score, 1)
    assert ties == (np.unique(score).size < n)
    return pl.DataFrame({"region": region, "band": band, "y_true": y, "score": score, "w": rng.uniform(0.05, 1.0, n)})


@pytest.mark.parametrize("ties", [False, True])
def test_weighted_auc_by_group_matches_sklearn(ties: bool) -> None:
    frame = _frame(ties)
    policy = fairgate.Policy.model_validate(
        {
            "sensitive_attributes": [
                {"name": "region", "values": ["north", "south", "east", "west"]},
                {"name": "band"},
            ],
            "metrics": [{"name": "auc_difference", "threshold": 0.1}],
            "columns": {"weight": "w"},
            "intersectional_analysis": {"min_group_size": 1},
            "statistics": {"n_bootstrap": 20, "exact_auc": True},
        }
    )
    document = fairgate.audit(frame, policy).to_dict()
    compared = 0
    for group in document["groups"]:
        rows = np.ones(frame.height, dtype=bool)
        for attribute, value in group["group"].items():
            rows &= (frame[attribute] == value).to_numpy()
        value = group["metrics"]["roc_auc"]["value"]
        if not rows.any():
            assert value is None  # "west" is declared but has no rows
            continue
        expected = roc_auc_score(
            frame["y_true"].to_numpy()[rows], frame["score"].to_numpy()[rows], sample_weight=frame["w"].to_numpy()[rows]
        )
        assert value == pytest.approx(expected, abs=TOL), group["group"]
        compared += 1
    assert compared == 1 + 3 + 2 + 6  # population, regions with rows, bands, region x band
