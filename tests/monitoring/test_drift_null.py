"""No cry wolf: 90 simulated stable nights raise no alert in at least (1 - false_alarm_rate) of the monitors.

Each monitor is a fresh baseline (100 nights' worth) and 90 nightly cubes built by ``fairgate.build_cube`` from
generated rows (``bench/drift_null.py``), 44 streams under three alert rules. The test can fail: the same
histories under a detector whose threshold is too low (the rule's rate given to every stream, no Bonferroni
split) alert in most monitors, far above the bound.
"""

from __future__ import annotations

import dataclasses

import pytest
from drift_sim import MIN_CHANGE, SIM, stable_monitors
from scipy import stats

from fairgate.monitoring.drift import scan

MONITORS = 30
FALSE_ALARM_RATE = 0.05


def _bound(monitors: int, rate: float) -> int:
    """Most monitors with an alert a detector at ``rate`` shows, bar a 1% chance: the binomial's 99% quantile."""
    return int(stats.binom.ppf(0.99, monitors, rate))


@pytest.mark.slow
def test_stable_nights_raise_no_alert_at_the_stated_rate() -> None:
    monitors = stable_monitors(MONITORS)
    rules = SIM.rules(MIN_CHANGE, FALSE_ALARM_RATE)
    alerted = sum(bool(scan(m.history, rules).alerts) for m in monitors)  # type: ignore[attr-defined]
    bound = _bound(MONITORS, FALSE_ALARM_RATE)  # 5 of 30
    assert alerted <= bound

    # The same histories, every stream given the whole rate: thresholds too low, and the test catches it.
    streams = len(scan(monitors[0].history, rules).streams)  # type: ignore[attr-defined]
    per_rule = [
        dataclasses.replace(rule, false_alarm_rate=min(0.49, FALSE_ALARM_RATE * streams / len(rules))) for rule in rules
    ]
    too_low = sum(bool(scan(m.history, per_rule).alerts) for m in monitors)  # type: ignore[attr-defined]
    assert too_low > bound
