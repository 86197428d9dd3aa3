"""Benchmark: fairgate's regression engine against Fairlearn's MetricFrame (and scipy) on the same work.

Generates N rows with two sensitive attributes (race-like with 8 values, sex-like with 2), a label and a biased
prediction, then in this one process:

1. fairgate: the regression cube (moment sums per attribute combination x bootstrap bucket, prediction and
   label histograms) and the three slicings (each attribute and the pair), each with every group metric
   (mean prediction, mean label, mean residual, MAE, MSE, RMSE, R^2), --bootstrap replicates for intervals,
   comparisons with the reference, range/ratio/worst-group summaries with simultaneous intervals, and the KS and
   Wasserstein-1 distances of every group's predictions to the rest's and the reference's. Median of --repeats.
2. Fairlearn: MetricFrame with the same seven metrics (sklearn's mean_absolute_error, mean_squared_error,
   root_mean_squared_error, r2_score and numpy means) over the same three slicings, plus difference() and
   ratio(). No intervals (MetricFrame's own bootstrap, n_boot, would resample the rows: far slower still).
3. scipy: ks_2samp and wasserstein_distance of every group of each single attribute against the rest, on rows.

The peak resident memory is read after the fairgate runs (the data, the cube, the replicates) and again at the
end (with the pandas copy Fairlearn needs). The last line prints the ratios.

    .venv/bin/python bench/regression_vs_fairlearn.py --rows 1000000
    .venv/bin/python bench/regression_vs_fairlearn.py --rows 10000000 --repeats 3 --fairlearn one
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl

from fairgate.engine.regression import build_regression_cube, regression_slicing

RACES = ["White", "Black", "Asian", "Hispanic", "Mexican", "Other", "Puertorican", "Amerindian"]
SLICINGS: list[tuple[str, ...]] = [("race",), ("sex",), ("race", "sex")]


def generate(rows: int, seed: int = 7) -> pl.DataFrame:
    """Rows with group-dependent label means and a prediction biased for some groups."""
    rng = np.random.default_rng(seed)
    race = rng.choice(len(RACES), rows, p=[0.6, 0.12, 0.08, 0.07, 0.05, 0.04, 0.02, 0.02]).astype(np.int8)
    sex = rng.integers(0, 2, rows, dtype=np.int8)
    label = rng.normal(0.1 * race - 0.2 * sex, 1.0)
    prediction = 0.8 * label + 0.05 * race + rng.normal(0.0, 0.6, rows)
    return pl.DataFrame(
        {
            "race": pl.Series(race).cast(pl.UInt32).replace_strict(range(len(RACES)), RACES).cast(pl.Categorical),
            "sex": pl.Series(sex).cast(pl.UInt32).replace_strict([0, 1], ["1", "2"]).cast(pl.Categorical),
            "label": label,
            "prediction": prediction,
        }
    )


def fairgate_run(frame: pl.DataFrame, n_bootstrap: int) -> float:
    start = time.perf_counter()
    cube = build_regression_cube(frame, attributes=["race", "sex"], prediction="prediction", label="label")
    for slicing in SLICINGS:
        regression_slicing(cube, slicing, n_bootstrap=n_bootstrap)
    return time.perf_counter() - start


def fairlearn_run(data: Any, *, one: bool = False) -> float:
    """MetricFrame over the three slicings with the seven metrics; ``one``: MAE by sex only (one of 21 units)."""
    from fairlearn.metrics import MetricFrame
    from sklearn.metrics import mean_absolute_error, mean_squared_error, r2_score, root_mean_squared_error

    metrics: dict[str, Callable[..., float]] = {
        "mean_prediction": lambda y, p: float(np.mean(p)),
        "mean_label": lambda y, p: float(np.mean(y)),
        "mean_residual": lambda y, p: float(np.mean(np.asarray(p) - np.asarray(y))),
        "mean_absolute_error": mean_absolute_error,
        "mean_squared_error": mean_squared_error,
        "root_mean_squared_error": root_mean_squared_error,
        "r2_score": r2_score,
    }
    slicings = [("sex",)] if one else SLICINGS
    if one:
        metrics = {"mean_absolute_error": mean_absolute_error}
    start = time.perf_counter()
    for slicing in slicings:
        frame = MetricFrame(
            metrics=metrics, y_true=data["label"], y_pred=data["prediction"], sensitive_features=data[list(slicing)]
        )
        frame.difference()
        frame.ratio()
    return time.perf_counter() - start


def scipy_run(frame: pl.DataFrame) -> float:
    from scipy import stats

    start = time.perf_counter()
    for attribute in ("race", "sex"):
        for value in frame[attribute].unique().to_list():
            inside = frame[attribute] == value
            mine, rest = frame["prediction"].filter(inside).to_numpy(), frame["prediction"].filter(~inside).to_numpy()
            stats.ks_2samp(mine, rest)
            stats.wasserstein_distance(mine, rest)
    return time.perf_counter() - start


def median_of(run: Callable[[], float], repeats: int) -> float:
    return statistics.median(run() for _ in range(repeats))


def peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument(
        "--fairlearn",
        choices=["full", "one", "skip"],
        default="full",
        help="full: 7 metrics x 3 slicings; one: MAE by sex only, extrapolated x21 (Fairlearn's cost per metric and "
        "slicing is nearly constant; at 10M rows the full run takes over an hour); skip: no Fairlearn",
    )
    parser.add_argument("--skip-scipy", action="store_true", help="skip scipy's KS/Wasserstein on the rows")
    args = parser.parse_args()

    frame = generate(args.rows)
    data_gb = peak_gb()
    fairgate_run(frame, args.bootstrap)  # warm-up: imports, first-call compilation
    ours = median_of(lambda: fairgate_run(frame, args.bootstrap), args.repeats)
    ours_gb = peak_gb()
    print(f"rows={args.rows:,}; peak memory after generating the data: {data_gb:.2f} GB")
    print(
        f"fairgate regression engine (cube + 3 slicings, 7 metrics, {args.bootstrap} bootstrap replicates, "
        f"KS/W1 per group): {ours:.3f} s (median of {args.repeats}); peak memory {ours_gb:.2f} GB"
    )
    ratios = []
    theirs = 0.0
    if args.fairlearn != "skip":
        data = frame.to_pandas()
        if args.fairlearn == "full":
            theirs = fairlearn_run(data)
            print(f"Fairlearn MetricFrame, 3 slicings, 7 metrics + difference/ratio, no intervals: {theirs:.2f} s")
        else:
            unit = fairlearn_run(data, one=True)
            theirs = unit * len(SLICINGS) * 7
            print(
                f"Fairlearn MetricFrame, MAE by sex only: {unit:.2f} s; extrapolated to 3 slicings x 7 metrics "
                f"(x21): {theirs:.1f} s"
            )
        del data
        ratios.append(
            f"fairlearn/fairgate = {theirs / ours:.0f}x" + (" (extrapolated)" if args.fairlearn == "one" else "")
        )
    if not args.skip_scipy:
        distances = scipy_run(frame)
        print(f"scipy ks_2samp + wasserstein_distance, each group vs the rest, on rows: {distances:.2f} s")
        ratios.append(f"scipy distances/fairgate = {distances / ours:.0f}x")
    print(f"rows={args.rows:,}: " + ", ".join([*ratios, f"fairgate_peak_memory={ours_gb:.2f}GB"]))


if __name__ == "__main__":
    main()
