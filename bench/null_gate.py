"""The gate's false-fail rate for every kind of audit when every group is identical, at parity thresholds.

Not a timed test: for binary, multiclass, regression and ranking audits of models whose groups are drawn from one
and the same distribution, judged at the strictest thresholds (every difference 0, every ratio 1: the least
favourable null), it prints how often the audit FAILS (target: at most 5%, upper 95% Monte Carlo bound at most
6.5%), with its Wilson 95% interval, at 3,000 and 30,000 rows, and for 8 small groups of 60 people (binary). An
audit in which nothing could be judged is counted apart (``insufficient``): it is not evidence of a disparity.

Settings (all seeded: run ``i`` of a setting draws its data with seed ``i`` and bootstraps with seed ``i``):

- binary: attributes a (3 values), b (2), c (4) with skewed sizes and pairwise intersections; labels
  Bernoulli(0.4); TPR 0.7 and FPR 0.2 everywhere; demographic parity, disparate impact, equal opportunity,
  equalized odds and predictive parity; ``min_group_size: 30``.
- multiclass: attributes a (3) and b (2) with intersections; three classes, 60% correct; demographic parity,
  equalized odds, adverse-decision disparate impact and false positive rate difference.
- regression: attributes a (3) and b (2) with intersections; y ~ N(0, 1), residuals N(0, 0.8^2); mean residual,
  mean prediction and RMSE differences, KS distance, Wasserstein distance to the reference.
- ranking: lists of 20 items (rows / 20 lists), a (3) and b (2) drawn per item independently of the score;
  top-10 rate, exposure and exposure-per-relevance ratios.
- small: binary, one attribute with 8 groups of 60 people, the binary metrics above.

Every audit runs the engine directly (``fairgate.audit(frame, policy)``).

    .venv/bin/python bench/null_gate.py                          # 200 runs per setting, 200 bootstrap replicates
    .venv/bin/python bench/null_gate.py --runs 50 --kinds binary small
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl

import fairgate

SIZES = (3_000, 30_000)
LEVELS = {"a": (["a0", "a1", "a2"], [0.6, 0.3, 0.1]), "b": (["b0", "b1"], [0.7, 0.3])}
BINARY_LEVELS = {**LEVELS, "c": (["c0", "c1", "c2", "c3"], [0.4, 0.3, 0.2, 0.1])}
CLASSES = ["low", "medium", "high"]


def _attributes(rng: np.random.Generator, rows: int, levels: dict[str, Any]) -> dict[str, np.ndarray]:
    return {name: rng.choice(values, size=rows, p=weights) for name, (values, weights) in levels.items()}


def _policy(task: str, attributes: list[str], metrics: list[tuple[str, float]], seed: int, **extra: Any) -> Any:
    document: dict[str, Any] = {
        "task": task,
        "sensitive_attributes": [{"name": a} for a in attributes],
        "metrics": [{"name": name, "threshold": threshold} for name, threshold in metrics],
        "intersectional_analysis": {"enabled": len(attributes) > 1, "min_group_size": 30},
        "statistics": {"n_bootstrap": BOOTSTRAP, "seed": seed},
        **extra,
    }
    return fairgate.Policy.from_mapping({"fairness_checker": document}, source="null_gate")


BINARY_METRICS = [
    ("demographic_parity_difference", 0.0),
    ("disparate_impact_ratio", 1.0),
    ("equal_opportunity_difference", 0.0),
    ("equalized_odds_difference", 0.0),
    ("predictive_parity_difference", 0.0),
]


def _binary_frame(rng: np.random.Generator, columns: dict[str, np.ndarray]) -> pl.DataFrame:
    rows = len(next(iter(columns.values())))
    y = (rng.random(rows) < 0.4).astype(np.int64)
    pred = (rng.random(rows) < np.where(y == 1, 0.7, 0.2)).astype(np.int64)
    return pl.DataFrame({**columns, "y_true": y, "y_pred": pred})


def binary(rows: int, seed: int) -> tuple[pl.DataFrame, Any]:
    rng = np.random.default_rng(seed)
    frame = _binary_frame(rng, _attributes(rng, rows, BINARY_LEVELS))
    return frame, _policy("binary", list(BINARY_LEVELS), BINARY_METRICS, seed)


def small(rows: int, seed: int) -> tuple[pl.DataFrame, Any]:
    rng = np.random.default_rng(seed)
    groups = np.repeat([f"g{i}" for i in range(8)], 60)
    return _binary_frame(rng, {"g": groups}), _policy("binary", ["g"], BINARY_METRICS, seed)


def multiclass(rows: int, seed: int) -> tuple[pl.DataFrame, Any]:
    rng = np.random.default_rng(seed)
    truth = rng.choice(3, size=rows, p=[0.5, 0.3, 0.2])
    other = (truth + rng.integers(1, 3, size=rows)) % 3
    predicted = np.where(rng.random(rows) < 0.6, truth, other)
    frame = pl.DataFrame(
        {
            **_attributes(rng, rows, LEVELS),
            "y_true": np.array(CLASSES)[truth],
            "y_pred": np.array(CLASSES)[predicted],
        }
    )
    metrics = [
        ("demographic_parity_difference", 0.0),
        ("equalized_odds_difference", 0.0),
        ("adverse.disparate_impact_ratio", 1.0),
        ("adverse.false_positive_rate_difference", 0.0),
    ]
    options = {"multiclass": {"classes": CLASSES, "adverse_classes": ["medium", "high"]}}
    return frame, _policy("multiclass", list(LEVELS), metrics, seed, **options)


def regression(rows: int, seed: int) -> tuple[pl.DataFrame, Any]:
    rng = np.random.default_rng(seed)
    y = rng.normal(size=rows)
    frame = pl.DataFrame(
        {**_attributes(rng, rows, LEVELS), "y_true": y, "y_pred": y + rng.normal(scale=0.8, size=rows)}
    )
    metrics = [
        ("mean_residual_difference", 0.0),
        ("mean_prediction_difference", 0.0),
        ("root_mean_squared_error_difference", 0.0),
        ("ks_distance", 0.0),
        ("wasserstein_distance_vs_reference", 0.0),
    ]
    return frame, _policy("regression", list(LEVELS), metrics, seed)


def ranking(rows: int, seed: int) -> tuple[pl.DataFrame, Any]:
    rng = np.random.default_rng(seed)
    size = 20
    lists = rows // size
    relevance = rng.integers(0, 4, size=lists * size).astype(float)
    score = relevance + rng.normal(scale=1.5, size=lists * size)
    list_id = np.repeat(np.arange(lists), size)
    order = np.lexsort((-score, list_id))
    rank = np.empty(lists * size, dtype=np.int64)
    rank[order] = np.tile(np.arange(1, size + 1), lists)
    frame = pl.DataFrame(
        {
            **_attributes(rng, lists * size, LEVELS),
            "list_id": list_id.astype(str),
            "rank": rank,
            "y_true": relevance,
        }
    )
    metrics = [("top_k_rate_ratio", 1.0), ("exposure_ratio", 1.0), ("exposure_relevance_ratio", 1.0)]
    options = {
        "ranking": {"top_k": [10], "discount": "log2"},
        "columns": {"list_id": "list_id", "rank": "rank"},
    }
    return frame, _policy("ranking", list(LEVELS), metrics, seed, **options)


SETTINGS: dict[str, Callable[[int, int], tuple[pl.DataFrame, Any]]] = {
    "binary": binary,
    "multiclass": multiclass,
    "regression": regression,
    "ranking": ranking,
    "small": small,
}
BOOTSTRAP = 200


def wilson(k: int, n: int) -> tuple[float, float]:
    """Wilson 95% interval of k / n."""
    if n == 0:
        return math.nan, math.nan
    z, p = 1.959964, k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def outcome(document: Any) -> str:
    """``fail`` (evidence of a disparity), ``insufficient`` (nothing judged) or ``pass``."""
    verdict = document.verdict
    if verdict == "fail" and document.to_dict()["verdict_detail"].get("nothing_judged"):
        return "insufficient"
    return str(verdict)


def run_setting(kind: str, rows: int, runs: int, first_seed: int = 0) -> dict[str, Any]:
    counts = {"fail": 0, "insufficient": 0, "pass": 0}
    started = time.perf_counter()
    for seed in range(first_seed, first_seed + runs):
        frame, policy = SETTINGS[kind](rows, seed)
        counts[outcome(fairgate.audit(frame, policy))] += 1
    low, high = wilson(counts["fail"], runs)
    return {
        "kind": kind,
        "rows": rows,
        "runs": runs,
        **counts,
        "low": low,
        "high": high,
        "seconds": time.perf_counter() - started,
    }


def main() -> None:
    global BOOTSTRAP
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--n-bootstrap", type=int, default=BOOTSTRAP)
    parser.add_argument("--kinds", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument("--rows", nargs="+", type=int, default=list(SIZES))
    parser.add_argument("--first-seed", type=int, default=0, help="seeds first-seed .. first-seed + runs - 1")
    args = parser.parse_args()
    BOOTSTRAP = args.n_bootstrap
    print(f"identical groups, parity thresholds, alpha 0.05, {args.runs} runs per setting, {BOOTSTRAP} bootstrap")
    print(f"{'kind':<11} {'rows':>7} {'fail':>6} {'rate':>7} {'95% MC interval':>17} {'insufficient':>13} {'s':>7}")
    for kind in args.kinds:
        for rows in [480] if kind == "small" else args.rows:
            r = run_setting(kind, rows, args.runs, args.first_seed)
            target = "ok" if r["fail"] / r["runs"] <= 0.05 and r["high"] <= 0.065 else "MISSES TARGET"
            print(
                f"{kind:<11} {rows:>7} {r['fail']:>6} {r['fail'] / r['runs']:>7.3f} "
                f"[{r['low']:.3f}, {r['high']:.3f}]{r['insufficient']:>13} {r['seconds']:>7.1f}  {target}",
                flush=True,
            )


if __name__ == "__main__":
    main()
