"""Benchmark: group thresholds (fairgate) against Fairlearn's ThresholdOptimizer on the same rows.

Generates --rows rows (one attribute with 4 groups, group-dependent base rates, a continuous score rounded to
--decimals decimals; 4 decimals is what most model files hold, 0 keeps every float distinct), then times:

1. fairgate: ``fit_thresholds`` (equal opportunity, tolerance --tolerance, accuracy): median of --repeats runs.
2. fairgate: the frontier (--steps tolerances, one prepared problem): median of --repeats runs.
3. Fairlearn: ``ThresholdOptimizer(constraints="true_positive_rate_parity", objective="accuracy_score",
   prefit=True, predict_method="predict", tol=--tolerance)`` on the same scores: once (it is slow at 1M rows).

Prints the achieved TPR gap and the accuracy of both (expected values of the randomised rules) and the ratio.

    .venv/bin/python bench/thresholds_vs_fairlearn.py --rows 1000000
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from fairgate.mitigation.frontier import frontier
from fairgate.mitigation.thresholds import fit_thresholds

GROUPS = ["g0", "g1", "g2", "g3"]


def generate(rows: int, decimals: int, seed: int = 11) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    codes = rng.choice(len(GROUPS), size=rows, p=[0.45, 0.3, 0.15, 0.1])
    y = (rng.random(rows) < 0.3 + 0.07 * codes).astype(np.int8)
    logit = 2.0 * (y - 0.5) - 0.25 * codes + rng.normal(0.0, 1.0, rows)
    score = 1.0 / (1.0 + np.exp(-logit))
    if decimals:
        score = np.round(score, decimals)
    return score, y, np.array(GROUPS)[codes], (score > 0.5).astype(np.int8)


def timed(action: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = action()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def fairlearn_fit(score: np.ndarray, y: np.ndarray, groups: np.ndarray, tolerance: float) -> tuple[float, float]:
    """Fit ThresholdOptimizer; return its expected TPR gap and accuracy (from its per-row probabilities)."""
    from fairlearn.postprocessing import ThresholdOptimizer
    from sklearn.base import BaseEstimator

    class ScoreColumn(BaseEstimator):  # type: ignore[misc]
        def fit(self, features: Any, labels: Any) -> ScoreColumn:
            self.fitted_ = True
            return self

        def predict(self, features: Any) -> np.ndarray:
            return np.asarray(features)[:, 0]

    optimizer = ThresholdOptimizer(
        estimator=ScoreColumn().fit(None, None),
        constraints="true_positive_rate_parity",
        objective="accuracy_score",
        prefit=True,
        predict_method="predict",
        tol=tolerance,
    )
    optimizer.fit(score[:, None], y, sensitive_features=groups)
    probability = optimizer._pmf_predict(score[:, None], sensitive_features=groups)[:, 1]
    tpr = [probability[(groups == g) & (y == 1)].mean() for g in GROUPS]
    return float(max(tpr) - min(tpr)), float(np.mean(np.where(y == 1, probability, 1 - probability)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--decimals", type=int, default=4)
    parser.add_argument("--tolerance", type=float, default=0.02)
    parser.add_argument("--steps", type=int, default=21)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-fairlearn", action="store_true")
    args = parser.parse_args()

    score, y, groups, y_pred = generate(args.rows, args.decimals)
    print(f"rows {args.rows:,}, unique scores {np.unique(score).size:,}, tolerance {args.tolerance}")

    fit_s, fit = timed(lambda: fit_thresholds(score, y, groups, y_pred=y_pred, tolerance=args.tolerance), args.repeats)
    print(
        f"fairgate fit_thresholds: median {fit_s:.2f} s; TPR gap {fit.before.tpr_gap:.4f} -> {fit.achieved_gap:.4f}, "
        f"accuracy {fit.before.accuracy:.4f} -> {fit.after.accuracy:.4f}"
    )
    curve_s, curve = timed(lambda: frontier(score, y, groups, y_pred=y_pred, steps=args.steps), args.repeats)
    print(f"fairgate frontier ({args.steps} tolerances): median {curve_s:.2f} s, {len(curve.pareto)} Pareto points")
    if args.skip_fairlearn:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fl_s, (fl_gap, fl_accuracy) = timed(lambda: fairlearn_fit(score, y, groups, args.tolerance), 1)
    print(f"Fairlearn ThresholdOptimizer: {fl_s:.2f} s (one run); TPR gap {fl_gap:.4f}, accuracy {fl_accuracy:.4f}")
    print(
        f"ratio Fairlearn / fairgate fit: {fl_s / fit_s:.1f}x; accuracy difference (fairgate - Fairlearn) "
        f"{100 * (fit.after.accuracy - fl_accuracy):+.3f} points"
    )


if __name__ == "__main__":
    main()
