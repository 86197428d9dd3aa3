"""The cost of ``fairgate compare``'s engine: pairing two models' rows into the joint cube and the comparison
(the paired bootstrap of every judged change, and the candidate's own audit of its decisions, which decides
whether it may be promoted), against one audit of one model (``fairgate.audit``) on the same rows.

Not a timed test: it prints the median of ``--repeats`` runs of each step and the ratio to the audit.
Generated data, seeded: two attributes (3 and 4 values), a label, and two models' decisions that agree on
about 85% of people; the policy judges four metrics on every attribute and the pair, 1,000 replicates.

    .venv/bin/python bench/compare.py                       # 1,000,000 rows, 3 repeats
    .venv/bin/python bench/compare.py --rows 100000 --repeats 5
    .venv/bin/python bench/compare.py --rows 100000 --candidates 5   # also: 5 candidates at once (Bonferroni)
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl

import fairgate
from fairgate.mitigation.compare import compare, compare_candidates, joint_cube

POLICY = """\
fairness_checker:
  sensitive_attributes: [{name: a}, {name: b}]
  metrics:
    - {name: demographic_parity_difference, threshold: 0.1}
    - {name: disparate_impact_ratio, threshold: 0.8}
    - {name: equal_opportunity_difference, threshold: 0.1}
    - {name: equalized_odds_difference, threshold: 0.1}
  statistics: {n_bootstrap: 1000, seed: 0, exact_auc: false}
"""


def models(rows: int, seed: int = 0) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Two models' aligned rows on the same people."""
    rng = np.random.default_rng(seed)
    a = rng.choice(["a0", "a1", "a2"], size=rows, p=[0.5, 0.3, 0.2])
    b = rng.choice(["b0", "b1", "b2", "b3"], size=rows, p=[0.4, 0.3, 0.2, 0.1])
    y = (rng.random(rows) < 0.4 + 0.1 * (a == "a0")).astype(np.int8)
    baseline = (rng.random(rows) < np.where(y == 1, 0.75, 0.25)).astype(np.int8)
    flip = rng.random(rows) < 0.15
    candidate = np.where(flip, 1 - baseline, baseline).astype(np.int8)
    shared = {"id": np.arange(rows), "y_true": y, "a": a, "b": b}
    return pl.DataFrame({**shared, "y_pred": baseline}), pl.DataFrame({**shared, "y_pred": candidate})


def flipped(baseline: pl.DataFrame, seed: int, share: float = 0.15) -> pl.DataFrame:
    """Another candidate on the same people: the baseline's decision flipped for about ``share`` of them."""
    flip = np.random.default_rng(100 + seed).random(baseline.height) < share
    return baseline.with_columns(pl.Series("y_pred", np.where(flip, 1 - baseline["y_pred"], baseline["y_pred"])))


def median_seconds(step: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--candidates", type=int, default=1, help="also time this many candidates compared at once")
    args = parser.parse_args()
    policy = fairgate.Policy.from_yaml(POLICY)
    baseline, candidate = models(args.rows)
    joint = joint_cube(baseline, candidate, policy)
    pairing = median_seconds(lambda: joint_cube(baseline, candidate, policy), args.repeats)
    comparing = median_seconds(lambda: compare(joint, policy), args.repeats)
    audit = median_seconds(lambda: fairgate.audit(baseline, policy), args.repeats)
    print(f"rows {args.rows:,}; joint cube {joint.cells.height} cells; {policy.statistics.n_bootstrap} replicates")
    print(f"pair both models into the joint cube: median {pairing:.2f} s")
    print(f"paired bootstrap + candidate's audit:  median {comparing:.2f} s")
    print(f"one audit of one model (fairgate.audit): median {audit:.2f} s")
    print(f"compare / one audit: {(pairing + comparing) / audit:.2f}x")
    if args.candidates > 1:
        joints = {f"c{k}": joint_cube(baseline, flipped(baseline, k), policy) for k in range(args.candidates)}
        several = median_seconds(lambda: compare_candidates(joints, policy), args.repeats)
        ratio = several / comparing
        print(f"{args.candidates} candidates' paired bootstraps at once: median {several:.2f} s ({ratio:.1f}x one)")


if __name__ == "__main__":
    main()
