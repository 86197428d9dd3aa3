"""Whether each drift rule can catch its ``min_change`` within ``horizon_nights`` at the observed volume.

A rule is *under-powered* when its weakest stream (the one least likely to detect a step of min_change) would more
likely than not miss it within the horizon: the CUSUM's median delay for min_change is beyond the horizon
(``cusum.delay``). The rule is then named with the nightly volume it needs: a stream's variance is the night's
part, which falls like 1 / (people a night), plus the baseline's part, which does not. At f times tonight's
volume the stream's SE is sqrt(v_night / f + v_base); the detector is set up exactly as ``drift.stream_settings``
sets it (k from min_change over that SE, rho the baseline's share, h from the Brook-Evans chain at the stream's
false-alarm share), and f is the smallest on a grid of x1.25 steps whose detection probability within the horizon
reaches 1/2. When even 1,000 times the volume does not reach it the baseline's own error is what blocks: no
nightly volume suffices, and the fix is a larger baseline, a shorter horizon or a larger min_change.

**At policy load** (:func:`planned_powers`), before any night is observed, the same question is asked of a night
of the expected volume shaped like the baseline (its cells' counts scaled): the streams' SEs, k, rho and h are
then what the detector will set up on the first nights, so a rule that cannot be expected to alert is named
before it watches a year of nights in silence.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

import polars as pl

from fairgate.engine.cube import Cube
from fairgate.engine.labels import slicing_label
from fairgate.engine.metric_labels import metric_label
from fairgate.engine.text import fmt
from fairgate.monitoring import cusum
from fairgate.monitoring.contrasts import stream_label
from fairgate.monitoring.drift import (
    TYPICAL_SE_NIGHTS,
    DriftRule,
    DriftScan,
    StreamScan,
    drift_rules,
    night_observations,
    scan,
)
from fairgate.monitoring.windows import COUNT_COLUMNS
from fairgate.policy.core import Policy

MIN_DETECTION = 0.5  # detected within the horizon more likely than not
GRID_STEP = 1.25  # the volume factors tried: 1.25^i
MAX_FACTOR = 1000.0


@dataclass(frozen=True)
class RulePower:
    """One alert rule's power at the observed volume: its weakest stream and, if under-powered, what it needs."""

    metric: str
    slicing: tuple[str, ...] | None
    min_change: float
    horizon_nights: int
    stream: str  # the rule's weakest stream ("" when it watches none: every group too small every night)
    threshold: float  # its CUSUM threshold h (inf without a stream)
    peak: float  # its largest statistic so far
    predicted_delay: float  # median nights to detect min_change (inf: beyond the horizon)
    detection_probability: float  # P(min_change detected within horizon_nights) (0 without a stream)
    baseline_share: float  # the baseline's share of a night's variance (rho)
    volume_factor: float | None  # times the observed volume needed (under-powered only); None: no volume suffices

    @property
    def underpowered(self) -> bool:
        """The rule would more likely than not miss min_change within its horizon."""
        return self.detection_probability < MIN_DETECTION

    def sentence(self, rows_per_period: float, period: str) -> str:
        """The rule named with the volume it needs (``rows_per_period``: the labelled rows a period observed)."""
        name = metric_label(self.metric)
        where = f"{name} on {slicing_label(self.slicing)}" if self.slicing else f"{name} (every slicing)"
        if not self.stream:
            return (
                f"Under-powered drift rule: {where} watches no stream yet: on every {period} so far each of its "
                f"groups had too few people for a contrast (the detector's skipped list says how many each needs), "
                f"so it cannot alert at about {rows_per_period:,.0f} labelled rows a {period}. Monitor more rows a "
                f"{period} (a longer period), or watch a slicing with larger groups."
            )
        delay = "beyond the horizon" if not math.isfinite(self.predicted_delay) else fmt(self.predicted_delay, 0)
        head = (
            f"Under-powered drift rule: {where} cannot be expected to catch a change of {self.min_change:g} within "
            f"{self.horizon_nights} {period}s at about {rows_per_period:,.0f} labelled rows a {period} (weakest "
            f"stream {stream_label(self.stream)}: threshold {fmt(self.threshold, 1)}, statistic so far at most "
            f"{fmt(self.peak, 1)}, "
            f"predicted delay {delay}, {self.detection_probability:.0%} chance to detect within the horizon)"
        )
        if self.volume_factor is None:
            return (
                f"{head}; no {period}ly volume suffices: the baseline's own error ({self.baseline_share:.0%} of a "
                f"{period}'s variance) is shared by every {period}. Use a larger baseline, a shorter horizon_nights "
                "or a larger min_change."
            )
        needed = math.ceil(self.volume_factor * rows_per_period)
        return (
            f"{head}; it needs about {needed:,} labelled rows a {period} ({self.volume_factor:.3g} times as many), "
            "or a larger min_change, or a shorter horizon_nights."
        )


def rule_powers(result: DriftScan) -> list[RulePower]:
    """Each rule's power from its weakest stream.

    A rule without any stream (every group too small on every night so far) cannot alert at all: it is named too.
    """
    out = []
    for index, rule in enumerate(result.rules):
        streams = [s for s in result.streams if s.rule == index]
        if not streams:
            out.append(
                RulePower(
                    rule.metric,
                    rule.slicing,
                    rule.min_change,
                    rule.horizon_nights,
                    "",
                    math.inf,
                    0.0,
                    math.inf,
                    0.0,
                    0.0,
                    None,
                )
            )
            continue
        weakest = min(streams, key=lambda s: (s.detection_probability, s.stream))
        factor = None if weakest.detection_probability >= MIN_DETECTION else volume_factor(weakest, rule)
        out.append(
            RulePower(
                metric=rule.metric,
                slicing=rule.slicing,
                min_change=rule.min_change,
                horizon_nights=rule.horizon_nights,
                stream=weakest.stream,
                threshold=weakest.threshold,
                peak=max(weakest.statistic, default=0.0),
                predicted_delay=weakest.predicted_delay,
                detection_probability=weakest.detection_probability,
                baseline_share=weakest.baseline_share,
                volume_factor=factor,
            )
        )
    return out


