"""Monitoring before labels arrive: coverage of the nightly estimates once each night's labels are drawn.

Not a timed test. Each run draws a labelled deployment audit (the reference: 20,000 people) and then ``--nights``
nights of ``--rows`` people from the same calibrated model, without labels. Each night's period is estimated as
``fairgate monitor run`` without ``--labels`` estimates it (``fairgate.monitoring.estimates.estimated_results``);
then its labels are drawn and the estimates are checked against the measured values
(``checked_estimates``, as a night with late labels does). Coverage is counted over every estimate with an interval
(equal opportunity, equalized odds and predictive parity differences), per run and over all runs.

Setting (bench/label_free.py's people and reference, imported from it; run ``i`` draws with seed ``i``): group
a (60%) with favourable scores Beta(2, 3), group b (40%) with
Beta(3, 2); the decision is score >= 0.5; the truth is Bernoulli(score) in both groups (calibrated) or, with
calibration broken in group b, Bernoulli(score - 0.08) there (reference and nights alike: then group b must be
refused every night). 95% intervals; ``labels.calibration_alpha`` 0.01.

    .venv/bin/python bench/monitor_label_free.py                 # 200 runs of 5 nights of 5,000 people
    .venv/bin/python bench/monitor_label_free.py --runs 20 --nights 3
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

import fairgate
from fairgate.engine.cube import build_cube
from fairgate.monitoring.estimates import checked_estimates, coverage, estimated_results, period_estimates
from fairgate.monitoring.windowed import judged_results

sys.path.insert(0, str(Path(__file__).resolve().parent))
from label_free import people, rate_text, reference_of

REFERENCE_ROWS = 20_000
METRICS = ("equal_opportunity_difference", "equalized_odds_difference", "predictive_parity_difference")


def policy(seed: int = 0) -> fairgate.Policy:
    """Two groups, the label-dependent differences judged; a light bootstrap."""
    document = {
        "sensitive_attributes": [{"name": "g"}],
        "metrics": [{"name": name, "threshold": 0.1} for name in METRICS],
        "statistics": {"n_bootstrap": 20, "seed": seed},
    }
    return fairgate.Policy.from_mapping({"fairness_checker": document}, source="monitor_label_free bench")


def run(seed: int, nights: int, rows: int, broken: bool = False) -> dict[str, Any]:
    """One deployment and its nights: each night's check (compared, covered) and whether group b was refused."""
    rng = np.random.default_rng(seed)
    chosen = policy(seed)
    reference = reference_of(people(rng, REFERENCE_ROWS, broken), chosen)
    checks, refused = [], 0
    for night in range(nights):
        drawn = people(rng, rows, broken)
        unlabelled = build_cube(drawn.with_columns(pl.lit(0).cast(pl.Int8).alias("y_true")), chosen, exact_auc=False)
        results = estimated_results(unlabelled, reference, chosen)
        reasons = [r.get("estimate_reasons") or {} for r in results if r.get("estimated")]
        refused += any("not calibrated" in (found.get("b") or "") for found in reasons)
        measured = judged_results(build_cube(drawn, chosen, exact_auc=False), chosen)
        checks.append(checked_estimates(period_estimates(results), measured, f"night {night}"))
    return {"checks": checks, "refused_nights": refused, "nights": nights}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--nights", type=int, default=5)
    parser.add_argument("--rows", type=int, default=5_000)
    args = parser.parse_args()
    for broken in (False, True):
        started = time.perf_counter()
        outcomes = [run(seed, args.nights, args.rows, broken) for seed in range(args.runs)]
        checks = [c for o in outcomes for c in o["checks"]]
        total = coverage(checks, 0.95)
        name = "calibration broken in group b" if broken else "calibrated"
        print(
            f"{name} ({args.runs} runs x {args.nights} nights of {args.rows:,} people, "
            f"{time.perf_counter() - started:.0f} s)"
        )
        covered = rate_text(total["n_covered"], total["n_compared"])
        print(f"  estimates checked, interval covers the measured value: {covered}")
        for metric in METRICS:
            rows = [r for c in checks for r in c["results"] if r["metric"] == metric]
            print(f"    {metric}: {rate_text(sum(r['covered'] for r in rows), len(rows))}")
        nights = sum(o["nights"] for o in outcomes)
        refused = rate_text(sum(o["refused_nights"] for o in outcomes), nights)
        print(f"  nights with group b refused (calibration): {refused}")


if __name__ == "__main__":
    main()
