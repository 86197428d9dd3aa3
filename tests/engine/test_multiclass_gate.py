"""The gate of a multiclass audit obeys the binary audit's rule: a model whose groups are identical fails at most
``statistics.alpha`` of the time over the whole audit (per-class worst cases and adverse-decision rules judged
together, Holm), and a real disparity is found. Seeded, bounded simulations through the pipeline's steps
(``count_multiclass`` -> ``slicings_multiclass`` -> ``adjudicate_multiclass``)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import fairgate
from fairgate.engine.multiclass.audit import adjudicate_multiclass, count_multiclass, slicings_multiclass

CLASSES = ["low", "medium", "high"]
SIZES = {"a": 700, "b": 500, "c": 300}


def _policy(dp: float, eo: float, di: float, n_bootstrap: int = 200) -> fairgate.Policy:
    return fairgate.Policy.from_yaml(f"""
fairness_checker:
  task: multiclass
  multiclass: {{classes: [low, medium, high], adverse_classes: [medium, high]}}
  sensitive_attributes: [{{name: group, values: [a, b, c]}}]
  metrics:
    - {{name: demographic_parity_difference, threshold: {dp}}}
    - {{name: equalized_odds_difference, threshold: {eo}}}
    - {{name: adverse.disparate_impact_ratio, threshold: {di}}}
  intersectional_analysis: {{min_group_size: 30}}
  statistics: {{n_bootstrap: {n_bootstrap}, seed: 1}}
""")


def _rows(rng: np.random.Generator, shift: float = 0.0) -> pl.DataFrame:
    """Three groups drawn from one model; ``shift`` moves that much of group c's 'low' predictions to 'high'."""
    frames = []
    for group, size in SIZES.items():
        truth = rng.choice(3, size=size, p=[0.5, 0.3, 0.2])
        correct = rng.random(size) < 0.6
        other = (truth + rng.integers(1, 3, size=size)) % 3
        predicted = np.where(correct, truth, other)
        if group == "c" and shift:
            predicted = np.where((predicted == 0) & (rng.random(size) < shift), 2, predicted)
        frames.append(
            pl.DataFrame(
                {
                    "group": [group] * size,
                    "y_true": [CLASSES[i] for i in truth],
                    "y_pred": [CLASSES[i] for i in predicted],
                }
            )
        )
    return pl.concat(frames)


def _verdict(rows: pl.DataFrame, policy: fairgate.Policy) -> str:
    cube = count_multiclass(rows, policy)
    return adjudicate_multiclass(cube, slicings_multiclass(cube, policy), policy).verdict


@pytest.mark.parametrize("seed", [11])
def test_identical_groups_fail_at_most_alpha_at_the_strictest_thresholds(seed: int) -> None:
    """Thresholds at parity (difference 0, ratio 1): the least favourable null, where the error rate is largest."""
    rng = np.random.default_rng(seed)
    policy = _policy(0.0, 0.0, 1.0)
    runs = 60
    fails = sum(_verdict(_rows(rng), policy) == "fail" for _ in range(runs))
    # alpha = 0.05: about 3 of 60 expected at most; 9 or more would happen with probability < 0.3% if it held.
    assert fails <= 8, fails


def test_identical_groups_pass_ordinary_thresholds() -> None:
    rng = np.random.default_rng(5)
    policy = _policy(0.1, 0.1, 0.8)
    verdicts = [_verdict(_rows(rng), policy) for _ in range(20)]
    assert verdicts.count("pass") >= 19, verdicts


def test_a_real_disparity_fails() -> None:
    """Group c gets 'high' instead of 'low' for 35% of its low predictions: about 0.13 more 'high' tiers.

    1,000 replicates: the bootstrap tail is a Monte Carlo p-value, (k + 1) / (B + 1), whose resolution at 200
    replicates is coarse next to Holm's alpha / 3 (at 200, one of these ten audits passes for want of resolution).
    """
    rng = np.random.default_rng(7)
    policy = _policy(0.05, 0.1, 0.9, n_bootstrap=1000)
    verdicts = [_verdict(_rows(rng, shift=0.35), policy) for _ in range(10)]
    assert verdicts.count("fail") >= 9, verdicts
