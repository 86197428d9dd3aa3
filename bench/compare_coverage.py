"""Coverage of ``fairgate compare``'s change intervals for max - min gaps and ratios, and its power to refuse a
real worsening.

The population: 3 groups (shares 0.5 / 0.3 / 0.2), base rate 0.4 in each; the baseline's TPR is 0.70 and FPR
0.20 in every group, so each of its gaps is 0 and its disparate impact 1 (the max - min estimate is inflated
most there). The candidate agrees with the baseline on most people (8% of each cell swapped each way, rates
kept) and lowers the smallest group's TPR and FPR by ``d``: its equal-opportunity, equalized-odds and
demographic-parity gaps rise by exactly ``d``; its disparate impact falls by ``d / 0.4``. Cells:

* EO, EOdds, DP at true change 0, +0.05, +0.10 (d = the change);
* DI at true change 0, -0.05, -0.10 (a worsening; d = 0.4 x the change).

Each run draws ``--people`` people (multinomial over the population's cells), compares with ``--bootstrap``
paired replicates, and records whether the shown interval (``reporting.confidence_level`` 0.95) covers the true
change, and whether the change is refused as worse (the deciding, simultaneous interval wholly beyond 0).
Prints per cell: coverage with its 95% Monte Carlo (Wilson) interval, the mean estimate, misses above/below,
and the power to refuse; then, for comparison, the same for the percentile interval of the paired replicates'
change (what compare used for every metric before; its deciding interval at the same Bonferroni level).

    .venv/bin/python bench/compare_coverage.py                   # 5,000 people, 200 runs per cell (~5 min)
    .venv/bin/python bench/compare_coverage.py --runs 500 --people 5000
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import polars as pl

import fairgate
from fairgate.engine.stats import percentile_interval, wilson_interval, z_value
from fairgate.mitigation.compare import JointCube, _measure, compare
from fairgate.mitigation.promotion import ModelAudit

POLICY = """\
fairness_checker:
  sensitive_attributes: [{name: g}]
  metrics:
    - {name: equal_opportunity_difference, threshold: 0.1}
    - {name: equalized_odds_difference, threshold: 0.1}
    - {name: demographic_parity_difference, threshold: 0.1}
    - {name: disparate_impact_ratio, threshold: 0.8}
  intersectional_analysis: {min_group_size: 30}
  statistics: {n_bootstrap: BOOTSTRAP, seed: SEED}
"""
SHARES = {"g0": 0.5, "g1": 0.3, "g2": 0.2}
BASE_RATE, TPR, FPR, SWAP = 0.4, 0.70, 0.20, 0.08
SELECTION = BASE_RATE * TPR + (1 - BASE_RATE) * FPR
PASSING = ModelAudit("pass", (), 4, "not audited: the simulation measures the change intervals alone")
METRICS = ("equal_opportunity_difference", "equalized_odds_difference", "demographic_parity_difference")
DI = "disparate_impact_ratio"


def population(lowered: float) -> tuple[pl.DataFrame, np.ndarray]:
    """The joint cells (g, label, baseline, candidate) and their probabilities; g2's rates lowered by ``lowered``."""
    rows, probabilities = [], []
    for group, share in SHARES.items():
        for label, rate_b, p_label in ((1, TPR, BASE_RATE), (0, FPR, 1 - BASE_RATE)):
            rate_c = rate_b - (lowered if group == "g2" else 0.0)
            up = SWAP / (1 - rate_b)  # P(candidate 1 | baseline 0)
            down = (rate_b - rate_c + SWAP) / rate_b  # P(candidate 0 | baseline 1): the candidate's rate is rate_c
            law = {(0, 0): (1 - rate_b) * (1 - up), (0, 1): (1 - rate_b) * up}
            law |= {(1, 0): rate_b * down, (1, 1): rate_b * (1 - down)}
            for (b, c), p in law.items():
                rows.append((group, label, b, c))
                probabilities.append(share * p_label * p)
    frame = pl.DataFrame(rows, schema=["g", "__y_true", "__pred_baseline", "__pred_candidate"], orient="row")
    return frame.with_columns(pl.exclude("g").cast(pl.Int8)), np.array(probabilities)


