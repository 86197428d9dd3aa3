"""False alarms and power of the trend's "change since the previous run" test, by seeded simulation.

Each pair is two audits (``fairgate.audit``) of independent samples from one distribution: three groups of
unequal size (group c selected 5 points less often) and a second attribute with no disparity; 3 policy metrics
x 3 slicings = 9 changes per run. Prints:

- per change, unadjusted: how often p <= alpha, with the bootstrap standard errors the document stores, and
  with standard errors recovered from the stored intervals (the fallback for runs recorded before 1.2);
- per run, Holm over its 9 changes: how often any change is flagged (the family-wise false-alarm rate);
- power: how often a drop of ``--shift`` in group c's selection rate is flagged on demographic parity by group.

Usage: ``python bench/trend_null.py [--pairs 200] [--n 3000] [--shift 0.08] [--seed 2026]``.
``tests/engine/test_trend.py`` runs the same simulation with fewer pairs (it imports the data and policy from here).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from typing import Any

import numpy as np
import polars as pl

import fairgate
from fairgate.monitoring import History, PastResult, PastRun, build_trend

ALPHA = 0.05
POLICY = fairgate.Policy.from_yaml(
    """
fairness_checker:
  sensitive_attributes: [{name: grp}, {name: sex}]
  metrics:
    - {name: demographic_parity_difference, threshold: 0.1}
    - {name: equal_opportunity_difference, threshold: 0.1}
    - {name: disparate_impact_ratio, threshold: 0.8}
  intersectional_analysis: {min_group_size: 30, include_triples: false}
  statistics: {n_bootstrap: 200}
"""
)


def sample(rng: np.random.Generator, n: int, shift: float = 0.0) -> pl.DataFrame:
    """Three groups of unequal size; group c is selected 5 points less often (plus ``shift``)."""
    grp = rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2])
    sex = rng.choice(["F", "M"], n)
    y = rng.random(n) < 0.4
    p = np.where(y, 0.7, 0.3) - np.where(grp == "c", 0.05 + shift, 0.0)
    pred = rng.random(n) < p
    return pl.DataFrame({"grp": grp, "sex": sex, "y_true": y.astype(int), "y_pred": pred.astype(int)})


def audit_run(frame: pl.DataFrame, run_id: str, sha: str) -> dict[str, Any]:
    """The audit document of ``frame``, its input named by ``sha`` (runs with different ``sha`` are independent)."""
    document = fairgate.audit(frame, POLICY, run_id=run_id).to_dict()
    document["inputs"] = {"predictions": {"source": f"{sha}.csv", "sha256": sha, "rows": frame.height}}
    return document


def past_run(document: dict[str, Any], seq: int) -> PastRun:
    """A run as ``tasks.store.model_history`` reads it back from the trail."""
    results = tuple(
        PastResult(
            r["metric"],
            tuple(r["slicing"]),
            r["value"],
            r["ci_low"],
            r["ci_high"],
            r["threshold"],
            r["direction"],
            r["status"],
            r.get("standard_error"),
        )
        for r in document["results"]
    )
    sha = document["inputs"]["predictions"]["sha256"]
    return PastRun(
        document["run_id"], seq, f"2026-01-0{seq}", "v", document["verdict"], {"predictions": sha}, 0.95, results
    )


def _trend(before: dict[str, Any], after: dict[str, Any], *, stored_se: bool) -> dict[str, Any]:
    past = past_run(before, 1)
    current = after
    if not stored_se:  # as a run recorded before schema 1.2: the standard errors come from the intervals
        past = dataclasses.replace(
            past, results=tuple(dataclasses.replace(r, standard_error=None) for r in past.results)
        )
        current = {**after, "results": [{**r, "standard_error": None} for r in after["results"]]}
    return build_trend(current, History(runs=(past,)), max_runs=10, alpha=ALPHA)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--n", type=int, default=3000)
    parser.add_argument("--shift", type=float, default=0.08)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    raw = {True: 0, False: 0}
    family = {True: 0, False: 0}
    tests = 0
    detected = 0
    for k in range(args.pairs):
        before = audit_run(sample(rng, args.n), f"a{k}", f"a{k}")
        after = audit_run(sample(rng, args.n), f"b{k}", f"b{k}")
        for stored in (True, False):
            changes = [s["change"] for s in _trend(before, after, stored_se=stored)["series"] if s["change"]["tested"]]
            raw[stored] += sum(c["p_value"] <= ALPHA for c in changes)
            family[stored] += any(c["significant"] for c in changes)
        tests += len(changes)
        shifted = audit_run(sample(rng, args.n, shift=args.shift), f"s{k}", f"s{k}")
        series = _trend(before, shifted, stored_se=True)["series"]
        dp = next(s for s in series if s["metric"] == "demographic_parity_difference" and s["slicing"] == ["grp"])
        detected += dp["change"]["significant"]
    print(f"{args.pairs} pairs of runs, n = {args.n} each, alpha = {ALPHA} ({time.perf_counter() - started:.0f} s)")
    for stored, name in ((True, "bootstrap standard errors (stored)"), (False, "recovered from the intervals")):
        print(
            f"  {name}: per change p <= alpha {raw[stored] / tests:.3f} ({raw[stored]}/{tests}); "
            f"per run, Holm, any flagged {family[stored] / args.pairs:.3f} ({family[stored]}/{args.pairs})"
        )
    print(f"  power: a {args.shift:.2f} drop in group c's selection rate flagged {detected / args.pairs:.3f}")


if __name__ == "__main__":
    main()
