"""False alarms and detection delay of the drift detector (``fairgate.monitoring.drift``), by seeded simulation.

One simulated monitor: a baseline cube (``--baseline-nights`` nights' worth of rows) and 90 nightly cubes, all
built with ``fairgate.build_cube`` from generated rows: about ``--night`` people a night (Poisson), race with
4 groups (50/30/15/5%) x sex (55/45%), group-specific base rates, TPRs and FPRs (the model is unequal but
stable). Three judged metrics (equal opportunity, demographic parity, equalized odds) on race, sex and race x sex
give 40-odd streams. Prints, side by side with what the Markov chain predicts:

- stable data: the share of monitors with any alert within 90 nights (the family-wise false-alarm rate);
- a step change: race r2's TPR falls by ``--change`` (= min_change) from night 45; the nights from the change
  to the alert on its equal-opportunity stream (delay distribution and median) and its predicted median.

Usage: ``python bench/drift_null.py [--monitors 200] [--night 3000] [--seed 2026]``. The tests in
``tests/monitoring/test_drift_*.py`` import the simulation from here and run fewer monitors.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from datetime import date, timedelta

import numpy as np
import polars as pl

import fairgate
from fairgate.engine.cube import Cube
from fairgate.monitoring import cusum
from fairgate.monitoring.drift import (
    TYPICAL_SE_NIGHTS,
    DriftRule,
    DriftScan,
    Observation,
    StreamScan,
    baseline_rates,
    night_observations,
    scan,
)

NIGHTS = 90
CHANGE_NIGHT = 45  # the first changed night (0-based index into the 90)
START = date(2026, 1, 1)
RACES = ["r0", "r1", "r2", "r3"]
RACE_SHARE = [0.50, 0.30, 0.15, 0.05]
SEXES = ["f", "m"]
SEX_SHARE = [0.55, 0.45]
BASE_RATE = np.array([0.45, 0.40, 0.35, 0.50])  # favourable labels per race
TPR = np.array([[0.80, 0.78], [0.74, 0.72], [0.70, 0.68], [0.76, 0.80]])  # race x sex
FPR = np.array([0.20, 0.17, 0.15, 0.22])
CHANGED_RACE = 2
POLICY = fairgate.Policy.from_yaml(
    """
fairness_checker:
  sensitive_attributes: [{name: race}, {name: sex}]
  metrics:
    - {name: equal_opportunity_difference, threshold: 0.1}
    - {name: demographic_parity_difference, threshold: 0.1}
    - {name: equalized_odds_difference, threshold: 0.1}
  intersectional_analysis: {min_group_size: 30, include_triples: false}
  statistics: {n_bootstrap: 0}
"""
)
NIGHT_POLICY = fairgate.Policy.from_yaml(
    """
fairness_checker:
  sensitive_attributes: [{name: race}, {name: sex}, {name: night}]
  metrics: [{name: equal_opportunity_difference, threshold: 0.1}]
  statistics: {n_bootstrap: 0}
"""
)
DAYS = [START + timedelta(days=i) for i in range(NIGHTS)]
CHANGED_STREAM = "equal_opportunity_difference · race · r2 vs r0 · true_positive_rate"


def rules(min_change: float, false_alarm_rate: float, horizon: int = NIGHTS) -> list[DriftRule]:
    """One alert rule per judged metric, every slicing."""
    return [DriftRule(rule.name, min_change, false_alarm_rate, horizon) for rule in POLICY.metrics]


def rows(rng: np.random.Generator, n: int, tpr_shift: np.ndarray | float = 0.0) -> pl.DataFrame:
    """``n`` generated people: attributes, label and prediction; race r2's TPR moved by ``tpr_shift`` (per row)."""
    race = rng.choice(len(RACES), n, p=RACE_SHARE)
    sex = rng.choice(len(SEXES), n, p=SEX_SHARE)
    label = rng.random(n) < BASE_RATE[race]
    tpr = TPR[race, sex] + np.where(race == CHANGED_RACE, tpr_shift, 0.0)
    predicted = np.where(label, rng.random(n) < tpr, rng.random(n) < FPR[race])
    codes = pl.DataFrame(
        {"race": race, "sex": sex, "y_true": label.astype(np.int8), "y_pred": predicted.astype(np.int8)}
    )
    return codes.with_columns(  # the values as text, mapped in Polars (a numpy string array is slow to convert)
        pl.col("race").replace_strict(list(range(len(RACES))), RACES, return_dtype=pl.String),
        pl.col("sex").replace_strict(list(range(len(SEXES))), SEXES, return_dtype=pl.String),
    )


