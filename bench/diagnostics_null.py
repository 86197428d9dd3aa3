"""Null behaviour of the reviewer diagnostics, by seeded simulation through ``fairgate.audit``.

Prints (issue 9):

- Simpson's paradox: how often an audit flags a reversal when no group differs from another inside any
  stratum (outcome and decisions depend on the stratum only, groups are spread unevenly over the strata);
- worst-off subgroup: under identical groups, how often the chosen subgroup falls in each quartile of the
  candidate subgroups' sizes (25% each when size does not drive the choice), for the confidence-bound rule
  and, for comparison, for the point-estimate rule it replaces;
- calibration: plug-in and debiased ECE of a perfectly calibrated model at n = 100 and 1,000, their means
  and how often their interval covers 0 (the debiased value is the positive part of an unbiased estimate of
  the squared error, so its mean is small but not 0; its interval starts at 0).

Usage: ``python bench/diagnostics_null.py [--replications 200] [--seed 2026]``. The functions are imported by
``tests/engine/test_diagnostics_stats.py`` (fewer replications, marked slow).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
import polars as pl

import fairgate

LEVELS = {"a": 3, "b": 2, "c": 4}  # the intersectional setting


def _policy(attributes: list[str], metrics: str, min_group_size: int, n_bootstrap: int) -> fairgate.Policy:
    listed = ", ".join(f"{{name: {a}}}" for a in attributes)
    return fairgate.Policy.from_yaml(
        f"""
fairness_checker:
  sensitive_attributes: [{listed}]
  metrics: [{metrics}]
  intersectional_analysis: {{min_group_size: {min_group_size}}}
  statistics: {{n_bootstrap: {n_bootstrap}}}
"""
    )


# ------------------------------------------------------------------------------------------- Simpson
def simpson_null_frame(rng: np.random.Generator, n: int) -> pl.DataFrame:
    """Groups of ``a`` spread unevenly over strata ``c``; label and decision depend on the stratum only."""
    stratum = rng.choice(4, size=n, p=[0.4, 0.3, 0.2, 0.1])
    # Group a0 lives mostly in stratum 0, a2 mostly in stratum 3: a strong crude disparity, none within strata.
    leaning = np.array([[0.7, 0.2, 0.1], [0.4, 0.4, 0.2], [0.2, 0.4, 0.4], [0.1, 0.2, 0.7]])
    group = (rng.random(n)[:, None] > leaning[stratum].cumsum(axis=1)).sum(axis=1)
    other = rng.choice(2, size=n)
    base = np.array([0.2, 0.35, 0.5, 0.65])[stratum]
    y_true = (rng.random(n) < base).astype(np.int64)
    tpr, fpr = np.array([0.5, 0.6, 0.7, 0.8])[stratum], np.array([0.1, 0.15, 0.2, 0.3])[stratum]
    y_pred = (rng.random(n) < np.where(y_true == 1, tpr, fpr)).astype(np.int64)
    return pl.DataFrame(
        {
            "a": np.array(["a0", "a1", "a2"])[group],
            "b": np.array(["b0", "b1"])[other],
            "c": np.array(["c0", "c1", "c2", "c3"])[stratum],
            "y_true": y_true,
            "y_pred": y_pred,
        }
    )


def simpson_null_rate(replications: int, seed: int, n: int = 3000) -> float:
    """Share of null audits with at least one Simpson's-paradox flag."""
    policy = _policy(list(LEVELS), "{name: demographic_parity_difference, threshold: 0.1}", 30, 0)
    flagged = 0
    for r in range(replications):
        frame = simpson_null_frame(np.random.default_rng([seed, 1, r]), n)
        flagged += bool(fairgate.audit(frame, policy).to_dict()["diagnostics"]["simpson"])
    return flagged / replications


# ------------------------------------------------------------------------------------------- worst-off subgroup
def identical_groups_frame(rng: np.random.Generator, n: int) -> pl.DataFrame:
    """Three attributes (3, 2, 4 values) with skewed frequencies; every group has the same rates."""
    columns: dict[str, Any] = {}
    for name, k in LEVELS.items():
        columns[name] = np.array([f"{name}{i}" for i in range(k)])[rng.choice(k, size=n, p=_skewed(k))]
    y_true = (rng.random(n) < 0.4).astype(np.int64)
    y_pred = (rng.random(n) < np.where(y_true == 1, 0.7, 0.2)).astype(np.int64)
    return pl.DataFrame({**columns, "y_true": y_true, "y_pred": y_pred})


def _skewed(k: int) -> np.ndarray:
    weights: np.ndarray = 1.0 / np.arange(1, k + 1)
    return np.asarray(weights / weights.sum(), dtype=float)


WORST_METRICS = ("selection_rate", "true_positive_rate", "false_positive_rate")


