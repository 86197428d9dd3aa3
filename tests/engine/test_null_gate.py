"""The gate's false-fail rate with identical groups, every kind, at parity thresholds: a seeded, bounded version of
``bench/null_gate.py`` (which runs >= 200 audits per setting and prints the rates with their Monte Carlo intervals).

With alpha = 0.05 over the audit, ``runs`` audits of identical groups may fail at most ``limit`` times, where
P(Binomial(runs, 0.05) > limit) < 0.5%. An audit with nothing judged is ``insufficient``, never ``fail``. A real
disparity in the same setting fails (so the check can fail).
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import polars as pl
import pytest
from bench_scripts import load_bench
from scipy import stats

import fairgate

BENCH = Path(__file__).resolve().parents[2] / "bench" / "null_gate.py"


def _bench() -> ModuleType:
    return load_bench("null_gate")


def _limit(runs: int) -> int:
    return int(stats.binom.ppf(0.995, runs, 0.05))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("kind", "rows", "runs"),
    [
        ("multiclass", 3000, 60),
        ("small", 480, 60),
        ("binary", 3000, 30),
        ("regression", 3000, 30),
        ("ranking", 3000, 30),
    ],
)
def test_identical_groups_fail_at_most_alpha(kind: str, rows: int, runs: int) -> None:
    bench = _bench()
    bench.BOOTSTRAP = 100
    outcomes = [bench.outcome(fairgate.audit(*bench.SETTINGS[kind](rows, 1000 + seed))) for seed in range(runs)]
    assert outcomes.count("fail") <= _limit(runs), outcomes.count("fail")


@pytest.mark.slow
def test_small_groups_with_a_real_gap_fail() -> None:
    """8 groups of 60: one group's predictions all favourable (a gap no sampling noise explains) fails the audit."""
    bench = _bench()
    bench.BOOTSTRAP = 100
    frame, policy = bench.SETTINGS["small"](480, 3)
    frame = frame.with_columns(y_pred=pl.when(pl.col("g") == "g0").then(1).otherwise(pl.col("y_pred")))
    assert fairgate.audit(frame, policy).verdict == "fail"
