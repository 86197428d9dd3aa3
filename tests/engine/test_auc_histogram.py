"""AUC from the score histogram (engine/auc_histogram.py) against sklearn on the rows: within its error bound,
the bound small, exact where it must be, and wired through the cube to the audit document."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pytest
from sklearn.metrics import roc_auc_score

import fairgate
from fairgate.engine.auc_histogram import histogram_auc
from fairgate.engine.cube import BIN_EDGE_TOLERANCE, add_score_histogram


def _binned(score: np.ndarray, y: np.ndarray, bins: int, weight: np.ndarray | None = None) -> tuple[Any, Any]:
    index = np.clip(np.floor(score * bins + BIN_EDGE_TOLERANCE), 0, bins - 1).astype(int)
    w = np.ones(score.size) if weight is None else weight
    positive = np.bincount(index, weights=w * (y == 1), minlength=bins)
    negative = np.bincount(index, weights=w * (y == 0), minlength=bins)
    return positive, negative


@pytest.mark.parametrize("seed", range(20))
def test_within_bound_of_sklearn_and_bound_small(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(200, 20_000))
    y = (rng.random(n) < rng.uniform(0.1, 0.9)).astype(int)
    score = 1 / (1 + np.exp(-(rng.normal(0, 1, n) + rng.uniform(0, 2) * (y - 0.5))))
    weight = rng.gamma(2.0, 0.5, n) if seed % 2 else None
    exact = roc_auc_score(y, score, sample_weight=weight)
    for bins, largest in ((16, 0.2), (1024, 0.01), (65536, 5e-4)):
        auc, bound = histogram_auc(*_binned(score, y, bins, weight))
        assert abs(exact - auc) <= bound + 1e-12
        assert bound <= largest
    # Coarse bins: the bound is not vacuous, yet holds.
    auc, bound = histogram_auc(*_binned(score, y, 4, weight))
    assert abs(exact - auc) <= bound + 1e-12


def test_bound_is_attained_when_a_bin_hides_a_perfect_order() -> None:
    # All scores in one bin; positives above negatives: exact AUC 1, histogram 1/2, bound 1/2 (tight).
    score = np.array([0.5001, 0.5002, 0.5003, 0.5004])
    y = np.array([0, 0, 1, 1])
    auc, bound = histogram_auc(*_binned(score, y, 4))
    assert (auc, bound) == (0.5, 0.5)
    assert roc_auc_score(y, score) - auc == pytest.approx(bound)


def test_exact_when_every_bin_holds_one_distinct_score() -> None:
    rng = np.random.default_rng(1)
    score = np.round(rng.random(5000), 2)  # 101 distinct scores, each alone in its bin of 1024
    y = (rng.random(5000) < score).astype(int)
    auc, bound = histogram_auc(*_binned(score, y, 1024))
    assert bound > 0  # the bound cannot know the scores in a bin are equal...
    assert auc == pytest.approx(roc_auc_score(y, score), abs=1e-12)  # ...but the value is exact


def test_a_histogram_cube_gives_auc_with_its_bound_in_the_document(compas: pl.DataFrame, h: Any) -> None:
    frame = h.generate(4, n=20_000)
    policy = h.make_policy(["a", "b"], metrics=[{"name": "roc_auc_difference", "threshold": 0.1}], n_bootstrap=20)
    exact = fairgate.audit(frame, policy).to_dict()
    cube = add_score_histogram(fairgate.build_cube(frame, policy, exact_auc=False), frame, policy, 65536)
    assert cube.scores is None
    assert cube.auc_method == "histogram"
    parts = [fairgate.compute_slicing(cube, s, policy) for s in fairgate.plan_slicings(cube, policy)]
    document = fairgate.adjudicate(cube, parts, policy).to_dict()
    exact_groups = h.groups_by_key(exact)
    checked = 0
    for key, entry in h.groups_by_key(document).items():
        estimate = entry["metrics"].get("roc_auc")
        if estimate is None or estimate["value"] is None:
            continue
        truth = exact_groups[key]["metrics"]["roc_auc"]["value"]
        assert abs(truth - estimate["value"]) <= estimate["error_bound"] + 1e-12
        assert 0 <= estimate["error_bound"] < 1e-3
        exact_interval = exact_groups[key]["metrics"]["roc_auc"]
        # The interval is the exact method's around the histogram value, widened by the bound on each side
        # (up to the standard error's change with the value, far below the interval's width).
        assert estimate["ci_low"] <= exact_interval["ci_low"] + 1e-5
        assert estimate["ci_high"] >= exact_interval["ci_high"] - 1e-5
        assert estimate["ci_high"] - estimate["ci_low"] > 2 * estimate["error_bound"]
        checked += 1
    assert checked >= 10
    assert "error_bound" not in exact["groups"][0]["metrics"]["roc_auc"]


@pytest.mark.parametrize("seed", range(6))
def test_histograms_add_as_a_group_by_of_their_cells(seed: int) -> None:
    """Cube addition sums score histograms by packed integer keys (engine/cube.py): the same cells and weights
    as Polars' group_by over the text keys, for weighted cells, repeated cells, a key absent from one side, and
    an empty side; null keys take the group_by itself."""
    from fairgate.engine.cube import _histogram_sum

    rng = np.random.default_rng(seed)
    races = pl.Series(["White", "Black", "Hispanic", "Asian"])

    def histogram(n: int, kinds: int) -> pl.DataFrame:
        return pl.DataFrame(
            {
                "race": races.head(kinds).gather(rng.integers(0, kinds, n)),
                "sex": pl.Series(["Male", "Female"]).gather(rng.integers(0, 2, n)),
                "__y_true": rng.integers(0, 2, n).astype(np.int8),
                "__score_hbin": rng.integers(3, 4096, n).astype(np.int32),
                "__weight": rng.gamma(2.0, 0.5, n),
            }
        )

    keys = ["race", "sex", "__y_true", "__score_hbin"]
    left, right = histogram(int(rng.integers(1, 30_000)), 4), histogram(int(rng.integers(0, 30_000)), 2)
    both = pl.concat([left, right])
    expected = both.group_by(keys).agg(pl.col("__weight").sum()).sort(keys)
    summed = _histogram_sum(both, keys).sort(keys)
    assert summed.schema == expected.schema
    assert summed.select(keys).equals(expected.select(keys))
    np.testing.assert_allclose(summed["__weight"].to_numpy(), expected["__weight"].to_numpy(), rtol=1e-12)
    asian = pl.col("race") == "Asian"
    with_nulls = both.with_columns(pl.when(asian).then(None).otherwise(pl.col("race")).alias("race"))
    expected = with_nulls.group_by(keys).agg(pl.col("__weight").sum()).sort(keys, nulls_last=True)
    summed = _histogram_sum(with_nulls, keys).sort(keys, nulls_last=True)
    assert summed.select(keys).equals(expected.select(keys))
    np.testing.assert_allclose(summed["__weight"].to_numpy(), expected["__weight"].to_numpy(), rtol=1e-12)