def worst_subgroup_quartiles(replications: int, seed: int, n: int = 3000) -> dict[str, np.ndarray]:
    """How often the worst-off subgroup is in each size quartile of the candidates, by rule.

    Returns ``{"confidence_bound": [q1, q2, q3, q4], "point_estimate": [...]}``, pooled over three metrics;
    q1 holds the smallest subgroups. Ties in size are split evenly.
    """
    policy = _policy(list(LEVELS), "{name: demographic_parity_difference, threshold: 0.1}", 30, 0)
    tallies = {"confidence_bound": np.zeros(4), "point_estimate": np.zeros(4)}
    for r in range(replications):
        document = fairgate.audit(identical_groups_frame(np.random.default_rng([seed, 2, r]), n), policy).to_dict()
        chosen = {w["metric"]: w for w in document["diagnostics"]["worst_subgroups"]}
        for metric in WORST_METRICS:
            sizes, by_point = _candidates(document, metric)
            tallies["confidence_bound"][_quartile(sizes, chosen[metric]["n"])] += 1
            tallies["point_estimate"][_quartile(sizes, by_point)] += 1
    return {rule: counts / counts.sum() for rule, counts in tallies.items()}


def _candidates(document: dict[str, Any], metric: str) -> tuple[np.ndarray, float]:
    """Sizes of the sufficient intersectional subgroups, and the size of the point estimate's worst one."""
    higher_is_better = metric != "false_positive_rate"
    rows = [
        (g["n"], g["metrics"][metric]["value"])
        for g in document["groups"]
        if len(g["slicing"]) >= 2 and g["sufficient"] and g["metrics"][metric]["value"] is not None
    ]
    sizes = np.array([n for n, _ in rows])
    values = np.array([v for _, v in rows])
    worst = int(np.argmin(values) if higher_is_better else np.argmax(values))
    return sizes, float(sizes[worst])


def _quartile(sizes: np.ndarray, size: float) -> int:
    """Size quartile (0 = smallest) of a candidate, from its mid-rank among all candidates."""
    rank = (np.sum(sizes < size) + 0.5 * np.sum(sizes == size)) / sizes.size
    return min(int(rank * 4), 3)


# ------------------------------------------------------------------------------------------- calibration
def calibrated_ece(replications: int, seed: int, n: int, n_bootstrap: int = 200) -> dict[str, dict[str, float]]:
    """Plug-in and debiased ECE of a perfectly calibrated score (y ~ Bernoulli(score)): mean, coverage of 0."""
    policy = fairgate.Policy.from_yaml(
        f"""
fairness_checker:
  sensitive_attributes: [{{name: grp}}]
  metrics: [{{name: calibration_difference, threshold: 0.1}}]
  intersectional_analysis: {{min_group_size: 1, enabled: false}}
  statistics: {{n_bootstrap: {n_bootstrap}}}
"""
    )
    names = ("expected_calibration_error", "expected_calibration_error_debiased")
    values: dict[str, list[float]] = {name: [] for name in names}
    covers: dict[str, int] = dict.fromkeys(names, 0)
    for r in range(replications):
        rng = np.random.default_rng([seed, 3, n, r])
        score = rng.random(n)
        frame = pl.DataFrame(
            {
                "grp": ["g"] * n,
                "y_true": (rng.random(n) < score).astype(np.int64),
                "y_pred": (score >= 0.5).astype(np.int64),
                "score": score,
            }
        )
        document = fairgate.audit(frame, policy, exact_auc=False).to_dict()
        population = next(g for g in document["groups"] if g["slicing"] == [])["metrics"]
        for name in names:
            entry = population[name]
            values[name].append(entry["value"])
            covers[name] += entry["ci_low"] <= 0.0 <= entry["ci_high"]
    return {name: {"mean": float(np.mean(values[name])), "covers_zero": covers[name] / replications} for name in names}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=200)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    reps, seed = args.replications, args.seed
    print(f"fairgate diagnostics under the null: {reps} replications per setting, seed {seed}")

    started = time.perf_counter()
    rate = simpson_null_rate(reps, seed)
    print(
        f"\nSimpson's paradox, no within-stratum gap (3 000 rows, 3 attributes): flag rate {rate:.3f} (target <= 0.05)"
    )

    quartiles = worst_subgroup_quartiles(reps, seed)
    print("\nWorst-off subgroup, identical groups (3 000 rows, 3/2/4 values, min_group_size 30, 3 metrics pooled):")
    print("  size quartile of the chosen subgroup   Q1 (smallest)    Q2      Q3      Q4 (largest)")
    for rule, shares in quartiles.items():
        print(f"  {rule:<36}" + "".join(f"{s:8.3f}" for s in shares))

    print("\nCalibration of a perfectly calibrated model (true ECE 0):")
    for n in (100, 1000):
        for name, figures in calibrated_ece(reps, seed, n).items():
            print(
                f"  n = {n:>5}  {name:<38} mean {figures['mean']:+.4f}  interval covers 0: {figures['covers_zero']:.3f}"
            )
    print(f"\n({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
