"""The trend's change test (fairgate.monitoring.trend): seeded, bounded simulations through the real engine.

Two audits of data drawn from the same distribution must flag a change at most at the stated alpha (per run,
over all its changes: Holm), and a real shift in one group's selection rate must be flagged.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from bench_scripts import load_bench

import fairgate
from fairgate.monitoring import History, PastResult, build_trend
from fairgate.monitoring.trend import FIRST_RUN, SAME_DATA

BENCH = Path(__file__).resolve().parents[2] / "bench" / "trend_null.py"


def _bench() -> ModuleType:
    """bench/trend_null.py: the simulated data, policy and the audit-to-history helpers it shares with these tests."""
    return load_bench("trend_null")


SIM = _bench()
ALPHA: float = SIM.ALPHA
_sample, _audit, _past = SIM.sample, SIM.audit_run, SIM.past_run


def _changes(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    trend = build_trend(after, History(runs=(_past(before, 1),)), max_runs=10, alpha=ALPHA)
    return [s["change"] for s in trend["series"]]


@pytest.mark.slow
def test_two_runs_from_the_same_distribution_flag_a_change_at_most_at_alpha() -> None:
    rng = np.random.default_rng(20261201)
    pairs, runs_flagged, raw_flags, tests = 80, 0, 0, 0
    for k in range(pairs):
        changes = _changes(_audit(_sample(rng, 3000), f"a{k}", f"a{k}"), _audit(_sample(rng, 3000), f"b{k}", f"b{k}"))
        tested = [c for c in changes if c["tested"]]
        assert len(tested) == len(changes) == 9  # 3 metrics x 3 slicings, all with intervals
        runs_flagged += any(c["significant"] for c in tested)
        raw_flags += sum(c["p_value"] <= ALPHA for c in tested)
        tests += len(tested)
    # Family-wise: at most alpha of the runs flag anything (80 runs: 4 expected at alpha; 9 is p < 0.02 above it).
    assert runs_flagged <= 8, runs_flagged
    # Per change, unadjusted: about alpha, not more (720 tests: 36 expected at alpha, sd ~6).
    assert raw_flags / tests <= ALPHA + 0.02, raw_flags / tests


def test_a_real_shift_in_one_groups_selection_rate_is_flagged() -> None:
    rng = np.random.default_rng(7)
    flagged = 0
    for k in range(10):
        before = _audit(_sample(rng, 3000), f"a{k}", f"a{k}")
        after = _audit(_sample(rng, 3000, shift=0.12), f"b{k}", f"b{k}")
        trend = build_trend(after, History(runs=(_past(before, 1),)), max_runs=10, alpha=ALPHA)
        dp = next(
            s for s in trend["series"] if s["metric"] == "demographic_parity_difference" and s["slicing"] == ["grp"]
        )
        assert dp["change"]["delta"] > 0  # group c fell further behind
        flagged += dp["change"]["significant"]
    assert flagged >= 9, flagged  # a 12-point drop for 20% of 3,000 people: z about 4


def test_runs_over_the_same_input_files_are_not_tested() -> None:
    rng = np.random.default_rng(1)
    frame = _sample(rng, 2000)
    before, after = _audit(frame, "a", "same"), _audit(frame, "b", "same")
    trend = build_trend(after, History(runs=(_past(before, 1),)), max_runs=10, alpha=ALPHA)
    assert trend["same_data_as_previous"] is True
    assert trend["n_significant"] == 0
    for series in trend["series"]:
        change = series["change"]
        assert (change["tested"], change["significant"], change["p_value"]) == (False, False, None)
        assert change["reason"] == SAME_DATA
        assert change["delta"] == pytest.approx(0.0)  # seeded engine: the same data give the same values


def test_first_run_has_one_point_per_result_and_no_change() -> None:
    document = _audit(_sample(np.random.default_rng(2), 1500), "only", "x")
    trend = build_trend(document, History(), max_runs=10, alpha=ALPHA)
    assert trend["note"] == FIRST_RUN
    assert [r["current"] for r in trend["runs"]] == [True]
    assert all(len(s["points"]) == 1 and s["change"] is None for s in trend["series"])
    fairgate.AuditDocument.model_validate({**document, "trend": trend})  # the block fits the document schema


def test_series_keep_the_last_runs_and_only_the_same_metric_and_slicing() -> None:
    rng = np.random.default_rng(3)
    documents = [_audit(_sample(rng, 1500), f"r{k}", f"s{k}") for k in range(5)]
    past = [_past(d, k + 1) for k, d in enumerate(documents[:4])]
    # The oldest run judged another metric only: it must not appear in any series.
    other = PastResult("accuracy_difference", ("grp",), 0.1, 0.0, 0.2, 0.1, "lower_is_better", "pass")
    past[0] = dataclasses.replace(past[0], results=(other,))
    trend = build_trend(documents[4], History(runs=tuple(past)), max_runs=5, alpha=ALPHA)
    assert [r["run_id"] for r in trend["runs"]] == ["r0", "r1", "r2", "r3", "r4"]  # the current one last
    for series in trend["series"]:
        assert [p["run_id"] for p in series["points"]] == ["r1", "r2", "r3", "r4"]
        assert series["change"]["previous_run_id"] == "r3"
    trend = build_trend(documents[4], History(runs=tuple(past)), max_runs=3, alpha=ALPHA)
    assert [r["run_id"] for r in trend["runs"]] == ["r2", "r3", "r4"]  # reporting.trend_runs: the last 3
    assert all(len(series["points"]) == 3 for series in trend["series"])


def test_an_undefined_value_or_missing_interval_is_shown_not_tested() -> None:
    rng = np.random.default_rng(4)
    before, after = _audit(_sample(rng, 1500), "a", "a"), _audit(_sample(rng, 1500), "b", "b")
    past = _past(before, 1)
    broken = tuple(
        PastResult(
            r.metric,
            r.slicing,
            None if i == 0 else r.value,
            r.ci_low,
            r.ci_high,
            r.threshold,
            r.direction,
            r.status,
            None if i == 1 else r.standard_error,
        )
        for i, r in enumerate(past.results)
    )
    past = dataclasses.replace(past, results=broken)
    # Result 1 has no stored standard error (a trail from before schema 1.2): it is recovered from the interval.
    changes = [s["change"] for s in build_trend(after, History(runs=(past,)), max_runs=5, alpha=ALPHA)["series"]]
    assert changes[0]["tested"] is False
    assert changes[0]["delta"] is None
    assert "undefined in the previous run" in changes[0]["reason"]
    assert changes[1]["tested"] is True
    assert changes[1]["standard_error"] > 0
