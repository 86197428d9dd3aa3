"""Monitoring before labels arrive (fairgate/monitoring/estimates.py): bench/monitor_label_free.py, seeded, bounded.

Over nights of a calibrated model, each night estimated without labels and checked once its labels are drawn, the
estimate intervals (95%) cover the measured values at about the stated rate: no more misses than
Binomial(n, 0.07) exceeds with probability 0.5%, and not so few that the intervals are useless (coverage below
0.995). With calibration broken in one group, that group is refused on every night and no estimate is checked.
"""

from __future__ import annotations

from types import ModuleType

import pytest
from bench_scripts import load_bench
from scipy import stats

from fairgate.monitoring.estimates import coverage


def _bench() -> ModuleType:
    return load_bench("monitor_label_free")


@pytest.mark.slow
def test_nightly_estimates_cover_the_measured_values_at_about_the_stated_rate() -> None:
    bench = _bench()
    checks = [c for seed in range(25) for c in bench.run(seed, nights=4, rows=5_000)["checks"]]
    total = coverage(checks, 0.95)
    assert total["n_compared"] >= 0.95 * 25 * 4 * 3  # three metrics a night; a calibrated group refused rarely (1%)
    misses = total["n_compared"] - total["n_covered"]
    assert misses <= stats.binom.ppf(0.995, total["n_compared"], 0.07), total
    assert total["rate"] < 0.995, total  # intervals that never miss would be uselessly wide


@pytest.mark.slow
def test_a_group_whose_calibration_broke_is_refused_every_night() -> None:
    bench = _bench()
    for seed in range(5):
        outcome = bench.run(seed, nights=3, rows=5_000, broken=True)
        assert outcome["refused_nights"] == 3
        assert all(c["n_compared"] == 0 for c in outcome["checks"])  # refused: nothing estimated, nothing checked


def test_coverage_counts_every_check() -> None:
    checks = [{"n_compared": 3, "n_covered": 3}, {"n_compared": 2, "n_covered": 1}, {"n_compared": 0, "n_covered": 0}]
    total = coverage(checks, 0.95)
    assert (total["n_compared"], total["n_covered"]) == (5, 4)
    assert total["ci_low"] < 0.8 < total["ci_high"]
    assert coverage([], 0.95)["rate"] is None


@pytest.mark.parametrize("rule", ["report_only", "judge"])
def test_the_policy_decides_whether_estimates_count(rule: str) -> None:
    """A disparity the estimate shows beyond a tight threshold: it fails the window under judge only."""
    import numpy as np

    from fairgate.engine.cube import build_cube
    from fairgate.monitoring.estimates import counted, estimated_results
    from fairgate.monitoring.windowed import window_verdict

    bench = _bench()
    document = {
        "sensitive_attributes": [{"name": "g"}],
        "metrics": [{"name": "equal_opportunity_difference", "threshold": 0.01}],
        "statistics": {"n_bootstrap": 20, "seed": 0},
        "labels": {"estimated_results": rule},
    }
    policy = bench.fairgate.Policy.from_mapping({"fairness_checker": document}, source="test")
    rng = np.random.default_rng(5)
    reference = bench.reference_of(bench.people(rng, 20_000, False), policy)
    night = bench.people(rng, 20_000, False).with_columns(bench.pl.lit(0).cast(bench.pl.Int8).alias("y_true"))
    results = estimated_results(build_cube(night, policy, exact_auc=False), reference, policy)
    (estimate,) = [r for r in results if r["estimated"]]
    assert estimate["status"] == "fail"  # Beta(2, 3) against Beta(3, 2) scores: TPRs far apart
    verdict = window_verdict(counted(results, policy), policy)
    assert verdict["verdict"] == ("fail" if rule == "judge" else "insufficient")
