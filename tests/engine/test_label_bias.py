"""The label-bias finding (fairgate/engine/label_bias.py): a seeded, bounded version of ``bench/label_bias.py``.

A label under-recording one group's favourable truths by 30% fires the finding in at least 90% of runs; labels
equally noisy in every group fire it in at most 5% (checked with the binomial 0.5% bounds).
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
from bench_scripts import load_bench
from scipy import stats

BENCH = Path(__file__).resolve().parents[2] / "bench" / "label_bias.py"


def _bench() -> ModuleType:
    return load_bench("label_bias")


@pytest.mark.slow
@pytest.mark.parametrize(("biased", "rate", "side"), [(True, 0.90, "at_least"), (False, 0.05, "at_most")])
def test_the_finding_fires_on_a_biased_label_only(biased: bool, rate: float, side: str) -> None:
    bench = _bench()
    runs = 60
    fired = sum(bench.run(seed, biased)["status"] == "fail" for seed in range(runs))
    if side == "at_least":
        assert fired >= stats.binom.ppf(0.005, runs, rate), fired
    else:
        assert fired <= stats.binom.ppf(0.995, runs, rate), fired


def test_disagreement_rows_count_each_direction() -> None:
    bench = _bench()
    import numpy as np

    from fairgate.engine.cube import build_cube
    from fairgate.engine.label_bias import disagreement_policy, label_bias

    frame = bench.labels(np.random.default_rng(1), 4000, True)
    policy = bench.policy()
    rows, entries = label_bias(build_cube(frame, disagreement_policy(policy), exact_auc=False), policy)
    by_group = {r["group"]["g"]: r for r in rows}
    b = frame.filter(frame["g"] == "b")
    missed = int(((b["__external_label"] == 1) & (b["__audit_label"] == 0)).sum())
    assert by_group["b"]["external_favourable_audit_not"] == missed
    assert by_group["b"]["n"] == b.height
    assert by_group["b"]["ci_low"] <= by_group["b"]["rate"] <= by_group["b"]["ci_high"]
    assert entries[0]["value"] == pytest.approx(abs(by_group["a"]["rate"] - by_group["b"]["rate"]))
