"""How often a proxy audit fails: a true equal-opportunity gap against identical groups, under inferred membership.

Seeded simulation. Each run draws ``--people`` people whose group membership is known only through calibrated
BISG-like posteriors (three groups; each person's true group is drawn from their posterior, so the posteriors are
calibrated by construction), with the mixing-matrix diagonal E[p_a | A = a] = 0.78 / 0.66 / 0.57. True positive
rates by true group are 0.70 / 0.60 / 0.50 (a true equal-opportunity gap of 0.20; threshold 0.10), or 0.60 in
every group (identical groups). Labels: 40% positive; false positive rate 0.20 everywhere.

Each run is a whole binary audit on the probabilistic rows (one row per person and group, weighted by the
posterior): cube, slicings, the attenuation block of the proxy stage, then the core's adjudication. It prints,
per setting, the share of audits that fail (95% Clopper-Pearson bounds), the statuses, and the judged and the
measured (naive) values; ``--naive`` also judges the measured values, as the gate did before it judged the
corrected ones.

    nice python bench/proxy_verdict.py --runs 200
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
from scipy import stats

import fairgate
from fairgate.engine.adjudicate import adjudicate
from fairgate.engine.columns import PERSON_WEIGHT
from fairgate.engine.cube import build_cube
from fairgate.engine.slicing import compute_slicing, plan_slicings
from fairgate.proxy import judged_on_correction
from fairgate.proxy.attenuation import mixing_matrix, proxy_attenuation

GROUPS = ["a", "b", "c"]
# Posterior profiles: person k-type leans to group k with DOMINANT[k], the rest split evenly, drawn from a
# Dirichlet with CONCENTRATION around it; SHARES of people of each type. Solved so that the mixing diagonal is
# 0.78 / 0.66 / 0.57 (prevalence about 0.50 / 0.30 / 0.20).
DOMINANT = np.array([0.805, 0.704, 0.824])
SHARES = np.array([0.546, 0.336, 0.118])
CONCENTRATION = 4.0
GAP_TPR = np.array([0.70, 0.60, 0.50])
EQUAL_TPR = np.array([0.60, 0.60, 0.60])
BOUNDARY_TPR = np.array([0.65, 0.60, 0.55])  # a true gap at the threshold: the gate's false-fail rate is highest
THRESHOLD = 0.10


@dataclass(frozen=True)
class Run:
    verdict: str
    status: str
    judged: str | None
    value: float
    ci: tuple[float, float]
    naive: float
    naive_verdict: str | None


def policy(n_bootstrap: int) -> fairgate.Policy:
    return fairgate.Policy.from_mapping(
        {
            "fairness_checker": {
                "sensitive_attributes": [{"name": "grp"}],
                "metrics": [{"name": "equal_opportunity_difference", "threshold": THRESHOLD}],
                "columns": {"weight": "w"},
                "statistics": {"n_bootstrap": n_bootstrap},
                "reporting": {"format": ["json"]},
                "proxy": {"method": "custom", "custom": {"name_table": "unused.csv"}, "attribute": "grp"},
            }
        },
        source="bench",
    )


def people(n: int, tpr: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, pl.DataFrame]:
    """Calibrated posteriors (n x 3) and each person's label and prediction."""
    kind = rng.choice(3, size=n, p=SHARES)
    profiles = np.full((3, 3), 0.0) + ((1.0 - DOMINANT) / 2.0)[:, None]
    profiles[np.arange(3), np.arange(3)] = DOMINANT
    posterior = rng.gamma(CONCENTRATION * profiles[kind])  # Dirichlet(CONCENTRATION * profile), row by row
    posterior /= posterior.sum(axis=1, keepdims=True)
    truth = (rng.random(n)[:, None] > posterior.cumsum(axis=1)).sum(axis=1).clip(0, 2)
    y_true = (rng.random(n) < 0.4).astype(np.int8)
    y_pred = (rng.random(n) < np.where(y_true == 1, tpr[truth], 0.20)).astype(np.int8)
    return posterior, pl.DataFrame({"y_true": y_true, "y_pred": y_pred})


def expanded(posterior: np.ndarray, frame: pl.DataFrame) -> pl.DataFrame:
    """One row per (person, group) weighted by the posterior, as the proxy stage writes them."""
    n = frame.height
    return pl.DataFrame(
        {
            "grp": GROUPS * n,
            "y_true": np.repeat(frame["y_true"].to_numpy(), 3),
            "y_pred": np.repeat(frame["y_pred"].to_numpy(), 3),
            "w": posterior.reshape(-1),
            PERSON_WEIGHT: np.ones(3 * n),
        }
    )


