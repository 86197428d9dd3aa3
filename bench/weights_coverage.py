"""Coverage of fairgate's weighted (probabilistic-membership) statistics and of the attenuation correction.

Simulated BISG-like audits: each person's posterior over three groups is a permutation of 0.6/0.3/0.1 and is
calibrated (the true group is drawn from it); selection rates by true group are 0.30, 0.30 and 0.45 (true
demographic parity difference 0.15, disparate impact ratio 0.667). Seeded; prints one line per figure.

1. The engine on the expanded rows (weight = posterior), at weights x1, x10 and x0.01: coverage of each
   group's weighted selection rate by its Wilson interval on Kish sizes, and, for comparison, by a Wilson
   interval on the sum of weights (the old rule); the ratio of the bootstrap standard deviation to the
   spread over simulated audits.
2. The attenuation: the naive weighted demographic parity difference and disparate impact ratio, their
   corrected estimates, and the coverage of the true values by the corrected intervals.

    .venv/bin/python bench/weights_coverage.py --runs 400
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import polars as pl

import fairgate
from fairgate.engine.bootstrap import slicing_seed
from fairgate.engine.cube import PERSON_WEIGHT, build_cube
from fairgate.engine.metrics import SelectionRate
from fairgate.engine.slicing import bootstrap_group_counts, slicing_groups
from fairgate.engine.stats import newcombe_interval, wilson_interval, z_value
from fairgate.proxy.attenuation import attenuation_report

PERMUTATIONS = np.array(
    [[0.6, 0.3, 0.1], [0.6, 0.1, 0.3], [0.3, 0.6, 0.1], [0.1, 0.6, 0.3], [0.3, 0.1, 0.6], [0.1, 0.3, 0.6]]
)
RATES = np.array([0.30, 0.30, 0.45])
GROUPS = ["a", "b", "c"]


def simulate(n: int, rng: np.random.Generator, rates: np.ndarray = RATES) -> tuple[np.ndarray, np.ndarray]:
    posterior = PERMUTATIONS[rng.integers(0, len(PERMUTATIONS), n)]
    truth = (rng.random(n)[:, None] > posterior.cumsum(axis=1)).sum(axis=1)
    return posterior, (rng.random(n) < rates[truth]).astype(np.int8)


def expanded(posterior: np.ndarray, y_pred: np.ndarray, scale: float) -> pl.DataFrame:
    n = y_pred.size
    return pl.DataFrame(
        {
            "grp": GROUPS * n,
            "y_true": np.repeat(np.zeros(n, dtype=np.int8), 3),
            "y_pred": np.repeat(y_pred, 3),
            "w": posterior.reshape(-1) * scale,
            PERSON_WEIGHT: np.full(3 * n, scale),  # each person's total weight, as the proxy stage writes it
        }
    )


def engine_coverage(runs: int, people: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    big_posterior, big_pred = simulate(2_000_000, rng)
    truth = (big_posterior * big_pred[:, None]).sum(axis=0) / big_posterior.sum(axis=0)
    overall = float(big_pred.mean())
    policy = fairgate.Policy.from_mapping(
        {
            "fairness_checker": {
                "sensitive_attributes": [{"name": "grp"}],
                "metrics": [{"name": "demographic_parity_difference", "threshold": 0.1}],
                "columns": {"weight": "w"},
                "statistics": {"n_bootstrap": 400},
                "proxy": {"method": "custom", "custom": {"name_table": "unused.csv"}, "attribute": "grp"},
            }
        },
        source="bench",
    )
    z = z_value(0.95)
    for scale in (1.0, 10.0, 0.01):
        kish, old, estimates, spreads, newcombe, population = np.zeros(3), np.zeros(3), [], [], 0, 0
        run_rng = np.random.default_rng(seed + 1)  # the same people at every scale
        for _ in range(runs):
            posterior, y_pred = simulate(people, run_rng)
            cube = build_cube(expanded(posterior, y_pred, scale), policy, exact_auc=False)
            _, index = slicing_groups(cube, ("grp",))
            point, boot = bootstrap_group_counts(cube, index, 3, 400, slicing_seed(0, ("grp",)), ("grp",))
            low, high = wilson_interval(*SelectionRate().fraction(point), z)
            kish += (low <= truth) & (truth <= high)
            everyone, _ = bootstrap_group_counts(
                cube, np.zeros(cube.cells.height, dtype=np.int64), 1, 0, slicing_seed(0, ()), ()
            )
            p_low, p_high = wilson_interval(*SelectionRate().fraction(everyone), z)
            population += bool(p_low[0] <= overall <= p_high[0])
            x, m = SelectionRate().fraction(point)
            d_low, d_high = newcombe_interval(x[2], m[2], x[0], m[0], z)
            newcombe += bool(d_low <= truth[2] - truth[0] <= d_high)
            old_low, old_high = wilson_interval(point.tp + point.fp, point.n, z)
            old += (old_low <= truth) & (truth <= old_high)
            estimates.append(SelectionRate().compute(point))
            spreads.append(SelectionRate().compute(boot).std(axis=0))
        ratio = np.mean(spreads, axis=0) / np.std(estimates, axis=0, ddof=1)
        print(
            f"weights x{scale:g}, {people} people, {runs} runs: Wilson coverage on Kish sizes "
            f"{np.round(kish / runs, 3).tolist()}, on sums of weights (old) {np.round(old / runs, 3).tolist()}; "
            f"bootstrap sd / spread over audits {np.round(ratio, 3).tolist()}; Newcombe c - a on Kish sizes "
            f"{newcombe / runs:.3f} (conservative: a person in both groups makes their rates covary); "
            f"population rate (people counted once) {population / runs:.3f}"
        )


def attenuation_coverage(runs: int, people: int, seed: int, rates: np.ndarray = RATES) -> None:
    rng = np.random.default_rng(seed)
    naive: dict[str, list[float]] = {"dpd": [], "dir": []}
    corrected: dict[str, list[float]] = {"dpd": [], "dir": []}
    hits = {"dpd": 0, "dir": 0}
    truths = {"dpd": float(rates.max() - rates.min()), "dir": float(rates.min() / rates.max())}
    started = time.perf_counter()
    for run in range(runs):
        posterior, y_pred = simulate(people, rng, rates)
        report = attenuation_report(
            posterior,
            GROUPS,
            y_pred=y_pred,
            metrics=["demographic_parity_difference", "disparate_impact_ratio"],
            seed=run,
        )
        for key, entry in zip(("dpd", "dir"), report["metrics"], strict=True):
            naive[key].append(entry["naive_value"])
            corrected[key].append(entry["corrected"]["value"])
            hits[key] += entry["corrected"]["ci_low"] <= truths[key] <= entry["corrected"]["ci_high"]
    for key, name in (("dpd", "demographic parity difference"), ("dir", "disparate impact ratio")):
        print(
            f"{name} (true {truths[key]:.3f}), {people} people, {runs} runs: naive mean {np.mean(naive[key]):.4f}, "
            f"corrected mean {np.mean(corrected[key]):.4f}, corrected 95% interval covers the truth "
            f"{hits[key] / runs:.3f}"
        )
    print(f"attenuation: {time.perf_counter() - started:.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=400)
    parser.add_argument("--people", type=int, default=20_000, help="people per attenuation audit")
    parser.add_argument("--engine-people", type=int, default=1_000, help="people per engine audit")
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    attenuation_coverage(args.runs, args.people, args.seed)
    attenuation_coverage(args.runs, args.people, args.seed, np.array([0.30, 0.30, 0.30]))  # no gap
    engine_coverage(args.runs, args.engine_people, args.seed)


if __name__ == "__main__":
    main()
