"""Sequential drift detection: a two-sided CUSUM over each stream's nightly contrasts, alerts and open episodes.

The observations (``fairgate.monitoring.contrasts``): per stream (metric x slicing x group x component rate)
and night, the group-vs-reference gap minus the baseline's, with its standard error under "nothing changed".

**Detector.** A two-sided CUSUM on z = estimate / SE with reference value k = delta / 2, delta = min_change
over the stream's typical SE (median over its first nights): the CUSUM that is optimal for a shift of
min_change (Moustakides 1986). The decision interval h is set so that the probability of any false alarm
within ``horizon_nights`` across all the rule's streams is at most ``false_alarm_rate`` (Bonferroni: each
stream gets false_alarm_rate / streams), computed exactly with the Brook & Evans Markov chain. Every night
of a stream is compared with the same baseline, whose sampling error is therefore shared: the chain is
integrated over it (``cusum``), so a baseline much larger than a night (rho, its share of the variance, near
0) costs little, and a small one raises h and the delay, both reported. The shared error matters more the
longer the horizon: over N nights the nights' evidence grows like N while the baseline's stays fixed (at
k = 0.3, rho = 0.02 and 0.01 / 44 per stream, h is 33 over 90 nights and 95 over 365, and the median delay of
a min_change step 310 nights). So keep the baseline at least as large as the horizon's nights together, or the
horizon short; ``DriftScan.notes`` names the streams that would likely miss min_change. One alert per
episode: after an alarm the stream restarts and further alarms in the same direction confirm the change
without alerting again (which would mail the reviewers every night or two). The episode ends when the change
has gone away, detected the same way: a CUSUM of the nights' departures back from the alarmed change (same k
and h); the next alarm is then a new alert. Until then the episode is open (``DriftScan.episodes``): every
night's document names it, so an ongoing breach never reads as all-clear after its one alert.

``scan`` replays the stored observations (numbers, not rows): pure and deterministic, no state is kept. A
night observed twice (late labels rebuilt its cube) counts once, with the observation given last.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from typing import Any

import numpy as np

from fairgate.engine.labels import slicing_label, spelled
from fairgate.engine.text import fmt
from fairgate.monitoring import cusum
from fairgate.monitoring.contrasts import (
    MIN_EXPECTED_EVENTS,
    BaselineRates,
    BaselineSlicing,
    NightContrasts,
    Observation,
    baseline_rates,
    group_label,
    night_contrasts,
    night_observations,
)
from fairgate.policy.monitoring import Monitoring

__all__ = [  # the observations' names, re-exported: drift detection's one entry point
    "MIN_EXPECTED_EVENTS",
    "BaselineRates",
    "BaselineSlicing",
    "DriftAlert",
    "DriftRule",
    "DriftScan",
    "Episode",
    "NightContrasts",
    "Observation",
    "StreamScan",
    "baseline_rates",
    "drift_rules",
    "group_label",
    "night_contrasts",
    "night_observations",
    "scan",
    "stream_settings",
]
TYPICAL_SE_NIGHTS = 7  # k is fixed from the median SE of a stream's first nights, so replays keep it
METHOD = (
    "Two-sided CUSUM per stream (metric x slicing x group x component rate) on z = (night gap - baseline gap) / SE, "
    "k = min_change / (2 x typical SE), h from the Brook-Evans Markov chain integrated over the baseline's shared "
    "error so that P(any false alarm within horizon_nights) <= false_alarm_rate over the rule's streams (Bonferroni)"
)


@dataclass(frozen=True)
class DriftRule:
    """One alert rule's plain settings (from ``monitoring.alerts``): what is watched and how strictly."""

    metric: str
    min_change: float
    false_alarm_rate: float = 0.01
    horizon_nights: int = 365
    slicing: tuple[str, ...] | None = None  # None: every slicing

    def covers(self, observation: Observation) -> bool:
        """Whether the rule watches this observation's stream."""
        if observation.metric != self.metric:
            return False
        return self.slicing is None or observation.slicing == slicing_label(self.slicing)

    def describe(self) -> dict[str, object]:
        """The settings as plain values (for the monitoring document)."""
        return {
            "metric": self.metric,
            "slicing": list(self.slicing) if self.slicing is not None else None,
            "min_change": self.min_change,
            "false_alarm_rate": self.false_alarm_rate,
            "horizon_nights": self.horizon_nights,
        }


