"""Benchmark: fairgate's regression engine against Fairlearn's MetricFrame (and scipy) on the same work.

Generates N rows (seeded, in chunks of 1M straight into Polars: no pandas copy for fairgate) with two sensitive
attributes (race-like with 8 values, sex-like with 2), a label and a biased prediction. Each side runs in its
own fresh child process per size (``bench/peer_runs.py``: medians of wall and CPU seconds, peak resident memory
of that process, the generated data included):

1. fairgate: the regression cube (moment sums per attribute combination x bootstrap bucket, prediction and
   label histograms) and the three slicings (each attribute and the pair), each with every group metric
   (mean prediction, mean label, mean residual, MAE, MSE, RMSE, R^2), --bootstrap replicates for intervals,
   comparisons with the reference, range/ratio/worst-group summaries with simultaneous intervals, and the KS and
   Wasserstein-1 distances of every group's predictions to the rest's and the reference's. One warm-up run,
   then the median of --repeats.
2. Fairlearn: MetricFrame with the same seven metrics (sklearn's mean_absolute_error, mean_squared_error,
   root_mean_squared_error, r2_score and numpy means) over the same three slicings, plus difference() and
   ratio(); no intervals (MetricFrame's own bootstrap, n_boot, would resample the rows: far slower still). The
   pandas copy it needs is made before its clock starts. --peer-repeats runs (default 1: at 10M rows one run
   takes many minutes); the report says which.
3. scipy (--scipy): ks_2samp and wasserstein_distance of every group of each single attribute against the rest,
   on the rows (the distances fairgate reads off its histograms within a stated bound).

    .venv/bin/python bench/regression_vs_fairlearn.py --rows 1000000 10000000 --peer-part-rows 10000000 \
        --cache /tmp/peer-cache
    .venv/bin/python bench/regression_vs_fairlearn.py --rows 10000000 --skip-peer     # fairgate only
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
from peer_runs import Also, Case, Runner, add_peer_arguments, compare_sizes, emit, measure, peak_gb

RACES = ["White", "Black", "Asian", "Hispanic", "Mexican", "Other", "Puertorican", "Amerindian"]
SLICINGS: list[tuple[str, ...]] = [("race",), ("sex",), ("race", "sex")]
CHUNK = 1_000_000


def generate(rows: int, seed: int = 7) -> pl.DataFrame:
    """Rows with group-dependent label means and a prediction biased for some groups, 1M rows per chunk."""
    chunks = []
    for start, stream in zip(range(0, rows, CHUNK), np.random.SeedSequence(seed).spawn(-(-rows // CHUNK)), strict=True):
        size = min(CHUNK, rows - start)
        rng = np.random.default_rng(stream)
        race = rng.choice(len(RACES), size, p=[0.6, 0.12, 0.08, 0.07, 0.05, 0.04, 0.02, 0.02]).astype(np.int8)
        sex = rng.integers(0, 2, size, dtype=np.int8)
        label = rng.normal(0.1 * race - 0.2 * sex, 1.0)
        prediction = 0.8 * label + 0.05 * race + rng.normal(0.0, 0.6, size)
        chunks.append(
            pl.DataFrame(
                {"race": _enum(race, RACES), "sex": _enum(sex, ["1", "2"]), "label": label, "prediction": prediction}
            )
        )
    return pl.concat(chunks, rechunk=True)


def _enum(codes: np.ndarray, labels: list[str]) -> pl.Series:
    """Integer codes as an Enum column without building the strings (through an Arrow dictionary array)."""
    series = pl.from_arrow(pa.DictionaryArray.from_arrays(pa.array(codes), pa.array(labels)))
    assert isinstance(series, pl.Series)
    return series.cast(pl.Enum(labels))


def fairgate_run(frame: pl.DataFrame, n_bootstrap: int) -> None:
    from fairgate.engine.regression import build_regression_cube, regression_slicing

    cube = build_regression_cube(frame, attributes=["race", "sex"], prediction="prediction", label="label")
    for slicing in SLICINGS:
        regression_slicing(cube, slicing, n_bootstrap=n_bootstrap)


def fairlearn_run(data: Any, *, part: bool = False) -> None:
    """MetricFrame over the three slicings with the seven metrics, then difference() and ratio().

    ``part``: MAE by sex only (one slicing x one metric), for the estimate at sizes where the full run is too long.
    """
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
    if part:
        metrics = {"mean_absolute_error": mean_absolute_error}
    for slicing in [("sex",)] if part else SLICINGS:
        frame = MetricFrame(
            metrics=metrics, y_true=data["label"], y_pred=data["prediction"], sensitive_features=data[list(slicing)]
        )
        frame.difference()
        frame.ratio()


def scipy_run(frame: pl.DataFrame) -> None:
    from scipy import stats

    for attribute in ("race", "sex"):
        for value in frame[attribute].unique().to_list():
            inside = frame[attribute] == value
            mine, rest = frame["prediction"].filter(inside).to_numpy(), frame["prediction"].filter(~inside).to_numpy()
            stats.ks_2samp(mine, rest)
            stats.wasserstein_distance(mine, rest)


def child(args: argparse.Namespace) -> None:
    rows = args.rows[0]
    frame = generate(rows)
    data_gb = peak_gb()
    if args.child == "fairgate":
        emit(
            measure(
                "fairgate",
                rows,
                lambda: fairgate_run(frame, args.bootstrap),
                args.repeats,
                data_gb=data_gb,
                warm_up=True,
            )
        )
    elif args.child in ("fairlearn", "fairlearn-part"):
        data = frame.select("race", "sex", "label", "prediction").to_pandas()
        run = partial(fairlearn_run, data, part=args.child == "fairlearn-part")
        emit(measure(args.child, rows, run, args.repeats, data_gb=data_gb, warm_up=False))
    else:
        emit(measure("scipy", rows, lambda: scipy_run(frame), args.repeats, data_gb=data_gb, warm_up=False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_peer_arguments(parser, per="size", children=["scipy"])
    parser.add_argument("--peer-repeats", type=int, default=1, help="Fairlearn (and scipy) runs per size")
    parser.add_argument("--scipy", action="store_true", help="also time scipy's KS/Wasserstein on the rows")
    args = parser.parse_args()
    if args.child:
        return child(args)

    extra = ["--bootstrap", str(args.bootstrap)]
    scipy = Also("scipy", "scipy ks_2samp + wasserstein_distance per group vs the rest", "scipy distances/fairgate")
    compare_sizes(
        Runner(__file__, args.cache, set(args.peer_part_rows)),
        [Case(rows, extra) for rows in sorted(args.rows)],
        ours=(
            f"fairgate regression engine (cube + 3 slicings, 7 metrics, {args.bootstrap} bootstrap replicates, "
            "KS/W1 per group)"
        ),
        peer="Fairlearn MetricFrame, 3 slicings, 7 metrics + difference/ratio",
        repeats=args.repeats,
        peer_repeats=args.peer_repeats,
        full_sizes=args.rows,
        skip_peer=args.skip_peer,
        also=[scipy] if args.scipy else [],
    )


if __name__ == "__main__":
    main()