def volume_factor(stream: StreamScan, rule: DriftRule) -> float | None:
    """The smallest factor of the observed nightly volume at which the stream would likely detect min_change.

    On the x1.25 grid from 1; None when even ``MAX_FACTOR`` times the volume would more likely than not miss it.
    """
    typical = statistics.median(stream.standard_error[:TYPICAL_SE_NIGHTS])
    share = stream.baseline_share
    night, base = typical**2 * (1.0 - share), typical**2 * share
    grid = [GRID_STEP**i for i in range(math.ceil(math.log(MAX_FACTOR) / math.log(GRID_STEP)) + 1)]
    if not _detects(grid[-1], night, base, rule, stream.alpha):
        return None
    low, high = 0, len(grid) - 1  # detects at grid[high]; the smallest such index by bisection
    while low < high:
        middle = (low + high) // 2
        if _detects(grid[middle], night, base, rule, stream.alpha):
            high = middle
        else:
            low = middle + 1
    return grid[high]


def _detects(factor: float, night: float, base: float, rule: DriftRule, alpha: float) -> bool:
    """Whether the stream, with its night's variance divided by ``factor``, detects min_change in time."""
    se = math.sqrt(night / factor + base)
    delta = rule.min_change / se
    k = cusum.round_k(delta / 2.0)
    rho = cusum.round_rho(base / se**2)
    h = cusum.threshold(alpha, k, rule.horizon_nights, rho)
    return cusum.delay(h, k, delta, rule.horizon_nights, rho)[1] >= MIN_DETECTION


def underpowered(powers: Sequence[RulePower]) -> list[RulePower]:
    """The rules that would more likely than not miss their min_change within the horizon."""
    return [p for p in powers if p.underpowered]


def planned_powers(
    baseline: Cube, policy: Policy, rules: Sequence[DriftRule], rows_per_period: float
) -> list[RulePower]:
    """Each rule's power before any night: a night of ``rows_per_period`` rows composed like the baseline.

    The night's cube is the baseline's with every count scaled (Kish sizes scale with it), observed once with
    no change; the detector settings and detection probabilities are those of :func:`rule_powers`.
    """
    factor = rows_per_period / max(baseline.n_rows, 1)
    cells = baseline.cells.with_columns(
        (pl.col(c) * factor).round(9).cast(baseline.cells.schema[c]) for c in COUNT_COLUMNS
    )
    night = Cube(
        cells, baseline.attributes, baseline.calibration_bins, baseline.has_scores, None, {}, baseline.membership
    )
    observations = night_observations(night, baseline, policy, date(2000, 1, 1))
    return rule_powers(scan(observations, list(rules)))


def planned_sentence(power: RulePower, rows_per_period: float, period: str, source: str) -> str:
    """A rule named at policy load as too weak at the expected volume (``source`` says where the volume comes from)."""
    where = f"{power.metric} on {' × '.join(power.slicing)}" if power.slicing else f"{power.metric} (every slicing)"
    head = (
        f"under-powered drift rule: {where} cannot be expected to catch a change of {power.min_change:g} within "
        f"{power.horizon_nights} {period}s at {rows_per_period:,.0f} labelled rows a {period} ({source})"
    )
    if not power.stream:
        return f"{head}: at that volume each of its groups has too few people or events for a contrast"
    chance = f"{power.detection_probability:.0%} chance to detect within the horizon, weakest stream {power.stream}"
    if power.volume_factor is None:
        return (
            f"{head}: {chance}; no {period}ly volume suffices (the baseline's own error is shared by every "
            f"{period}): use a larger baseline, a shorter horizon_nights or a larger min_change"
        )
    needed = math.ceil(power.volume_factor * rows_per_period)
    return f"{head}: {chance}; it needs about {needed:,} labelled rows a {period}, or a larger min_change"


def load_warnings(policy: Policy, baseline: Cube | None) -> list[str]:
    """At policy load: each alert rule that cannot be expected to catch its min_change at the known volume.

    The volume is ``monitoring.expected_rows_per_period`` when stated, else the deployment audit's row count (a
    rule too weak even then is surely too weak); the baseline cube gives the groups' composition. Without a
    baseline cube yet, one line says the check waits for the first night.
    """
    monitoring = policy.monitoring
    if monitoring is None or not monitoring.alerts:
        return []
    stated = monitoring.expected_rows_per_period
    if baseline is None:
        volume = f"{stated:,} rows a {monitoring.period} are expected" if stated else "no volume is known"
        return [
            f"the drift rules' power is not checked at load: {volume} but the baseline's groups are not known "
            "before the first night (a reference_window baseline, or no --model-name); each night names a rule "
            "too weak for its min_change"
        ]
    if stated:
        volume_rows, source = float(stated), "monitoring.expected_rows_per_period"
    else:
        volume_rows = float(baseline.n_rows)
        source = "the deployment audit's row count, as no monitoring.expected_rows_per_period is stated"
    powers = planned_powers(baseline, policy, drift_rules(monitoring), volume_rows)
    return [planned_sentence(p, volume_rows, monitoring.period, source) for p in underpowered(powers)]