def drift_rules(monitoring: Monitoring) -> list[DriftRule]:
    """The policy's alert rules as the detector takes them: plain values."""
    return [
        DriftRule(
            metric=rule.metric,
            slicing=None if rule.slicing is None else tuple(rule.slicing),
            min_change=rule.min_change,
            false_alarm_rate=rule.false_alarm_rate,
            horizon_nights=rule.horizon_nights,
        )
        for rule in monitoring.alerts
    ]


@dataclass(frozen=True)
class DriftAlert:
    """A stream's CUSUM reached its threshold on ``night``: the change it estimates and a sentence."""

    stream: str
    metric: str
    slicing: str
    group: str
    night: date
    statistic: float
    threshold: float
    change: float  # the mean contrast over the nights since the alarming side last left 0
    detail: str
    component: str = ""
    direction: str = ""  # "up" or "down"


@dataclass(frozen=True)
class Episode:
    """A drift episode still open: the stream alerted on ``since`` and its change has not gone away since.

    It stays open every night until the recovery CUSUM clears it (the module docstring), so an ongoing breach is
    shown on each of its nights, not only on the night of its one alert.
    """

    stream: str
    metric: str
    slicing: str
    group: str
    component: str
    direction: str  # "up" or "down"
    since: date  # the night of the episode's alert
    change: float  # the change it alerted on
    last_night: date  # the stream's latest observed night (the episode is open as of then)
    confirmations: int  # later alarms in the same direction: the change persisting


@dataclass(frozen=True)
class StreamScan:
    """One stream replayed: its nights, contrasts, CUSUM path, settings and alarms."""

    stream: str
    metric: str
    slicing: str
    group: str
    component: str
    reference: str
    nights: list[date]
    estimate: list[float]
    standard_error: list[float]
    upper: list[float]
    lower: list[float]
    threshold: float
    k: float
    baseline_share: float  # rho as used (rounded up)
    predicted_delay: float  # median nights to detect a change of min_change (inf: not within the horizon)
    detection_probability: float  # P(detected within horizon_nights) for a change of min_change
    alerts: list[DriftAlert]
    episode: Episode | None = None  # the drift episode still open after the stream's last night
    alpha: float = 0.0  # the stream's share of its rule's false_alarm_rate (Bonferroni)
    rule: int = 0  # the index of the alert rule watching it

    @property
    def statistic(self) -> list[float]:
        """The larger of the two sides after each night (what is compared with the threshold)."""
        return [max(u, lo) for u, lo in zip(self.upper, self.lower, strict=True)]


@dataclass(frozen=True)
class DriftScan:
    """All streams of a history replayed under the alert rules, and every alarm (oldest first)."""

    streams: list[StreamScan]
    alerts: list[DriftAlert]
    rules: list[DriftRule]
    n_observations: int
    method: str = METHOD
    unwatched: list[str] = field(default_factory=list)  # streams no rule covers

    @property
    def notes(self) -> list[str]:
        """Streams that cannot be expected to catch a change of min_change within the horizon, and why."""
        weak = [s for s in self.streams if s.detection_probability < 0.5]
        if not weak:
            return []
        shared = max(s.baseline_share for s in weak)
        return [
            f"{len(weak)} of {len(self.streams)} drift streams would more likely than not miss a change of "
            f"min_change within horizon_nights (groups too small a night for it, or a baseline too small for the "
            f"horizon: its error is shared by every night, up to {shared:.0%} of a night's variance here). Use a "
            f"larger baseline (many nights' worth), a shorter horizon_nights, or a larger min_change. First: "
            f"{weak[0].stream}"
        ]

    def alerts_on(self, night: date) -> list[DriftAlert]:
        """The alarms raised on one night."""
        return [a for a in self.alerts if a.night == night]

    @property
    def episodes(self) -> list[Episode]:
        """The episodes still open after the last night replayed, oldest first."""
        return sorted((s.episode for s in self.streams if s.episode is not None), key=lambda e: (e.since, e.stream))


