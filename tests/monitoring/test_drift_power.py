"""Under-powered drift rules are named with the volume they need (``fairgate.monitoring.power``).

At the needed volume the detector, set up exactly as the nightly scan sets it, would catch min_change within the
horizon more likely than not, and one grid step below it would not; a rule whose baseline is too small for its
horizon is told that no nightly volume suffices; a rule without any stream is named too.
"""

from __future__ import annotations

import dataclasses
import math
from datetime import date, timedelta

import numpy as np
import polars as pl

import fairgate
from fairgate.monitoring import cusum
from fairgate.monitoring.drift import DriftRule, Observation, scan
from fairgate.monitoring.power import GRID_STEP, load_warnings, rule_powers, underpowered
from fairgate.monitoring.windows import cells_cube

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


# ------------------------------------------------------------------------------------------ at policy load
LOAD_POLICY = """\
fairness_checker:
  sensitive_attributes: [{{name: race, values: [a, b], reference_group: a}}]
  metrics: [{{name: equal_opportunity_difference, threshold: 0.1}}]
  monitoring:
    {volume}
    alerts: [{{metric: equal_opportunity_difference, min_change: 0.1, horizon_nights: {horizon}}}]
"""


def _baseline_cube(rows: int, policy: fairgate.Policy) -> fairgate.Cube:
    rng = np.random.default_rng(7)
    y_true = rng.random(rows) < 0.5
    frame = pl.DataFrame(
        {
            "race": rng.choice(["a", "b"], rows),
            "y_true": y_true.astype(int),
            "y_pred": (rng.random(rows) < np.where(y_true, 0.7, 0.3)).astype(int),
        }
    )
    return fairgate.build_cube(frame, policy)


def _load_policy(volume: str, horizon: int = 365) -> fairgate.Policy:
    return fairgate.Policy.from_yaml(LOAD_POLICY.format(volume=volume, horizon=horizon))


def test_a_rule_too_weak_at_the_stated_volume_is_named_at_load() -> None:
    policy = _load_policy("expected_rows_per_period: 90", horizon=14)
    cells = _baseline_cube(20_000, policy).cells.to_dicts()  # as the trail records the deployment audit
    (line,) = load_warnings(policy, cells_cube(cells, policy))
    assert line.startswith("under-powered drift rule: equal_opportunity_difference (every slicing) cannot be expected")
    assert "within 14 days at 90 labelled rows a day (monitoring.expected_rows_per_period)" in line
    needed = int(line.rpartition("it needs about ")[2].split()[0].replace(",", ""))
    assert needed > 90
    # with somewhat more than the volume it names, the same check is quiet (the rule's SEs are then computed
    # from that volume's own counts, not scaled from tonight's, hence the margin)
    louder = _load_policy(f"expected_rows_per_period: {round(needed * 1.3)}", horizon=14)
    assert load_warnings(louder, cells_cube(cells, policy)) == []


def test_a_strong_rule_is_not_named_and_the_audit_volume_is_the_fallback() -> None:
    policy = _load_policy("expected_rows_per_period: 2000", horizon=30)
    baseline = _baseline_cube(20_000, policy)
    assert load_warnings(policy, baseline) == []  # about 500 positives a group a night: 0.1 is 3 SEs
    fallback = _load_policy("recipients: null", horizon=30)
    assert load_warnings(fallback, _baseline_cube(20_000, fallback)) == []  # at the audit's 20,000 rows a night
    tiny = _baseline_cube(400, fallback)
    (line,) = load_warnings(fallback, tiny)
    assert "at 400 labelled rows a day (the deployment audit's row count" in line


def test_without_a_baseline_the_check_says_what_it_lacks() -> None:
    (line,) = load_warnings(_load_policy("recipients: null"), None)
    assert "not checked at load: no volume is known" in line
    (stated,) = load_warnings(_load_policy("expected_rows_per_period: 500"), None)
    assert "500 rows a day are expected" in stated
    quiet = fairgate.Policy.from_yaml(
        LOAD_POLICY.format(volume="period: day", horizon=30).replace(
            "    alerts: [{metric: equal_opportunity_difference, min_change: 0.1, horizon_nights: 30}]\n", ""
        )
    )
    assert load_warnings(quiet, None) == []
