"""Sequential drift detection: one unbiased contrast per night and stream, and a two-sided CUSUM over the nights.

**Streams.** For each judged metric whose bases are rates (selection rate for demographic parity and disparate
impact, TPR for equal opportunity, TPR and FPR for equalized odds, PPV for predictive parity, ...), each slicing
the audit plans (attributes, pairs, triples) and each group other than the slicing's reference group, a stream
watches one component rate: the night's group-vs-reference gap minus the baseline's gap (a ratio minus the
baseline's ratio for ratio metrics). Why not the judged summary itself (max - min over groups)? On a small
nightly sample the noise widens the spread, so a night's range is biased upward against a large baseline's
range and a detector on it would alarm on data that did not change (``tests/monitoring/test_drift_unbiased``).
Each contrast is a difference of unbiased rate estimates, so it is centred at 0 when nothing changed.

**Standard errors.** Night and baseline are independent draws, so the contrast's variance is the sum of the
four rates' variances (group and reference, night and baseline). Each is binomial, p (1 - p) / n, in Kish
effective units under weights, with p the *baseline's* rate: it is the variance under "nothing changed", which
the large baseline pins down, whereas the night's own rate from a few dozen events would make the SE noisy
and correlated with the estimate (z heavy-tailed; infinite at a night rate of 0 or 1). It equals the standard
deviation of the engine's cube bootstrap replicates (``tests/monitoring/test_drift_observations``). A group
is skipped that night (and reported) unless the rates rest on at least ``statistics.min_events`` people and
at least 5 expected events of each kind at the baseline's rate (the normal approximation's usual rule).

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
and h); the next alarm is then a new alert.

``scan`` replays the stored observations (numbers, not rows): pure and deterministic, no state is kept. A
night observed twice (late labels rebuilt its cube) counts once, with the observation given last.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date

import numpy as np
import polars as pl

from fairgate.engine.cube import PRED, TRUE, WEIGHT, Cube
from fairgate.engine.labels import slicing_label
from fairgate.engine.metrics import GroupCounts, Rate, SummaryOf, count_metrics, policy_metric
from fairgate.engine.slicing import GROUP, plan_slicings, reference_group_index
from fairgate.monitoring import cusum
from fairgate.policy.core import Policy

_SQUARES = "__squares"
MIN_EXPECTED_EVENTS = 5  # expected events of each kind at the baseline rate for the normal approximation
TYPICAL_SE_NIGHTS = 7  # k is fixed from the median SE of a stream's first nights, so replays keep it
METHOD = (
    "Two-sided CUSUM per stream (metric x slicing x group x component rate) on z = (night gap - baseline gap) / SE, "
    "k = min_change / (2 x typical SE), h from the Brook-Evans Markov chain integrated over the baseline's shared "
    "error so that P(any false alarm within horizon_nights) <= false_alarm_rate over the rule's streams (Bonferroni)"
)


@dataclass(frozen=True)
class Observation:
    """One night's unbiased contrast against the baseline for one stream.

    ``estimate`` is the night's group-vs-reference gap (ratio for ratio metrics) of ``component`` minus the
    baseline's; ``standard_error`` its SE from the two independent cubes; ``baseline_share`` the part of its
    variance that comes from the baseline (shared by every night of the stream; store it with the rest).
    """

    stream: str
    metric: str
    slicing: str
    group: str
    night: date
    estimate: float
    standard_error: float
    component: str = ""
    reference: str = ""
    baseline_share: float = 0.0

    @property
    def z(self) -> float:
        """The standardized observation."""
        return self.estimate / self.standard_error


@dataclass(frozen=True)
class NightContrasts:
    """One night's observations and the streams left out that night, each with its reason."""

    observations: list[Observation]
    skipped: list[str]


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


# ------------------------------------------------------------------------------------------- observations
def group_label(group: dict[str, str]) -> str:
    """A group's display label: its values in slicing order, joined with ", "."""
    return ", ".join(group.values())


def night_observations(
    night_cube: Cube, baseline_cube: Cube | BaselineRates, policy: Policy, night: date
) -> list[Observation]:
    """One night's observations: every stream of every judged rate metric (see the module docstring)."""
    return night_contrasts(night_cube, baseline_cube, policy, night).observations