def one_audit(n: int, tpr: np.ndarray, seed: int, audit_policy: fairgate.Policy, naive: bool = False) -> Run:
    """One proxy audit through the core's adjudication (and, with ``naive``, the measured values judged too)."""
    rng = np.random.default_rng(seed)
    posterior, frame = people(n, tpr, rng)
    proxy: dict[str, Any] = {"attenuation": proxy_attenuation(frame, posterior, GROUPS, audit_policy)}
    cube = build_cube(expanded(posterior, frame), audit_policy, exact_auc=False)
    parts = [compute_slicing(cube, s, audit_policy) for s in plan_slicings(cube, audit_policy)]
    judged = judged_on_correction(parts, proxy, audit_policy)
    document = adjudicate(cube, judged, audit_policy, context={"proxy": proxy}).to_dict()
    (result,) = [r for r in document["results"] if r["slicing"] == ["grp"]]
    naive_verdict = str(adjudicate(cube, parts, audit_policy).to_dict()["verdict"]) if naive else None
    return Run(
        verdict=str(document["verdict"]),
        status=str(result["status"]),
        judged=result.get("judged"),
        value=float(result["value"]),
        ci=(float(result["ci_low"]), float(result["ci_high"])),
        naive=float((result.get("naive") or result)["value"]),
        naive_verdict=naive_verdict,
    )


def clopper_pearson(k: int, n: int) -> tuple[float, float]:
    low = 0.0 if k == 0 else float(stats.beta.ppf(0.025, k, n - k + 1))
    high = 1.0 if k == n else float(stats.beta.ppf(0.975, k + 1, n - k))
    return low, high


def setting(name: str, tpr: np.ndarray, runs: int, n: int, seed: int, n_bootstrap: int, naive: bool) -> list[Run]:
    audit_policy = policy(n_bootstrap)
    started = time.perf_counter()
    done = [one_audit(n, tpr, seed + i, audit_policy, naive) for i in range(runs)]
    fails = sum(r.verdict == "fail" for r in done)
    truth = float(tpr.max() - tpr.min())
    covered = sum(r.ci[0] <= truth <= r.ci[1] for r in done)
    low, high = clopper_pearson(fails, runs)
    statuses = Counter(r.status for r in done)
    print(
        f"{name}: {n} people, {runs} runs: fails {fails}/{runs} = {fails / runs:.3f} [{low:.3f}, {high:.3f}]; "
        f"statuses {dict(sorted(statuses.items()))}; judged {dict(Counter(r.judged for r in done))}"
    )
    print(
        f"  judged value mean {np.mean([r.value for r in done]):.3f}, interval mean "
        f"[{np.mean([r.ci[0] for r in done]):.3f}, {np.mean([r.ci[1] for r in done]):.3f}]; "
        f"measured (naive) value mean {np.mean([r.naive for r in done]):.3f}; the judged interval covers the "
        f"true gap {truth:.2f} in {covered / runs:.3f}"
    )
    if naive:
        naive_fails = sum(r.naive_verdict == "fail" for r in done)
        n_low, n_high = clopper_pearson(naive_fails, runs)
        print(f"  the measured values judged instead: fails {naive_fails}/{runs} [{n_low:.3f}, {n_high:.3f}]")
    print(f"  {time.perf_counter() - started:.0f} s")
    return done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=200, help="audits per setting")
    parser.add_argument("--people", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-bootstrap", type=int, default=200, help="the audits' bootstrap replicates")
    parser.add_argument("--naive", action="store_true", help="also judge the measured values (the old gate)")
    args = parser.parse_args()
    posterior, _ = people(1_000_000, GAP_TPR, np.random.default_rng(args.seed))
    print(f"mixing-matrix diagonal (1M people): {np.round(np.diag(mixing_matrix(posterior)), 3).tolist()}")
    setting("true EO gap 0.20", GAP_TPR, args.runs, args.people, args.seed, args.n_bootstrap, args.naive)
    setting("identical groups", EQUAL_TPR, args.runs, args.people, args.seed + 10**6, args.n_bootstrap, args.naive)
    boundary = "true EO gap 0.10 (at the threshold)"
    setting(boundary, BOUNDARY_TPR, args.runs, args.people, args.seed + 2 * 10**6, args.n_bootstrap, args.naive)


if __name__ == "__main__":
    main()
