"""Seeded, bounded simulations: the multiclass summaries' intervals cover the truth at about the stated rate.

Three groups of unequal sizes, three classes. With groups equal the truth of every summary is 0 (the folded
interval covers it when its lower end is 0); with groups that differ, the truth of the per-class demographic
parity difference follows from the generating probabilities. 90% intervals, so that misses are frequent enough
for a few hundred runs to see a wrong rate.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pytest

from fairgate.engine.multiclass import build_multiclass_cube, compute_multiclass_slicing
from fairgate.policy.task import MulticlassOptions

CLASSES = ["low", "medium", "high"]
SIZES = {"g0": 300, "g1": 500, "g2": 900}
LEVEL = 0.90
RUNS = 200


def _confusion_probabilities(base: list[float], accuracy: float) -> np.ndarray:
    """P(true t, predicted p) for one group: the true class from ``base``, right with ``accuracy``, else uniform."""
    k = len(base)
    wrong = (1.0 - accuracy) / (k - 1)
    given = np.full((k, k), wrong) + np.eye(k) * (accuracy - wrong)
    return np.asarray(base)[:, None] * given


def _sample(rng: np.random.Generator, cells: dict[str, np.ndarray]) -> pl.DataFrame:
    parts = []
    k = len(CLASSES)
    for group, probabilities in cells.items():
        flat = rng.choice(k * k, size=SIZES[group], p=probabilities.ravel())
        parts.append(
            pl.DataFrame(
                {
                    "g": [group] * SIZES[group],
                    "y_true": np.array(CLASSES)[flat // k],
                    "y_pred": np.array(CLASSES)[flat % k],
                }
            )
        )
    return pl.concat(parts)


def _coverage(h: Any, cells: dict[str, np.ndarray], seed: int) -> dict[str, float]:
    """Share of runs whose interval holds the truth, per summary (worst case and per class)."""
    policy = h.make_policy(["g"], n_bootstrap=200, reporting={"confidence_level": LEVEL})
    options = MulticlassOptions(classes=CLASSES)
    selection = {g: p.sum(axis=0) for g, p in cells.items()}  # true selection rate per class
    true_dpd = np.ptp(np.stack(list(selection.values())), axis=0)
    truth = {f"demographic_parity_difference[{c}]": float(true_dpd[i]) for i, c in enumerate(CLASSES)}
    truth["demographic_parity_difference"] = float(true_dpd.max())
    equal = all(np.allclose(p, next(iter(cells.values()))) for p in cells.values())
    if equal:
        truth["equalized_odds_difference"] = 0.0
    hits = dict.fromkeys(truth, 0)
    rng = np.random.default_rng(seed)
    for _ in range(RUNS):
        result = compute_multiclass_slicing(build_multiclass_cube(_sample(rng, cells), policy, options), ("g",), policy)
        for name, value in truth.items():
            metric, _, label = name.partition("[")
            summary = result.summary(metric)
            entry = summary.by_class[label.rstrip("]")] if label else summary.worst
            assert entry.ci_low is not None, (name, entry.reason)
            assert entry.ci_high is not None
            hits[name] += entry.ci_low - 1e-12 <= value <= entry.ci_high + 1e-12
    return {name: count / RUNS for name, count in hits.items()}


@pytest.mark.slow
def test_intervals_cover_zero_at_about_the_stated_rate_when_groups_are_equal(h: Any) -> None:
    same = _confusion_probabilities([0.5, 0.3, 0.2], 0.7)
    coverage = _coverage(h, dict.fromkeys(SIZES, same), seed=2026)
    print(coverage)
    for name, rate in coverage.items():
        # Binomial noise over 200 runs is about 2 points; the max-t critical value targets the level itself.
        assert 0.84 <= rate <= 0.97, (name, rate)


@pytest.mark.slow
def test_intervals_cover_a_real_gap_when_groups_differ(h: Any) -> None:
    cells = {
        "g0": _confusion_probabilities([0.5, 0.3, 0.2], 0.7),
        "g1": _confusion_probabilities([0.4, 0.35, 0.25], 0.65),
        "g2": _confusion_probabilities([0.6, 0.25, 0.15], 0.75),
    }
    coverage = _coverage(h, cells, seed=7)
    print(coverage)
    for name, rate in coverage.items():
        # The range's folded interval is conservative when the groups differ: at least the level, less noise.
        assert rate >= 0.85, (name, rate)
