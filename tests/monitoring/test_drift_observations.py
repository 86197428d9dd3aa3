"""Nightly observations (``night_contrasts``) and the replay (``scan``): what they contain and how they behave.

The standard errors are checked against the engine's own cube bootstrap; the counts against the audit's.
"""

from __future__ import annotations

import dataclasses
import re
from datetime import date, timedelta

import numpy as np
import polars as pl
import pytest
from drift_sim import SIM

import fairgate
from fairgate.engine.bootstrap import slicing_seed
from fairgate.engine.slicing import bootstrap_group_counts, slicing_groups
from fairgate.monitoring.drift import (
    DriftRule,
    Observation,
    baseline_rates,
    night_contrasts,
    night_observations,
    scan,
)
from fairgate.monitoring.headline import headline
from tasks.monitor import episode_records

NIGHT = date(2026, 3, 1)


@pytest.fixture(scope="module")
def monitor() -> object:
    return SIM.simulate(99, night=3000, baseline_nights=20)


def test_nightly_cubes_equal_build_cube_of_the_night(monitor: object) -> None:
    rng = np.random.default_rng(1)
    sizes = np.array([500] * SIM.NIGHTS)
    which = np.repeat(np.arange(SIM.NIGHTS), sizes)
    frame = SIM.rows(rng, int(sizes.sum()))
    cubes = SIM.nightly_cubes(frame, which)
    for night in (0, 44, 89):
        alone = fairgate.build_cube(frame.filter(pl.Series(which == night)), SIM.POLICY)
        assert cubes[night].cells.equals(alone.cells)
        assert cubes[night].attributes == alone.attributes


def test_streams_cover_each_group_and_component(monitor: object) -> None:
    observations = [o for o in monitor.history if o.night == SIM.DAYS[0]]  # type: ignore[attr-defined]
    streams = {o.stream for o in observations}
    # race: 3 groups vs r0, sex: 1 vs f, race x sex: 7 vs (r0, f); EO 1 rate, DP 1, EOdds 2 -> 11 x 4.
    assert len(streams) == 44
    eo = [o for o in observations if o.metric == "equal_opportunity_difference" and o.slicing == "race"]
    assert {(o.group, o.reference, o.component) for o in eo} == {
        (g, "r0", "true_positive_rate") for g in ("r1", "r2", "r3")
    }
    assert all(np.isfinite(o.z) and o.standard_error > 0 and 0 < o.baseline_share < 0.1 for o in observations)


def test_counts_are_the_audits_counts(monitor: object) -> None:
    cube = monitor.cubes[3]  # type: ignore[attr-defined]
    prepared = baseline_rates(cube, SIM.POLICY)
    for part in prepared.slicings:
        audit = fairgate.compute_slicing(cube, part.slicing, SIM.POLICY)
        assert [tuple(g[a] for a in part.slicing) for g in audit.groups] == part.groups
        for name in ("tp", "fp", "tn", "fn"):
            assert getattr(part.counts, name).tolist() == audit.counts[name]


def _rate(counts: object, component: str) -> np.ndarray:
    c = counts
    return {  # type: ignore[no-any-return]
        "true_positive_rate": lambda: c.tp / (c.tp + c.fn),  # type: ignore[attr-defined]
        "false_positive_rate": lambda: c.fp / (c.fp + c.tn),  # type: ignore[attr-defined]
        "selection_rate": lambda: (c.tp + c.fp) / c.n,  # type: ignore[attr-defined]
    }[component]()


def _trials(counts: object, component: str) -> np.ndarray:
    c = counts
    return {  # type: ignore[no-any-return]
        "true_positive_rate": lambda: c.tp + c.fn,  # type: ignore[attr-defined]
        "false_positive_rate": lambda: c.fp + c.tn,  # type: ignore[attr-defined]
        "selection_rate": lambda: c.n,  # type: ignore[attr-defined]
    }[component]()