# ---------------------------------------------------------------------------------------------- detector
def scan(history: Sequence[Observation], settings: DriftRule | Sequence[DriftRule]) -> DriftScan:
    """Replay the stored nightly observations under the alert rules (see the module docstring)."""
    rules = [settings] if isinstance(settings, DriftRule) else list(settings)
    latest: dict[tuple[str, date], Observation] = {}
    for observation in history:  # a superseded night: the later observation replaces it
        latest[(observation.stream, observation.night)] = observation
    by_stream: dict[str, list[Observation]] = {}
    for observation in sorted(latest.values(), key=lambda o: (o.stream, o.night)):
        by_stream.setdefault(observation.stream, []).append(observation)
    streams: list[StreamScan] = []
    unwatched = []
    covered: dict[int, list[str]] = {i: [] for i in range(len(rules))}
    for name, observations in by_stream.items():
        index = next((i for i, rule in enumerate(rules) if rule.covers(observations[0])), None)
        if index is None:
            unwatched.append(name)
        else:
            covered[index].append(name)
    for index, rule in enumerate(rules):
        alpha = rule.false_alarm_rate / max(1, len(covered[index]))
        streams += [replace(_replay(by_stream[name], rule, alpha), rule=index) for name in covered[index]]
    alerts = sorted((a for s in streams for a in s.alerts), key=lambda a: (a.night, a.stream))
    return DriftScan(streams, alerts, rules, len(latest), METHOD, unwatched)


@dataclass(frozen=True)
class StreamSettings:
    """A stream's detector: k and the shift it is tuned for (in SEs), rho (rounded up) and h."""

    k: float
    delta: float
    rho: float
    h: float


def stream_settings(observations: Sequence[Observation], rule: DriftRule, alpha: float) -> StreamSettings:
    """The settings of a stream: k from its typical SE (first nights), rho its largest baseline share, h."""
    typical = statistics.median(o.standard_error for o in observations[:TYPICAL_SE_NIGHTS])
    delta = rule.min_change / typical
    k = cusum.round_k(delta / 2.0)
    rho = cusum.round_rho(max(o.baseline_share for o in observations))
    return StreamSettings(k, delta, rho, cusum.threshold(alpha, k, rule.horizon_nights, rho))


@dataclass
class _Walk:
    """The two-sided CUSUM of one stream stepping night by night, and its drift episode (the module docstring).

    ``alarmed`` is the direction of the open episode ("up"/"down"), "" when in control; ``level`` the change it
    alarmed on and ``recovery`` the CUSUM of the nights' departures back from it; ``since`` its alert's night.
    """

    k: float
    h: float
    upper: float = 0.0
    lower: float = 0.0
    up_run: list[float] = field(default_factory=list)
    down_run: list[float] = field(default_factory=list)
    alarmed: str = ""
    level: float = 0.0
    recovery: float = 0.0
    since: date | None = None
    confirmed: int = 0  # alarms in the episode's direction after its alert (the change persisting)

    def step(self, observation: Observation) -> tuple[float, float, tuple[str, float, list[float]] | None]:
        """One night: the two sides' values after it (before any restart) and its alarm, if a side reached h."""
        z = observation.z
        self.upper = max(0.0, self.upper + z - self.k)
        self.lower = max(0.0, self.lower - z - self.k)
        if self.alarmed:
            back = (self.level - observation.estimate) / observation.standard_error
            self.recovery = max(0.0, self.recovery + (back if self.alarmed == "up" else -back) - self.k)
            if self.recovery >= self.h:  # the change has gone away: the episode ends, the stream starts afresh
                self.alarmed, self.recovery, self.upper, self.lower, self.since = "", 0.0, 0.0, 0.0, None
                self.up_run, self.down_run = [], []
        # The estimates since each side last left 0: the excursion an alarm dates the change from.
        self.up_run = [*self.up_run, observation.estimate] if self.upper > 0 else []
        self.down_run = [*self.down_run, observation.estimate] if self.lower > 0 else []
        upper, lower = self.upper, self.lower
        if upper < self.h and lower < self.h:
            return upper, lower, None
        direction, statistic, run = ("up", upper, self.up_run) if upper >= lower else ("down", lower, self.down_run)
        self.upper = self.lower = 0.0  # restart after an alarm
        self.up_run, self.down_run = [], []
        return upper, lower, (direction, statistic, run)

    def open_episode(self, direction: str, change: float, night: date) -> bool:
        """Record an alarm: True when it opens a new episode (an alert), False when it confirms the open one."""
        if self.alarmed == direction:
            self.confirmed += 1
            return False
        self.alarmed, self.level, self.recovery, self.since, self.confirmed = direction, change, 0.0, night, 0
        return True


