"""Does ``fairgate plan``'s row count give the power it promises? An independent simulation of rows.

For equal opportunity on COMPAS's race shares (``/work/shared/data`` COMPAS; threshold 0, base rate 0.45, TPR 0.65,
FPR 0.3, the disparity on African-American against Caucasian), plan the rows for 80% power at each disparity
(``fairgate.engine.sample_size.plan_rows``: simulated cube counts judged by the engine), then draw ``--check``
independent data sets of that many rows and audit each with ``fairgate.audit`` (each with its own bootstrap seed).
Prints the planned rows, the planner's power, and the independent power with its Wilson 95% interval (target:
75-90%), and the time and load.

    .venv/bin/python bench/plan_power.py --runs 150 --check 400
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
import polars as pl

import fairgate
from fairgate.engine.sample_size import Scenario, default_target, observed_shares, plan_rows, with_bootstrap_seed
from fairgate.engine.stats import wilson_interval

COMPAS_CSV = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "compas" / "compas-scores-two-years.csv"
POLICY = """\
fairness_checker:
  sensitive_attributes:
    - {name: race, reference_group: Caucasian}
  metrics:
    - {name: equal_opportunity_difference, threshold: 0.0}
  statistics: {n_bootstrap: 200, seed: 1}
"""
RATES = {"base_rate": 0.45, "tpr": 0.65, "fpr": 0.3}


def people(rng: np.random.Generator, rows: int, shares: pl.DataFrame, disparity: float) -> pl.DataFrame:
    """Rows drawn independently of the planner's cube route: the target's TPR lowered by the disparity."""
    race = rng.choice(shares["race"].to_numpy(), size=rows, p=shares["share"].to_numpy())
    y_true = rng.random(rows) < RATES["base_rate"]
    tpr = np.where(race == "African-American", RATES["tpr"] - disparity, RATES["tpr"])
    y_pred = rng.random(rows) < np.where(y_true, tpr, RATES["fpr"])
    return pl.DataFrame({"race": race, "y_true": y_true.astype(np.int8), "y_pred": y_pred.astype(np.int8)})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=150, help="the planner's audits per row count (and to confirm)")
    parser.add_argument("--check", type=int, default=400, help="independent audits at the planned row count")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--disparities", type=float, nargs="+", default=[0.10, 0.05])
    args = parser.parse_args()
    policy = fairgate.Policy.from_yaml(POLICY)
    frame = pl.read_csv(COMPAS_CSV, columns=["race"])
    assert isinstance(frame, pl.DataFrame)
    shares = observed_shares(frame, ["race"])
    target = default_target(policy, shares)
    print(f"load {os.getloadavg()[0]:.1f}; planner {args.runs}+{args.runs} audits, check {args.check} audits")
    for disparity in args.disparities:
        started = time.perf_counter()
        plan = plan_rows(
            policy,
            Scenario("equal_opportunity_difference", disparity, shares, target, **RATES),
            runs=args.runs,
            seed=args.seed,
        )
        rng = np.random.default_rng(args.seed + 1000)
        fails = sum(
            fairgate.audit(people(rng, plan.rows_needed, shares, disparity), with_bootstrap_seed(policy, r)).verdict
            == "fail"
            for r in range(args.check)
        )
        low_, high_ = wilson_interval(np.array([float(fails)]), np.array([float(args.check)]), 1.959964)
        low, high, seconds = float(low_[0]), float(high_[0]), time.perf_counter() - started
        print(
            f"EO gap {disparity:.2f}: planned {plan.rows_needed:,} rows (planner's power {plan.power:.3f}); "
            f"independent power {fails / args.check:.3f} [{low:.3f}, {high:.3f}]; {seconds:.0f} s",
            flush=True,
        )


if __name__ == "__main__":
    main()