def test_standard_error_equals_the_cube_bootstrap(monitor: object) -> None:
    """Each contrast's binomial SE against the SD of the engine's bootstrap replicates of the same contrast.

    The bootstrap resamples each cube at its own rates, so the closed form at those rates must match it
    closely; the detector's SE takes the night's variance at the baseline's rate (the variance under "no
    change"), which differs from it by the night's sampling noise only, so it matches on average.
    """
    night_cube, base_cube = monitor.cubes[10], monitor.baseline  # type: ignore[attr-defined]
    observations = night_observations(night_cube, base_cube, SIM.POLICY, NIGHT)
    replicates = 4000
    plug_in, detector = [], []
    for slicing in [("race",), ("race", "sex")]:
        sides = []
        for cube, seed in ((night_cube, 1), (base_cube, 2)):
            groups, index = slicing_groups(cube, slicing)
            point, boot = bootstrap_group_counts(
                cube, index, groups.height, replicates, slicing_seed(seed, slicing), slicing
            )
            labels = [", ".join(str(v) for v in row[1:]) for row in groups.iter_rows()]
            sides.append((labels, point, boot))
        for o in (o for o in observations if o.slicing == " × ".join(slicing)):
            gaps, variance = [], 0.0
            for labels, point, boot in sides:
                g, r = labels.index(o.group), labels.index(o.reference)
                rate = _rate(boot, o.component)
                gaps.append(rate[:, g] - rate[:, r])
                p, n = _rate(point, o.component), _trials(point, o.component)
                variance += sum(p[i] * (1 - p[i]) / n[i] for i in (g, r))
            spread = np.std(gaps[0] - gaps[1])
            plug_in.append(spread / np.sqrt(variance))
            detector.append(spread / o.standard_error)
    # 4000 replicates estimate an SD to about 1.1% (more for the skewed rates of the smallest groups, whose
    # trial count also varies across replicates: E[1/n] > 1/E[n]), hence 7% for the worst of 44 streams.
    assert np.median(plug_in) == pytest.approx(1.0, abs=0.01)
    assert np.abs(np.array(plug_in) - 1).max() < 0.07
    assert np.median(detector) == pytest.approx(1.0, abs=0.03)


def test_a_thin_night_skips_streams_with_reasons_never_infinite_z(monitor: object) -> None:
    rng = np.random.default_rng(4)
    thin = fairgate.build_cube(SIM.rows(rng, 150), SIM.POLICY)  # r3 (5%) has a handful of people
    result = night_contrasts(thin, monitor.baseline, SIM.POLICY, NIGHT)  # type: ignore[attr-defined]
    assert result.skipped
    assert any("r3" in reason and "too few people tonight" in reason for reason in result.skipped)
    # No night's count of people is printed (the small-count rule): "has 4 people" would disclose one.
    assert not any(re.search(r"has [0-9]+ people", reason) for reason in result.skipped)
    assert all(np.isfinite(o.z) for o in result.observations)
    skipped_streams = {reason.split(": ")[0] for reason in result.skipped}
    assert not skipped_streams & {o.stream for o in result.observations}


def test_metrics_that_are_not_rates_are_reported_not_watched() -> None:
    policy = fairgate.Policy.from_yaml(
        """
fairness_checker:
  sensitive_attributes: [{name: race}, {name: sex}]
  metrics:
    - {name: disparate_impact_ratio, threshold: 0.8}
    - {name: theil_index, threshold: 0.2}
  intersectional_analysis: {min_group_size: 30, include_triples: false}
"""
    )
    rng = np.random.default_rng(5)
    base = fairgate.build_cube(SIM.rows(rng, 50_000), policy)
    night = fairgate.build_cube(SIM.rows(rng, 3000), policy)
    result = night_contrasts(night, base, policy, NIGHT)
    assert any(r.startswith("theil_index: not a difference or ratio of rates") for r in result.skipped)
    ratios = [o for o in result.observations if o.metric == "disparate_impact_ratio"]
    assert ratios
    assert all(o.component == "selection_rate" for o in ratios)
    assert all(abs(o.z) < 5 for o in ratios)


def _stream(values: list[float], start: date = NIGHT) -> list[Observation]:
    return [
        Observation("s", "equal_opportunity_difference", "race", "b", start + timedelta(days=i), v, 0.02)
        for i, v in enumerate(values)
    ]


def test_scan_replays_deterministically_and_alerts_once_per_episode() -> None:
    rule = DriftRule("equal_opportunity_difference", min_change=0.04, false_alarm_rate=0.01, horizon_nights=90)
    history = _stream([0.0] * 10 + [0.08] * 30)  # 4 SEs up from night 11 on
    first, again = scan(history, rule), scan(list(reversed(history)), rule)
    assert first == again
    stream = first.streams[0]
    assert stream.k == pytest.approx(1.0)
    assert first.alerts[0].night > NIGHT + timedelta(days=10)
    assert max(stream.upper) < 2 * stream.threshold  # restarted after each alarm (the path stays bounded) ...
    assert len(first.alerts) == 1  # ... but the persisting change is one episode: one alert, not one per night
    assert first.alerts[0].direction == "up"
    assert first.alerts[0].change == pytest.approx(0.08)
    assert first.alerts[0].statistic >= stream.threshold
    assert "rose by 0.080" in first.alerts[0].detail


