"""Coverage of the gap metrics' intervals and the error rates of the gate, by seeded simulation.

Not a timed test: it prints

1. the coverage grid: how often the reported interval of demographic parity difference, disparate impact
   ratio and equalized odds difference contains the true value, for 2 and 5 groups x true gap 0 and moderate
   x n per group 50, 200, 2,000 (target: at least 93% in every cell);
2. the gate's false-fail rate when every group is identical: 3 attributes (3, 2 and 4 values), intersections
   on, ``min_group_size: 30``, the default policy (below), at 3,000 and 30,000 rows (target: at most 5%);
3. the gate's power: one group (~20% of people) has TPR 0.5 vs 0.8 and FPR 0.2 vs 0.1, 30,000 rows
   (target: the audit fails in at least 95% of runs).

Every audit goes through the public API ``fairgate.audit``; run ``i`` uses seed ``i`` for the data and the
bootstrap, so the figures are reproducible.

    .venv/bin/python bench/coverage.py                      # 200 replications, 300 bootstrap replicates
    .venv/bin/python bench/coverage.py --replications 1000 --gate-replications 200 --n-bootstrap 300
    .venv/bin/python bench/coverage.py --replications 1000 --n-bootstrap 1000 --skip-gate --cells 2:moderate:2000
"""

from __future__ import annotations

import argparse
import itertools
import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

import fairgate

METRICS = ("demographic_parity_difference", "disparate_impact_ratio", "equalized_odds_difference")
#: The policy judged in the false-fail and power runs: four rate metrics at their usual thresholds.
DEFAULT_METRICS = [
    {"name": "demographic_parity_difference", "threshold": 0.1},
    {"name": "disparate_impact_ratio", "threshold": 0.8},
    {"name": "equal_opportunity_difference", "threshold": 0.1},
    {"name": "equalized_odds_difference", "threshold": 0.1},
]
BASE_RATE = 0.5


@dataclass(frozen=True)
class Truth:
    """True TPR and FPR per group (labels are Bernoulli(0.5), so selection rate = (TPR + FPR) / 2)."""

    tpr: np.ndarray
    fpr: np.ndarray

    def value(self, metric: str) -> float:
        selection = BASE_RATE * self.tpr + (1 - BASE_RATE) * self.fpr
        if metric == "demographic_parity_difference":
            return float(selection.max() - selection.min())
        if metric == "disparate_impact_ratio":
            return float(selection.min() / selection.max())
        return float(max(np.ptp(self.tpr), np.ptp(self.fpr)))


def truth_for(groups: int, gap: str) -> Truth:
    """Gap 0: TPR 0.7 and FPR 0.2 everywhere. Moderate: TPR spread over 0.7-0.8 and FPR over 0.2-0.25, so
    the true DP difference is 0.075, the DI ratio 0.857 and the EO difference 0.1."""
    if gap == "0":
        return Truth(np.full(groups, 0.7), np.full(groups, 0.2))
    return Truth(np.linspace(0.7, 0.8, groups), np.linspace(0.2, 0.25, groups))


def draw(rng: np.random.Generator, group: np.ndarray, tpr: np.ndarray, fpr: np.ndarray) -> tuple[Any, Any]:
    """Labels Bernoulli(0.5) and predictions with the group's TPR (label 1) or FPR (label 0)."""
    y_true = (rng.random(group.size) < BASE_RATE).astype(np.int64)
    chance = np.where(y_true == 1, tpr[group], fpr[group])
    return y_true, (rng.random(group.size) < chance).astype(np.int64)


def policy(attributes: list[str], seed: int, n_bootstrap: int, min_group_size: int = 30) -> fairgate.Policy:
    return fairgate.Policy.model_validate(
        {
            "sensitive_attributes": [{"name": a} for a in attributes],
            "metrics": DEFAULT_METRICS,
            "intersectional_analysis": {"min_group_size": min_group_size},
            "statistics": {"n_bootstrap": n_bootstrap, "seed": seed},
        }
    )


# ------------------------------------------------------------------------------------------------ coverage
def coverage_cell(groups: int, gap: str, n: int, replications: int, n_bootstrap: int) -> dict[str, Any]:
    truth = truth_for(groups, gap)
    member = np.repeat(np.arange(groups), n)
    names = np.array([f"g{i}" for i in range(groups)])[member]
    covered = {m: 0 for m in METRICS}
    given = {m: 0 for m in METRICS}
    for i in range(replications):
        rng = np.random.default_rng([groups, n, int(gap != "0"), i])
        y_true, y_pred = draw(rng, member, truth.tpr, truth.fpr)
        frame = pl.DataFrame({"grp": names, "y_true": y_true, "y_pred": y_pred})
        document = fairgate.audit(frame, policy(["grp"], i, n_bootstrap, min_group_size=1)).to_dict()
        for result in document["results"]:
            metric = result["metric"]
            if metric not in covered or result["ci_low"] is None:
                continue
            given[metric] += 1
            covered[metric] += result["ci_low"] - 1e-12 <= truth.value(metric) <= result["ci_high"] + 1e-12
    return {m: (covered[m] / given[m] if given[m] else float("nan"), given[m]) for m in METRICS}


GRID = list(itertools.product((2, 5), ("0", "moderate"), (50, 200, 2000)))


def parse_cells(text: str | None) -> list[tuple[int, str, int]]:
    """``--cells 2:moderate:2000,5:0:2000`` as grid cells (groups, gap, n per group); every cell when absent."""
    if not text:
        return GRID
    cells = []
    for item in text.split(","):
        groups, gap, n = item.strip().split(":")
        cell = (int(groups), gap, int(n))
        if cell not in GRID:
            raise SystemExit(
                f"error: --cells: {item!r} is not a cell of the grid (groups 2|5, gap 0|moderate, n 50|200|2000)"
            )
        cells.append(cell)
    return cells