@dataclass(frozen=True)
class BaselineSlicing:
    """The baseline's groups (value tuples, sorted), their counts and the reference group of one slicing."""

    slicing: tuple[str, ...]
    groups: list[tuple[str, ...]]
    counts: GroupCounts
    reference: int


@dataclass(frozen=True)
class BaselineRates:
    """The baseline's side of every stream, counted once and reused for every night compared with it."""

    slicings: list[BaselineSlicing]


def baseline_rates(baseline_cube: Cube, policy: Policy) -> BaselineRates:
    """Count the baseline cube for every slicing the audit plans (the population has no groups to compare)."""
    out = []
    for slicing in plan_slicings(baseline_cube, policy):
        if not slicing:
            continue
        groups, counts = _slicing_counts(baseline_cube, slicing)
        ref = reference_group_index([_group(slicing, g) for g in groups], slicing, policy, counts.n)
        if ref is not None:
            out.append(BaselineSlicing(slicing, groups, counts, ref))
    return BaselineRates(out)


def _watched(policy: Policy) -> tuple[list[tuple[str, SummaryOf]], list[str]]:
    """The judged metrics summarising rates (watched), and why each other judged metric is not."""
    metrics = count_metrics()
    watched: list[tuple[str, SummaryOf]] = []
    unwatched: list[str] = []
    for rule in policy.metrics:
        pm = policy_metric(rule.name)
        if isinstance(pm, SummaryOf) and all(isinstance(metrics.get(base), Rate) for base in pm.bases):
            watched.append((rule.name, pm))
        else:
            unwatched.append(f"{rule.name}: not a difference or ratio of rates; its drift is not watched")
    return watched, unwatched


def night_contrasts(night_cube: Cube, baseline: Cube | BaselineRates, policy: Policy, night: date) -> NightContrasts:
    """One night's observations and the streams skipped that night (too few events), with reasons."""
    if isinstance(baseline, Cube):
        baseline = baseline_rates(baseline, policy)
    metrics = count_metrics()
    watched, skipped = _watched(policy)
    observations: list[Observation] = []
    min_size = policy.intersectional_analysis.min_group_size
    for base_slicing in baseline.slicings:
        slicing, base_groups, base_counts, ref = (
            base_slicing.slicing,
            base_slicing.groups,
            base_slicing.counts,
            base_slicing.reference,
        )
        night_groups, night_counts = _slicing_counts(night_cube, slicing)
        night_index = {g: i for i, g in enumerate(night_groups)}
        night_of = [night_index.get(g) for g in base_groups]
        labels = [group_label(_group(slicing, g)) for g in base_groups]
        sizes = base_counts.n_effective
        for name, pm in watched:
            for base in pm.bases:
                rate = metrics[base]
                assert isinstance(rate, Rate)
                contrasts = _contrasts(
                    rate, base_counts, night_counts, ref, night_of, pm.summary, policy.statistics.min_events
                )
                for g, result in enumerate(contrasts):
                    if g == ref or sizes[g] < min_size:
                        continue  # below min_group_size in the baseline: never audited, never watched
                    stream = f"{name} · {slicing_label(slicing)} · {labels[g]} vs {labels[ref]} · {base}"
                    if isinstance(result, str):
                        skipped.append(f"{stream}: {result}")
                        continue
                    estimate, se, share = result
                    observations.append(
                        Observation(
                            stream=stream,
                            metric=name,
                            slicing=slicing_label(slicing),
                            group=labels[g],
                            night=night,
                            estimate=estimate,
                            standard_error=se,
                            component=base,
                            reference=labels[ref],
                            baseline_share=share,
                        )
                    )
    return NightContrasts(observations, skipped)


def _group(slicing: tuple[str, ...], values: tuple[str, ...]) -> dict[str, str]:
    return dict(zip(slicing, values, strict=True))