def test_a_change_that_goes_away_and_comes_back_alerts_twice() -> None:
    rule = DriftRule("equal_opportunity_difference", min_change=0.04, false_alarm_rate=0.01, horizon_nights=90)
    history = _stream([0.0] * 10 + [0.08] * 20 + [0.0] * 10 + [0.08] * 20)
    alerts = scan(history, rule).alerts
    assert len(alerts) == 2
    assert NIGHT + timedelta(days=10) < alerts[0].night < NIGHT + timedelta(days=30)
    assert alerts[1].night > NIGHT + timedelta(days=40)


def test_a_superseded_night_replaces_its_observation() -> None:
    rule = DriftRule("equal_opportunity_difference", min_change=0.04, false_alarm_rate=0.01, horizon_nights=90)
    history = _stream([0.0] * 20)
    late = dataclasses.replace(history[5], estimate=-0.3)  # the night rebuilt with its late labels
    replayed = scan([*history, late], rule)
    assert replayed.n_observations == 20
    assert replayed.streams[0].estimate[5] == -0.3
    assert replayed.alerts  # a 15-SE drop alarms on that night
    assert replayed.alerts[0].night == history[5].night
    assert replayed.alerts[0].direction == "down"


def test_rules_pick_their_streams_and_split_their_rate() -> None:
    history = _stream([0.0] * 5) + [
        dataclasses.replace(o, stream="t", metric="demographic_parity_difference") for o in _stream([0.0] * 5)
    ]
    one = DriftRule("equal_opportunity_difference", 0.04, 0.01, 90)
    result = scan(history, [one])
    assert [s.stream for s in result.streams] == ["s"]
    assert result.unwatched == ["t"]
    both = scan(history, [one, dataclasses.replace(one, metric="demographic_parity_difference")])
    assert [s.threshold for s in both.streams] == [result.streams[0].threshold] * 2  # each rule: its own family
    sliced = scan(history, [dataclasses.replace(one, slicing=("sex",))])
    assert sliced.streams == []


def test_scan_notes_streams_that_would_miss_min_change() -> None:
    rule = DriftRule("equal_opportunity_difference", min_change=0.01, false_alarm_rate=0.01, horizon_nights=90)
    weak = [dataclasses.replace(o, baseline_share=0.05) for o in _stream([0.0] * 5)]  # half an SE, shared error
    result = scan(weak, rule)
    assert result.streams[0].detection_probability < 0.5
    assert result.notes
    assert "would more likely than not miss" in result.notes[0]
    strong = scan(_stream([0.0] * 5), dataclasses.replace(rule, min_change=0.08))  # 4 SEs, no shared error
    assert strong.streams[0].detection_probability > 0.99
    assert strong.notes == []


def test_an_open_episode_is_named_on_every_night_until_it_clears() -> None:
    rule = DriftRule("equal_opportunity_difference", min_change=0.04, false_alarm_rate=0.01, horizon_nights=90)
    history = _stream([0.0] * 10 + [0.08] * 20 + [0.0] * 25)  # up 4 SEs for 20 nights, then back
    (alert, *_) = scan(history, rule).alerts
    cleared = None
    for n in range(1, len(history) + 1):  # replayed night by night, as the nightly runs replay it
        night = history[n - 1].night
        result = scan(history[:n], rule)
        names = headline([], [], episode_records(result), watching=True)["ongoing"]
        if night < alert.night or (cleared is not None and night >= cleared):
            assert result.episodes == [], night
            continue
        if not result.episodes:  # the change went away: the episode ends once, and stays ended
            assert night > NIGHT + timedelta(days=30)
            cleared = night
            continue
        (episode,) = result.episodes
        assert (episode.since, episode.direction, episode.last_night) == (alert.night, "up", night)
        assert names == [f"equal opportunity difference by race (b up) since {alert.night.isoformat()}"]
        assert result.alerts_on(night) == ([alert] if night == alert.night else [])  # one alert, many nights shown
    assert cleared is not None
    assert cleared < NIGHT + timedelta(days=55)
    assert (min(cleared, NIGHT + timedelta(days=30)) - alert.night).days >= 10  # shown on each of those nights