def nightly_cubes(frame: pl.DataFrame, nights: np.ndarray) -> list[Cube]:
    """One cube per night of ``frame`` (``nights`` gives each row's night, 0..NIGHTS-1), in one ``build_cube``.

    The night is counted as a further attribute and each night's cells are then taken out: a cube's cells
    are a group-by, so they equal ``build_cube`` of that night's rows alone (the tests check it), at a
    ninetieth of the cost.
    """
    night = pl.Series("night", nights).cast(pl.String)
    cube = fairgate.build_cube(frame.with_columns(night), NIGHT_POLICY)
    split = cube.cells.partition_by("night", as_dict=True, include_key=False)
    empty = cube.cells.clear().drop("night")
    return [
        Cube(split.get((str(i),), empty), cube.attributes[:-1], cube.calibration_bins, cube.has_scores)
        for i in range(NIGHTS)
    ]


@dataclass(frozen=True)
class Monitor:
    """One simulated monitor: its baseline cube, its nightly cubes and the observations they give."""

    baseline: Cube
    cubes: list[Cube]
    history: list[Observation]


def simulate(seed: int, *, night: int, baseline_nights: int, change: float = 0.0) -> Monitor:
    """A baseline and 90 nights of cubes from generated rows; ``change`` lowers r2's TPR from night 45 on."""
    rng = np.random.default_rng(seed)
    baseline = fairgate.build_cube(rows(rng, night * baseline_nights), POLICY)
    sizes = rng.poisson(night, NIGHTS)
    which = np.repeat(np.arange(NIGHTS), sizes)
    cubes = nightly_cubes(rows(rng, int(sizes.sum()), np.where(which >= CHANGE_NIGHT, -change, 0.0)), which)
    prepared = baseline_rates(baseline, POLICY)
    history = [o for i, cube in enumerate(cubes) for o in night_observations(cube, prepared, POLICY, DAYS[i])]
    return Monitor(baseline, cubes, history)


def delay_of(result: DriftScan, stream: str) -> int | None:
    """Nights from the change (its first night counts 1) to the stream's first alert on or after it."""
    changed = DAYS[CHANGE_NIGHT]
    days = [(a.night - changed).days + 1 for a in result.alerts if a.stream == stream and a.night >= changed]
    return min(days) if days else None


def main() -> None:
    """Run the simulation and print the measured and predicted figures."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--monitors", type=int, default=200)
    parser.add_argument("--night", type=int, default=3000, help="people per night (Poisson mean)")
    parser.add_argument("--baseline-nights", type=int, default=100)
    parser.add_argument("--change", type=float, default=0.05, help="min_change and the step in r2's TPR")
    parser.add_argument("--false-alarm-rate", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    settings = rules(args.change, args.false_alarm_rate)
    started = time.perf_counter()
    alarmed, streams, delays = 0, 0, []
    predicted: StreamScan | None = None
    for m in range(args.monitors):
        stable = simulate(args.seed + m, night=args.night, baseline_nights=args.baseline_nights)
        result = scan(stable.history, settings)
        alarmed += bool(result.alerts)
        streams = len(result.streams)
        seed = 10**6 + args.seed + m
        changed = simulate(seed, night=args.night, baseline_nights=args.baseline_nights, change=args.change)
        shifted = scan(changed.history, settings)
        delays.append(delay_of(shifted, CHANGED_STREAM))
        predicted = next(s for s in shifted.streams if s.stream == CHANGED_STREAM)
    elapsed = time.perf_counter() - started
    assert predicted is not None
    after = NIGHTS - CHANGE_NIGHT
    median, within = cusum.delay(
        predicted.threshold, predicted.k, args.change / typical_se(predicted), after, predicted.baseline_share
    )
    found = np.array([d for d in delays if d is not None], dtype=float)
    print(
        f"{args.monitors} monitors x {NIGHTS} nights, ~{args.night} people a night, baseline "
        f"{args.baseline_nights} nights' worth, {streams} streams; {elapsed:.0f} s"
    )
    print(
        f"false alarms on stable data: {alarmed / args.monitors:.3f} of monitors alerted "
        f"(stated: at most {args.false_alarm_rate:g})"
    )
    print(
        f"step of {args.change:g} in r2's TPR from night {CHANGE_NIGHT + 1}: detected within {after} nights in "
        f"{found.size / len(delays):.3f} of monitors (predicted {within:.3f})"
    )
    if found.size:
        q1, q2, q3 = np.percentile(found, [25, 50, 75])
        print(
            f"delay (nights, the first changed night counts 1): quartiles {q1:.0f} / {q2:.0f} / {q3:.0f}; "
            f"predicted median {median:g} (k {predicted.k:.2f}, h {predicted.threshold:.2f}, "
            f"baseline share {predicted.baseline_share:.2f})"
        )


def typical_se(stream: StreamScan) -> float:
    """The SE the stream's k was set from (median of its first nights)."""
    return float(np.median(stream.standard_error[:TYPICAL_SE_NIGHTS]))


if __name__ == "__main__":
    main()
