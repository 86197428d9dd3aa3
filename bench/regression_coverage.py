"""Coverage of the regression audit's intervals when groups are equal (seeded simulation).

Groups of equal size with skewed residuals (exponential minus its mean) and no true gap: how often does the
simultaneous interval of each metric's range (max - min over groups) and of the worst group's loss hold the
truth, and how often does each signed comparison against the reference? Prints coverage with a Wilson 95%
Monte Carlo interval per setting.

    .venv/bin/python bench/regression_coverage.py --runs 600 --groups 4 --size 50
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import polars as pl

from fairgate.engine.regression.cube import build_regression_cube
from fairgate.engine.regression.slicing import regression_slicing
from fairgate.engine.stats import wilson_interval

LEVEL = 0.95
METRICS = ("mean_residual", "mean_absolute_error", "root_mean_squared_error")


def simulated(rng: np.random.Generator, groups: int, size: int) -> pl.DataFrame:
    """Equal groups: labels 1 + Exp(1), predictions the label plus a skewed error Exp(1) - 1 (mean 0)."""
    n = groups * size
    label = 1.0 + rng.exponential(1.0, n)
    return pl.DataFrame(
        {
            "g": np.repeat([f"g{g}" for g in range(groups)], size),
            "label": label,
            "prediction": label + rng.exponential(1.0, n) - 1.0,
        }
    )


def truth(name: str) -> float:
    """Every group's true value (the groups are identical): error e = Exp(1) - 1 has mean 0, E|e| = 2/e, E e^2 = 1."""
    return {"mean_residual": 0.0, "mean_absolute_error": 2.0 / float(np.exp(1.0)), "root_mean_squared_error": 1.0}[name]


def run(runs: int, groups: int, size: int, n_bootstrap: int, seed: int) -> dict[str, list[bool]]:
    rng = np.random.default_rng(seed)
    hits: dict[str, list[bool]] = {}
    for s in range(runs):
        cube = build_regression_cube(
            simulated(rng, groups, size), attributes=["g"], prediction="prediction", label="label"
        )
        result = regression_slicing(
            cube, ("g",), n_bootstrap=n_bootstrap, seed=s, confidence_level=LEVEL, min_group_size=30
        )
        for summary in result.summaries:
            metric = summary["metric"]
            base = metric.removesuffix("_difference").removeprefix("worst_group_")
            if base not in METRICS or metric.endswith("_ratio"):
                continue
            true = truth(base) if metric.startswith("worst_group_") else 0.0
            low, high = summary["ci_low"], summary["ci_high"]
            hits.setdefault(metric, []).append(low is not None and low <= true <= high)
        for comparison in result.comparisons:
            if comparison["metric"] in METRICS:
                low, high = comparison["difference_ci"]
                hits.setdefault(f"{comparison['metric']} vs reference", []).append(low <= 0.0 <= high)
    return hits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=600)
    parser.add_argument("--groups", type=int, default=4)
    parser.add_argument("--size", type=int, default=50)
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=20240601)
    args = parser.parse_args()
    started = time.perf_counter()
    hits = run(args.runs, args.groups, args.size, args.bootstrap, args.seed)
    print(f"{args.groups} groups x {args.size}, {args.runs} runs, {args.bootstrap} replicates, level {LEVEL}")
    for metric, values in hits.items():
        covered = int(np.sum(values))
        low, high = (float(b) for b in wilson_interval(np.array(covered), np.array(len(values)), 1.96))
        print(f"  {metric:<42} {covered / len(values):.3f} [{low:.3f}, {high:.3f}]  ({len(values)} intervals)")
    print(f"  {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