def _slicing_counts(cube: Cube, slicing: tuple[str, ...]) -> tuple[list[tuple[str, ...]], GroupCounts]:
    """The groups of a slicing (value tuples, sorted) and their confusion counts, one group-by of the cube.

    With weights, the squared-weight sums come along (per row or per person, as the engine picks them), so
    rates' trials are Kish effective sizes as in the audit. Calibration bins are not needed by rates.
    """
    keys = list(slicing)
    squares = cube.squares_column(slicing)
    cells = (
        cube.cells.group_by([*keys, TRUE, PRED])
        .agg(pl.col(WEIGHT).sum(), pl.col(squares).sum().alias(_SQUARES))
        .sort([*keys, TRUE, PRED])
    )
    groups = cells.select(keys).unique(maintain_order=True)
    index = cells.select(keys).join(groups.with_row_index(GROUP), on=keys, maintain_order="left")[GROUP].to_numpy()
    outcome = cells[TRUE].to_numpy().astype(np.int64) * 2 + cells[PRED].to_numpy().astype(np.int64)
    size = groups.height * 4
    flat = index.astype(np.int64) * 4 + outcome
    weight = np.bincount(flat, weights=cells[WEIGHT].to_numpy(), minlength=size).reshape(-1, 4)
    squared = np.bincount(flat, weights=cells[_SQUARES].to_numpy(), minlength=size).reshape(-1, 4)
    no_bins = np.zeros((groups.height, 1))
    confusion = {"tn": 0, "fp": 1, "fn": 2, "tp": 3}  # 2 * y_true + y_pred
    sq = {f"{name}_sq": squared[:, i] for name, i in confusion.items()} if cube.weighted else {}
    counts = GroupCounts(
        **{name: weight[:, i] for name, i in confusion.items()},
        bin_n=no_bins,
        bin_positive=no_bins,
        bin_score=no_bins,
        **sq,
    )
    return [tuple(str(v) for v in row) for row in groups.iter_rows()], counts


def _contrasts(
    rate: Rate,
    base: GroupCounts,
    night: GroupCounts,
    ref: int,
    night_of: list[int | None],
    summary: str,
    min_events: int,
) -> list[tuple[float, float, float] | str]:
    """Per baseline group: (estimate, SE, baseline variance share) of its contrast, or why it is skipped."""
    b_success, b_trials = (np.asarray(a, dtype=float) for a in rate.fraction(base))
    n_success, n_trials = (np.asarray(a, dtype=float) for a in rate.fraction(night))
    with np.errstate(divide="ignore", invalid="ignore"):
        p_base = np.where(b_trials > 0, b_success / np.where(b_trials > 0, b_trials, 1.0), np.nan)
    out: list[tuple[float, float, float] | str] = []
    for g in range(len(night_of)):
        problem = _problem(g, ref, night_of, p_base, n_trials, rate, min_events)
        if problem is not None:
            out.append(problem)
            continue
        ng, nr = night_of[g], night_of[ref]
        assert ng is not None
        assert nr is not None
        p_night_g, p_night_r = n_success[ng] / n_trials[ng], n_success[nr] / n_trials[nr]
        var_g = p_base[g] * (1 - p_base[g])
        var_r = p_base[ref] * (1 - p_base[ref])
        if summary == "ratio":
            if p_night_r <= 0.0:
                out.append(f"the reference group's {rate.name} is 0 tonight: the ratio is undefined")
                continue
            # Delta method for p_g / p_ref around the baseline rates.
            ratio_b = p_base[g] / p_base[ref]
            estimate = p_night_g / p_night_r - ratio_b
            scale_g, scale_r = ratio_b**2 / p_base[g] ** 2, ratio_b**2 / p_base[ref] ** 2
        else:
            estimate = (p_night_g - p_night_r) - (p_base[g] - p_base[ref])
            scale_g = scale_r = 1.0
        night_var = scale_g * var_g / n_trials[ng] + scale_r * var_r / n_trials[nr]
        base_var = scale_g * var_g / b_trials[g] + scale_r * var_r / b_trials[ref]
        total = night_var + base_var
        out.append((float(estimate), math.sqrt(total), float(base_var / total)))
    return out


