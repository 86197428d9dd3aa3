"""Under-powered drift rules are named with the volume they need (``fairgate.monitoring.power``).

At the needed volume the detector, set up exactly as the nightly scan sets it, would catch min_change within the
horizon more likely than not, and one grid step below it would not; a rule whose baseline is too small for its
horizon is told that no nightly volume suffices; a rule without any stream is named too.
"""

from __future__ import annotations

import dataclasses
import math
from datetime import date, timedelta

from fairgate.monitoring import cusum
from fairgate.monitoring.drift import DriftRule, Observation, scan
from fairgate.monitoring.power import GRID_STEP, rule_powers, underpowered

NIGHT = date(2026, 1, 1)
RULE = DriftRule("equal_opportunity_difference", min_change=0.1, false_alarm_rate=0.01, horizon_nights=365)


def _stream(se: float, share: float, nights: int = 4) -> list[Observation]:
    return [
        Observation("s", RULE.metric, "race", "b", NIGHT + timedelta(days=i), 0.0, se, "true_positive_rate", "a", share)
        for i in range(nights)
    ]


def _detection(se: float, share: float, factor: float, alpha: float) -> float:
    night, base = se**2 * (1 - share), se**2 * share
    total = math.sqrt(night / factor + base)
    k, rho = cusum.round_k(RULE.min_change / total / 2), cusum.round_rho(base / total**2)
    return cusum.delay(cusum.threshold(alpha, k, RULE.horizon_nights, rho), k, RULE.min_change / total, 365, rho)[1]


def test_a_weak_rule_is_named_with_the_volume_it_needs() -> None:
    result = scan(_stream(0.4, 0.002), RULE)  # about 90 rows a night: a min_change of 0.1 is a quarter of an SE
    (power,) = underpowered(rule_powers(result))
    stream = result.streams[0]
    assert power.detection_probability == stream.detection_probability < 0.5
    assert power.threshold == stream.threshold
    assert power.volume_factor is not None
    assert power.volume_factor > 1
    assert _detection(0.4, stream.baseline_share, power.volume_factor, stream.alpha) >= 0.5
    assert _detection(0.4, stream.baseline_share, power.volume_factor / GRID_STEP, stream.alpha) < 0.5
    text = power.sentence(90, "night")
    assert text.startswith("Under-powered drift rule: Equal opportunity difference (every slicing) cannot be expected")
    assert f"it needs about {math.ceil(power.volume_factor * 90):,} labelled rows a night" in text
    assert "threshold" in text


def test_a_baseline_too_small_for_the_horizon_blocks_any_volume() -> None:
    (power,) = underpowered(rule_powers(scan(_stream(0.4, 0.05), RULE)))  # min_change ~ 1 baseline SE, 365 nights
    assert power.volume_factor is None
    assert "no nightly volume suffices" in power.sentence(90, "night")
    assert "larger baseline" in power.sentence(90, "night")


def test_a_strong_rule_is_not_named_and_a_rule_without_streams_is() -> None:
    assert underpowered(rule_powers(scan(_stream(0.02, 0.01), RULE))) == []  # 5 SEs: caught in a few nights
    other = dataclasses.replace(RULE, metric="demographic_parity_difference")
    powers = rule_powers(scan(_stream(0.02, 0.01), [RULE, other]))
    (empty,) = underpowered(powers)
    assert empty.metric == "demographic_parity_difference"
    assert empty.stream == ""
    assert "watches no stream yet" in empty.sentence(90, "week")
