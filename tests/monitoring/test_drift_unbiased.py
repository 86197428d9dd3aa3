"""The trap the detector avoids: a range over groups (max - min) is biased upward on a small nightly sample.

On the same stable monitors, a night's TPR range over race groups (equal opportunity as judged) compared with
the baseline's range drifts upward: noise widens the spread of a few hundred people, not of a baseline of
300,000. Fed to the very same CUSUM (same rule, thresholds and SEs from the same binomial variances), it cries
wolf in most monitors, while the per-group contrasts stay centred and quiet.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from drift_sim import MIN_CHANGE, SIM, stable_monitors

import fairgate
from fairgate.monitoring.drift import DriftRule, Observation, scan

MONITORS = 30
SLICINGS = [("race",), ("race", "sex")]


def _tpr(cube: fairgate.Cube, slicing: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """TPR and positives per group with at least 10 positives (the engine's min_events)."""
    counts = (
        cube.cells.filter(pl.col("__y_true") == 1)
        .group_by(list(slicing))
        .agg(positives=pl.col("__rows").sum(), hits=(pl.col("__rows") * pl.col("__y_pred")).sum())
        .filter(pl.col("positives") >= 10)
    )
    positives = counts["positives"].to_numpy().astype(float)
    return counts["hits"].to_numpy() / positives, positives


def _range_observation(night: fairgate.Cube, base: fairgate.Cube, slicing: tuple[str, ...], day: object) -> Observation:
    """The naive stream: tonight's max - min TPR minus the baseline's, with the binomial SE of the two ranges."""
    values = []
    variance = 0.0
    for cube in (night, base):
        tpr, positives = _tpr(cube, slicing)
        high, low = int(np.argmax(tpr)), int(np.argmin(tpr))
        values.append(tpr[high] - tpr[low])
        variance += sum(tpr[i] * (1 - tpr[i]) / positives[i] for i in (high, low))
    return Observation(
        stream=f"range · {' × '.join(slicing)}",
        metric="equal_opportunity_difference",
        slicing=" × ".join(slicing),
        group="max - min",
        night=day,  # type: ignore[arg-type]
        estimate=values[0] - values[1],
        standard_error=float(np.sqrt(variance)),
    )


@pytest.mark.slow
def test_range_drifts_up_on_stable_data_the_contrasts_do_not() -> None:
    rule = DriftRule("equal_opportunity_difference", MIN_CHANGE, 0.05, SIM.NIGHTS)
    ranged_alerts = ours_alerts = 0
    range_z, our_z = [], []
    for monitor in stable_monitors(MONITORS):
        naive = [
            _range_observation(cube, monitor.baseline, slicing, SIM.DAYS[i])  # type: ignore[attr-defined]
            for i, cube in enumerate(monitor.cubes)  # type: ignore[attr-defined]
            for slicing in SLICINGS
        ]
        ours = [o for o in monitor.history if o.metric == rule.metric]  # type: ignore[attr-defined]
        range_z += [o.z for o in naive]
        our_z += [o.z for o in ours]
        ranged_alerts += bool(scan(naive, rule).alerts)
        ours_alerts += bool(scan(ours, rule).alerts)
    # The range's standardized change sits well above 0 on data that did not change; the contrasts' at 0.
    assert np.mean(range_z) > 0.3
    # Our z's mean: 0 up to noise. Its SE is inflated by the shared baselines (rho ~ 0.01 over 90 nights of a
    # monitor: sqrt(1 + 89 x 0.01) ~ 1.4) and streams sharing groups; 0.05 is several such SEs.
    assert abs(np.mean(our_z)) < 0.05
    assert ranged_alerts >= MONITORS // 2  # cries wolf in most monitors
    assert ours_alerts <= 5  # the binomial 99% bound at 5% (as in test_drift_null)
