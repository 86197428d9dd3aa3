"""Label-free estimation: coverage of the estimated equal-opportunity difference, and refusal when calibration breaks.

Not a timed test. Each run draws a labelled reference audit and, from the same model, an audit whose labels have
not arrived; the estimate of the second's equal opportunity difference (``fairgate.engine.label_free``) is
compared with the value its labels, once drawn, give.

Setting (run ``i`` draws with seed ``i``): 20,000 people per audit, group a (60%) with favourable scores
Beta(2, 3), group b (40%) with Beta(3, 2); the decision is score >= 0.5; the truth is Bernoulli(score) in both
groups (calibrated), or, with calibration broken in group b, Bernoulli(score - 0.08) there (in the reference and
the target alike). Ten score bins; 95% intervals; ``labels.calibration_alpha`` 0.01.

Printed per setting: how often the equal opportunity difference is estimated, how often its interval covers the
true value (target >= 93%, over the runs with an estimate), with Wilson 95% intervals, and how often group b is
refused with a calibration reason (broken: target all runs).

    .venv/bin/python bench/label_free.py                # 200 runs per setting
    .venv/bin/python bench/label_free.py --runs 50
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
import polars as pl

import fairgate
from fairgate.engine.cube import build_cube
from fairgate.engine.label_free import Reference, estimated_entries
from fairgate.engine.slicing import compute_slicing
from fairgate.engine.stats import wilson_interval

ROWS = 20_000
BREAK = 0.08
METRIC = "equal_opportunity_difference"


def policy(seed: int = 0) -> fairgate.Policy:
    """Two groups, the label-dependent differences judged; a light bootstrap (the reference's curves need none)."""
    document = {
        "sensitive_attributes": [{"name": "g"}],
        "metrics": [
            {"name": METRIC, "threshold": 0.1},
            {"name": "equalized_odds_difference", "threshold": 0.1},
            {"name": "predictive_parity_difference", "threshold": 0.1},
        ],
        "statistics": {"n_bootstrap": 20, "seed": seed},
    }
    return fairgate.Policy.from_mapping({"fairness_checker": document}, source="label_free bench")


def people(rng: np.random.Generator, rows: int, broken: bool) -> pl.DataFrame:
    """Scores, decisions and drawn truths of ``rows`` people in groups a and b."""
    group = np.where(rng.random(rows) < 0.6, "a", "b")
    score = np.where(group == "a", rng.beta(2.0, 3.0, rows), rng.beta(3.0, 2.0, rows))
    truth_p = np.clip(score - BREAK, 0.0, 1.0) if broken else score
    truth_p = np.where(group == "b", truth_p, score)
    y_true = (rng.random(rows) < truth_p).astype(np.int8)
    return pl.DataFrame({"g": group, "score": score, "y_pred": (score >= 0.5).astype(np.int8), "y_true": y_true})


def reference_of(frame: pl.DataFrame, policy: fairgate.Policy) -> Reference:
    """The labelled audit's reliability bins per group, as its document keeps them (``curves.calibration``)."""
    cube = build_cube(frame, policy, exact_auc=False)
    part = compute_slicing(cube, ("g",), policy)
    return Reference.of({"run_id": "reference", "curves": {"calibration": part.calibration}})


def true_difference(frame: pl.DataFrame, metric: str = METRIC) -> float:
    """The difference the labels give: TPR gap (equal opportunity), the larger of the TPR and FPR gaps
    (equalized odds) or the PPV gap (predictive parity) between the two groups."""

    def gap(rows: pl.DataFrame, column: str) -> float:
        rates = rows.group_by("g").agg(pl.col(column).mean())[column].to_numpy()
        return float(rates.max() - rates.min())

    tpr, fpr = gap(frame.filter(pl.col("y_true") == 1), "y_pred"), gap(frame.filter(pl.col("y_true") == 0), "y_pred")
    if metric == "equalized_odds_difference":
        return max(tpr, fpr)
    return gap(frame.filter(pl.col("y_pred") == 1), "y_true") if metric == "predictive_parity_difference" else tpr


def run(seed: int, broken: bool = False, rows: int = ROWS) -> dict[str, Any]:
    """One run: whether the estimate exists, covers the truth, and whether group b was refused for calibration."""
    rng = np.random.default_rng(seed)
    chosen = policy(seed)
    reference = reference_of(people(rng, rows, broken), chosen)
    target = people(rng, rows, broken)
    cube = build_cube(target, chosen, exact_auc=False)  # the estimate reads scores and decisions only
    entries = {e["metric"]: e for e in estimated_entries(cube, reference, chosen)}
    entry = entries[METRIC]
    covers = {
        name: e["ci_low"] is not None and e["ci_low"] <= true_difference(target, name) <= e["ci_high"]
        for name, e in entries.items()
    }
    estimated = entry["value"] is not None and entry["ci_low"] is not None
    reason = entry["estimate_reasons"].get("b") or ""  # keyed by the one group name
    return {
        "estimated": estimated,
        "covered": covers[METRIC],
        "covers": covers,
        "refused_b": "not calibrated" in reason,
        "entry": entry,
    }


def rate_text(hits: int, runs: int) -> str:
    """``hits`` of ``runs`` as a share with its Wilson 95% interval ("none" without runs)."""
    if not runs:
        return "none"
    low, high = wilson_interval(np.array([hits]), np.array([runs]), 1.959964)
    share = hits / runs if runs else float("nan")
    return f"{hits}/{runs} = {share:.3f} [{float(low[0]):.3f}, {float(high[0]):.3f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    for broken in (False, True):
        started = time.perf_counter()
        outcomes = [run(seed, broken) for seed in range(args.runs)]
        estimated = [o for o in outcomes if o["estimated"]]
        name = "calibration broken in group b" if broken else "calibrated"
        print(f"{name} ({args.runs} runs, {ROWS:,} people per audit, {time.perf_counter() - started:.0f} s)")
        print(f"  EO difference estimated:        {rate_text(len(estimated), args.runs)}")
        print(f"  its interval covers the truth:  {rate_text(sum(o['covered'] for o in estimated), len(estimated))}")
        print(f"  group b refused (calibration):  {rate_text(sum(o['refused_b'] for o in outcomes), args.runs)}")
        for other in ("equalized_odds_difference", "predictive_parity_difference"):
            hits = sum(o["covers"][other] for o in estimated)
            print(f"  {other} interval covers:  {rate_text(hits, len(estimated))}")


if __name__ == "__main__":
    main()