def print_coverage_grid(replications: int, n_bootstrap: int, cells: list[tuple[int, str, int]] = GRID) -> float:
    print(f"1. Coverage of the true value ({replications} replications per cell, {n_bootstrap} bootstrap replicates)")
    print(f"{'groups':>6} {'gap':>9} {'n/group':>7} | " + " | ".join(f"{m:>30}" for m in METRICS))
    worst = 1.0
    for groups, gap, n in cells:
        cell = coverage_cell(groups, gap, n, replications, n_bootstrap)
        worst = min(worst, *(c for c, _ in cell.values()))
        shown = " | ".join(f"{c:>7.3f} +- {_standard_error(c, g):.3f} ({g:>4} CIs)" for c, g in cell.values())
        print(f"{groups:>6} {gap:>9} {n:>7} | {shown}", flush=True)
    print(f"   lowest coverage: {worst:.3f} (target >= 0.93; +- is the binomial standard error)\n")
    return worst


def _standard_error(share: float, runs: int) -> float:
    """The binomial standard error of a coverage ``share`` measured in ``runs`` runs."""
    return math.sqrt(share * (1 - share) / runs) if runs else float("nan")


# ------------------------------------------------------------------------------------------- gate error
LEVELS = {"a": 3, "b": 2, "c": 4}


def three_attribute_frame(rows: int, rng: np.random.Generator, disadvantaged: bool) -> pl.DataFrame:
    """3 attributes with 3, 2 and 4 equally likely values; identical groups, or (``disadvantaged``) value a0 of
    attribute a (~20% of people after its share is set to 0.2) with TPR 0.5 vs 0.8 and FPR 0.2 vs 0.1."""
    columns = {}
    for name, k in LEVELS.items():
        shares = np.full(k, 1.0 / k) if not (disadvantaged and name == "a") else np.array([0.2, 0.4, 0.4])
        columns[name] = np.array([f"{name}{j}" for j in range(k)])[rng.choice(k, rows, p=shares)]
    flagged = (columns["a"] == "a0").astype(np.int64) if disadvantaged else np.zeros(rows, dtype=np.int64)
    tpr, fpr = (np.array([0.8, 0.5]), np.array([0.1, 0.2])) if disadvantaged else (np.array([0.7]), np.array([0.2]))
    y_true, y_pred = draw(rng, flagged, tpr, fpr)
    return pl.DataFrame({**columns, "y_true": y_true, "y_pred": y_pred})


def gate_rate(
    rows: int, replications: int, n_bootstrap: int, disadvantaged: bool, decision: str = "evidence_of_violation"
) -> tuple[float, float, float]:
    """Share of audits that fail, mean number of results judged, mean number inconclusive."""
    fails, judged, inconclusive = 0, 0, 0
    for i in range(replications):
        rng = np.random.default_rng([rows, int(disadvantaged), i])
        frame = three_attribute_frame(rows, rng, disadvantaged)
        chosen = policy(list(LEVELS), i, n_bootstrap)
        gate = chosen.ci_cd_gate.model_copy(update={"decision": decision})
        result = fairgate.audit(frame, chosen.model_copy(update={"ci_cd_gate": gate}))
        detail = result.to_dict()["verdict_detail"]
        fails += result.verdict == "fail"
        judged += detail["n_judged"]
        inconclusive += detail["n_inconclusive"]
    return fails / replications, judged / replications, inconclusive / replications


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replications", type=int, default=200)
    parser.add_argument("--n-bootstrap", type=int, default=300)
    parser.add_argument("--gate-replications", type=int, default=None, help="default: --replications")
    parser.add_argument("--skip-coverage", action="store_true")
    parser.add_argument("--skip-gate", action="store_true")
    parser.add_argument(
        "--cells", default=None, help="only these coverage cells, GROUPS:GAP:N comma-separated (e.g. 2:moderate:2000)"
    )
    args = parser.parse_args()
    start = time.perf_counter()
    gate_runs = args.gate_replications or args.replications
    cells = parse_cells(args.cells)
    if not args.skip_coverage:
        print_coverage_grid(args.replications, args.n_bootstrap, cells)
    if not args.skip_gate:
        print_gate(gate_runs, args.n_bootstrap)
    print(f"({time.perf_counter() - start:.0f} s)")


def print_gate(gate_runs: int, n_bootstrap: int) -> None:
    print(f"2. False-fail rate ({gate_runs} audits each), every group identical (3 attributes with 3, 2, 4 values,")
    print("   intersections on, min_group_size 30, DP/DI/equal opportunity/equalized odds at 0.1/0.8/0.1/0.1)")
    for rows in (3000, 30000):
        for decision in ("evidence_of_violation", "point_estimate"):
            rate, judged, unsure = gate_rate(rows, gate_runs, n_bootstrap, False, decision)
            print(
                f"   {rows:>6} rows, decision {decision:<22}: fails {rate:.3f} "
                f"(target <= 0.05 for the default rule); {judged:.1f} results judged, {unsure:.1f} inconclusive",
                flush=True,
            )
    print("3. Power: a0 (~20% of people) has TPR 0.5 vs 0.8 and FPR 0.2 vs 0.1, 30,000 rows, default rule")
    rate, judged, unsure = gate_rate(30000, gate_runs, n_bootstrap, True)
    print(f"   fails {rate:.3f} (target >= 0.95); {judged:.1f} results judged, {unsure:.1f} inconclusive")


if __name__ == "__main__":
    main()