def _replay(observations: list[Observation], rule: DriftRule, alpha: float) -> StreamScan:
    settings = stream_settings(observations, rule, alpha)
    walk = _Walk(settings.k, settings.h)
    median_delay, detection = cusum.delay(walk.h, walk.k, settings.delta, rule.horizon_nights, settings.rho)
    upper_path: list[float] = []
    lower_path: list[float] = []
    alerts: list[DriftAlert] = []
    first = observations[0]
    for observation in observations:
        upper, lower, alarm = walk.step(observation)
        upper_path.append(upper)
        lower_path.append(lower)
        if alarm is None:
            continue
        direction, statistic, run = alarm
        change = float(np.mean(run))
        if walk.open_episode(direction, change, observation.night):
            detail = _detail(first, direction, change, len(run), statistic, walk.h)
            alerts.append(_alert(first, observation.night, statistic, walk.h, change, detail, direction))
    return StreamScan(
        **_identity(first),
        reference=first.reference,
        nights=[o.night for o in observations],
        estimate=[o.estimate for o in observations],
        standard_error=[o.standard_error for o in observations],
        upper=upper_path,
        lower=lower_path,
        threshold=walk.h,
        k=walk.k,
        baseline_share=settings.rho,
        predicted_delay=median_delay,
        detection_probability=detection,
        alerts=alerts,
        episode=_episode(first, walk, observations[-1].night),
        alpha=alpha,
    )


def _identity(first: Observation) -> dict[str, Any]:
    """The fields that name a stream (its metric, slicing, group and component), as every record of it carries them."""
    return {
        "stream": first.stream,
        "metric": first.metric,
        "slicing": first.slicing,
        "group": first.group,
        "component": first.component,
    }


def _alert(
    first: Observation, night: date, statistic: float, h: float, change: float, detail: str, direction: str
) -> DriftAlert:
    return DriftAlert(
        **_identity(first),
        night=night,
        statistic=statistic,
        threshold=h,
        change=change,
        detail=detail,
        direction=direction,
    )


def _episode(first: Observation, walk: _Walk, last: date) -> Episode | None:
    """The stream's episode still open after its last night (alerted, not yet cleared), or None."""
    if not walk.alarmed or walk.since is None:
        return None
    return Episode(
        **_identity(first),
        direction=walk.alarmed,
        since=walk.since,
        change=walk.level,
        last_night=last,
        confirmations=walk.confirmed,
    )


def _detail(first: Observation, direction: str, change: float, nights: int, statistic: float, h: float) -> str:
    verb = "rose" if direction == "up" else "fell"
    reference = f" vs {first.reference}" if first.reference else ""
    return (
        f"{spelled(str(first.component))} gap of {first.group}{reference} ({first.slicing}) {verb} by "
        f"{fmt(abs(change))} against the baseline, on average over the last {nights} night(s); "
        f"CUSUM {fmt(statistic, 2)} >= threshold {fmt(h, 2)}"
    )