def _problem(
    g: int,
    ref: int,
    night_of: list[int | None],
    p_base: np.ndarray,
    n_trials: np.ndarray,
    rate: Rate,
    min_events: int,
) -> str | None:
    """Why group g's contrast cannot be computed tonight (None when it can)."""
    for who, i in (("the group", g), ("the reference group", ref)):
        p = p_base[i]
        if not np.isfinite(p) or p <= 0.0 or p >= 1.0:
            return f"{who}'s baseline {rate.name} is {p:.3g}: no variation to compare against"
        j = night_of[i]
        trials = 0.0 if j is None else float(n_trials[j])
        needed = max(float(min_events), MIN_EXPECTED_EVENTS / min(p, 1 - p))
        if trials < needed:
            return (
                f"{who} has {trials:.0f} people tonight for {rate.name} (needs {math.ceil(needed)}: at least "
                f"{MIN_EXPECTED_EVENTS} expected events of each kind at the baseline rate {p:.3f})"
            )
    return None


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
        streams += [_replay(by_stream[name], rule, alpha) for name in covered[index]]
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


def _replay(observations: list[Observation], rule: DriftRule, alpha: float) -> StreamScan:
    settings = stream_settings(observations, rule, alpha)
    k, h = settings.k, settings.h
    median_delay, detection = cusum.delay(h, k, settings.delta, rule.horizon_nights, settings.rho)
    upper_path: list[float] = []
    lower_path: list[float] = []
    alerts: list[DriftAlert] = []
    upper = lower = 0.0
    up_run: list[float] = []
    down_run: list[float] = []
    first = observations[0]
    alarmed = ""  # the direction of the current episode ("up"/"down"), "" when in control
    level = recovery = 0.0  # the alarmed change, and the CUSUM of the nights' departures back from it
    for observation in observations:
        z = observation.z
        upper = max(0.0, upper + z - k)
        lower = max(0.0, lower - z - k)
        if alarmed:
            back = (level - observation.estimate) / observation.standard_error
            recovery = max(0.0, recovery + (back if alarmed == "up" else -back) - k)
            if recovery >= h:  # the change has gone away: the episode ends, the stream starts afresh
                alarmed, recovery, upper, lower = "", 0.0, 0.0, 0.0
                up_run, down_run = [], []
        # The estimates since each side last left 0: the excursion an alarm dates the change from.
        up_run = [*up_run, observation.estimate] if upper > 0 else []
        down_run = [*down_run, observation.estimate] if lower > 0 else []
        upper_path.append(upper)
        lower_path.append(lower)
        if upper >= h or lower >= h:
            direction, statistic, run = ("up", upper, up_run) if upper >= lower else ("down", lower, down_run)
            change = float(np.mean(run))
            upper = lower = 0.0  # restart after an alarm
            up_run, down_run = [], []
            if alarmed == direction:
                continue  # the same change persisting: already alerted in this episode
            alarmed, level, recovery = direction, change, 0.0
            alerts.append(
                DriftAlert(
                    stream=first.stream,
                    metric=first.metric,
                    slicing=first.slicing,
                    group=first.group,
                    night=observation.night,
                    statistic=statistic,
                    threshold=h,
                    change=change,
                    detail=_detail(first, direction, change, len(run), statistic, h),
                    component=first.component,
                    direction=direction,
                )
            )
    return StreamScan(
        stream=first.stream,
        metric=first.metric,
        slicing=first.slicing,
        group=first.group,
        component=first.component,
        reference=first.reference,
        nights=[o.night for o in observations],
        estimate=[o.estimate for o in observations],
        standard_error=[o.standard_error for o in observations],
        upper=upper_path,
        lower=lower_path,
        threshold=h,
        k=k,
        baseline_share=settings.rho,
        predicted_delay=median_delay,
        detection_probability=detection,
        alerts=alerts,
    )


def _detail(first: Observation, direction: str, change: float, nights: int, statistic: float, h: float) -> str:
    verb = "rose" if direction == "up" else "fell"
    reference = f" vs {first.reference}" if first.reference else ""
    return (
        f"{first.component} gap of {first.group}{reference} ({first.slicing}) {verb} by {abs(change):.3f} against "
        f"the baseline, on average over the last {nights} night(s); CUSUM {statistic:.2f} >= threshold {h:.2f}"
    )