def truths(lowered: float) -> dict[str, float]:
    """The population's change of each metric."""
    return {**{m: lowered for m in METRICS}, DI: -lowered / SELECTION}


def run_cell(
    lowered: float, runs: int, people: int, bootstrap: int, seed: int
) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
    """Per metric: covered, misses above and below, refused as worse, and the mean estimate over ``runs``."""
    cells, probabilities = population(lowered)
    truth = truths(lowered)
    rng = np.random.default_rng(seed)
    tally = {m: {"covered": 0, "above": 0, "below": 0, "refused": 0, "estimate": 0.0} for m in truth}
    percentile = {m: {"covered": 0, "above": 0, "below": 0, "refused": 0, "estimate": 0.0} for m in truth}
    for run in range(runs):
        policy = fairgate.Policy.from_yaml(POLICY.replace("BOOTSTRAP", str(bootstrap)).replace("SEED", str(run)))
        counts = rng.multinomial(people, probabilities)
        sample = cells.with_columns(pl.Series("__rows", counts.astype(np.int64))).filter(pl.col("__rows") > 0)
        joint = JointCube(sample, ("g",), [(), ("g",)])
        result = compare(joint, policy, PASSING)
        level = result["statistics"]["decision_level"]
        for row in result["changes"]:
            worse = row["status"] == "worse"
            _tally(
                tally[row["metric"]], truth[row["metric"]], row["ci_low"], row["ci_high"], worse, row["change"], runs
            )
        for change in _measure(joint, policy)[0]:
            point = change.candidate - change.baseline
            (low, high), (d_low, d_high) = (percentile_interval(change.replicates[:, None], x) for x in (0.95, level))
            worse = d_high[0] < 0 if change.direction == "higher_is_better" else d_low[0] > 0
            _tally(percentile[change.metric], truth[change.metric], low[0], high[0], worse, point, runs)
    return tally, percentile


def _tally(cell: dict[str, float], t: float, low: float, high: float, worse: bool, estimate: float, runs: int) -> None:
    cell["covered"] += low <= t + 1e-12 and t - 1e-12 <= high
    cell["above"] += t > high + 1e-12
    cell["below"] += t < low - 1e-12
    cell["refused"] += worse
    cell["estimate"] += estimate / runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--people", type=int, default=5000)
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=20261206)
    args = parser.parse_args()
    z = z_value(0.95)
    print(f"{args.people} people, {args.runs} runs per cell, {args.bootstrap} paired replicates; 95% intervals")
    print(f"{'metric':32} {'truth':>7} {'coverage':>8} {'MC 95%':>15} {'mean est':>9} {'miss >/<':>9} {'refused':>8}")
    started = time.perf_counter()
    lines: dict[str, list[str]] = {"family (compare)": [], "percentile of the paired replicates": []}
    for index, change in enumerate((0.0, 0.05, 0.10)):
        by_gap = run_cell(change, args.runs, args.people, args.bootstrap, args.seed + index)
        by_ratio = run_cell(change * SELECTION, args.runs, args.people, args.bootstrap, args.seed + 10 + index)
        for method, which in zip(lines, (0, 1), strict=True):
            for metric in (*METRICS, DI):
                cell = (by_ratio if metric == DI else by_gap)[which][metric]
                truth = truths(change if metric != DI else change * SELECTION)[metric]
                low, high = wilson_interval(np.array([cell["covered"]]), np.array([args.runs]), z)
                lines[method].append(
                    f"{metric:32} {truth:+7.3f} {cell['covered'] / args.runs:8.3f} [{low[0]:.3f}, {high[0]:.3f}] "
                    f"{cell['estimate']:+9.4f} {cell['above']:>4}/{cell['below']:<4} {cell['refused'] / args.runs:8.3f}"
                )
    for method, rows in lines.items():
        print(f"-- {method}")
        print("\n".join(rows))
    print(f"elapsed {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
