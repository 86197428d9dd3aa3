"""Benchmark: fairgate's ranking engine against Fairlearn's MetricFrame on the same per-group metrics.

Generates N ranked items in lists of 50 (a race-like attribute with 8 values, a sex-like one with 2; one group
ranked lower on average), a graded relevance 0..3, then in this one process:

1. fairgate: the ranking cube (per attribute combination x list bucket: top-k counts for k = 10 and 20,
   exposure under the 1/log2(1 + rank) discount, relevance and weight sums) and the three slicings (each
   attribute and the pair), each with every per-group metric (population share, top-k share and rate for both
   k, mean exposure, exposure share, mean relevance, exposure per relevance) with intervals from --bootstrap
   replicates of the cluster bootstrap of lists, comparisons with the reference and the range/ratio summaries
   with simultaneous max-t intervals. Median of --repeats.
2. Fairlearn: MetricFrame over the same three slicings with the same per-group metrics as custom functions of
   (y_true = relevance, y_pred = rank): top-k rate for both k, mean exposure, mean relevance, exposure per
   relevance, and the group's row count (for the shares), plus difference() and ratio(). No intervals:
   MetricFrame's own bootstrap (n_boot) resamples rows, not lists, and would be far slower still.

Peak resident memory is read after the fairgate runs (the data, the cube, the replicates). The last line prints
the ratio.

    .venv/bin/python bench/ranking_vs_fairlearn.py --rows 1000000
    .venv/bin/python bench/ranking_vs_fairlearn.py --rows 10000000 --repeats 3 --fairlearn one
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
from peer_runs import peak_gb

from fairgate.engine.ranking import build_ranking_cube, ranking_slicing
from fairgate.policy.ranking import RankingOptions

RACES = ["White", "Black", "Asian", "Hispanic", "Mexican", "Other", "Puertorican", "Amerindian"]
SLICINGS: list[tuple[str, ...]] = [("race",), ("sex",), ("race", "sex")]
LIST_SIZE = 50
OPTIONS = RankingOptions(top_k=[10, 20])


def generate(rows: int, seed: int = 7) -> pl.DataFrame:
    """Lists of ``LIST_SIZE`` items ranked by a noisy score that is lower for one group."""
    rng = np.random.default_rng(seed)
    lists = rows // LIST_SIZE
    rows = lists * LIST_SIZE
    race = rng.choice(len(RACES), rows, p=[0.6, 0.12, 0.08, 0.07, 0.05, 0.04, 0.02, 0.02]).astype(np.int8)
    sex = rng.integers(0, 2, rows, dtype=np.int8)
    relevance = rng.integers(0, 4, rows).astype(np.float64)
    score = (0.5 * relevance - 0.4 * (race == 1) + rng.normal(0.0, 1.0, rows)).reshape(lists, LIST_SIZE)
    rank = np.argsort(np.argsort(-score, axis=1), axis=1).astype(np.int16) + 1
    return pl.DataFrame(
        {
            "list_id": np.repeat(np.arange(lists, dtype=np.int32), LIST_SIZE),
            "rank": rank.ravel(),
            "relevance": relevance,
            "race": pl.Series(race).cast(pl.UInt32).replace_strict(range(len(RACES)), RACES).cast(pl.Categorical),
            "sex": pl.Series(sex).cast(pl.UInt32).replace_strict([0, 1], ["1", "2"]).cast(pl.Categorical),
        }
    )


def fairgate_run(frame: pl.DataFrame, n_bootstrap: int) -> float:
    start = time.perf_counter()
    cube = build_ranking_cube(
        frame, attributes=["race", "sex"], list_id="list_id", rank="rank", relevance="relevance", options=OPTIONS
    )
    for slicing in SLICINGS:
        ranking_slicing(cube, slicing, n_bootstrap=n_bootstrap)
    return time.perf_counter() - start


def fairlearn_metrics() -> dict[str, Callable[..., float]]:
    """The per-group metrics as MetricFrame functions of (relevance, rank)."""

    def exposure(rank: Any) -> np.ndarray:
        return 1.0 / np.log2(np.asarray(rank, dtype=np.float64) + 1.0)

    return {
        "count": lambda y, p: float(len(p)),
        "top_10_rate": lambda y, p: float(np.mean(np.asarray(p) <= 10)),
        "top_20_rate": lambda y, p: float(np.mean(np.asarray(p) <= 20)),
        "mean_exposure": lambda y, p: float(np.mean(exposure(p))),
        "mean_relevance": lambda y, p: float(np.mean(y)),
        "exposure_per_relevance": lambda y, p: float(np.sum(exposure(p)) / np.sum(y)),
    }


def fairlearn_run(data: Any, *, one: bool = False) -> float:
    """MetricFrame over the three slicings; ``one``: mean exposure by sex only (one of 18 metric x slicing units)."""
    from fairlearn.metrics import MetricFrame

    metrics = fairlearn_metrics()
    slicings = [("sex",)] if one else SLICINGS
    if one:
        metrics = {"mean_exposure": metrics["mean_exposure"]}
    start = time.perf_counter()
    for slicing in slicings:
        frame = MetricFrame(
            metrics=metrics, y_true=data["relevance"], y_pred=data["rank"], sensitive_features=data[list(slicing)]
        )
        frame.difference()
        frame.ratio()
    return time.perf_counter() - start


def check_agreement(frame: pl.DataFrame, data: Any) -> float:
    """The largest absolute difference between fairgate's and Fairlearn's per-group values (must be ~1e-12)."""
    from fairlearn.metrics import MetricFrame

    cube = build_ranking_cube(
        frame, attributes=["race", "sex"], list_id="list_id", rank="rank", relevance="relevance", options=OPTIONS
    )
    worst = 0.0
    for slicing in SLICINGS:
        part = ranking_slicing(cube, slicing, n_bootstrap=0)
        theirs = MetricFrame(
            metrics=fairlearn_metrics(),
            y_true=data["relevance"],
            y_pred=data["rank"],
            sensitive_features=data[list(slicing)],
        ).by_group
        for g, group in enumerate(part.groups):
            key = tuple(group[a] for a in slicing)
            row = theirs.loc[key if len(key) > 1 else key[0]]
            for name in ("top_10_rate", "top_20_rate", "mean_exposure", "mean_relevance", "exposure_per_relevance"):
                ours = part.metrics[name]["value"][g]
                assert ours is not None
                worst = max(worst, abs(ours - float(row[name])))
    return worst


def median_of(run: Callable[[], float], repeats: int) -> float:
    return statistics.median(run() for _ in range(repeats))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument(
        "--fairlearn",
        choices=["full", "one", "skip"],
        default="full",
        help="full: 6 metrics x 3 slicings; one: mean exposure by sex only, extrapolated x18 (Fairlearn's cost per "
        "metric and slicing is nearly constant); skip: no Fairlearn",
    )
    args = parser.parse_args()

    frame = generate(args.rows)
    data_gb = peak_gb()
    fairgate_run(frame, args.bootstrap)  # warm-up: imports, first-call compilation
    ours = median_of(lambda: fairgate_run(frame, args.bootstrap), args.repeats)
    ours_gb = peak_gb()
    print(f"rows={frame.height:,} in {frame.height // LIST_SIZE:,} lists; peak memory after the data: {data_gb:.2f} GB")
    print(
        f"fairgate ranking engine (cube + 3 slicings, 10 per-group metrics, {args.bootstrap} cluster-bootstrap "
        f"replicates, comparisons, summaries): {ours:.3f} s (median of {args.repeats}); peak memory {ours_gb:.2f} GB"
    )
    if args.fairlearn == "skip":
        print(f"rows={frame.height:,}: fairgate_peak_memory={ours_gb:.2f}GB")
        return
    data = frame.with_columns(pl.col("race", "sex").cast(pl.String)).to_pandas()
    if args.fairlearn == "full":
        theirs = fairlearn_run(data)
        print(f"Fairlearn MetricFrame, 3 slicings, 6 metrics + difference/ratio, no intervals: {theirs:.2f} s")
        print(f"largest |fairgate - Fairlearn| over per-group values: {check_agreement(frame, data):.2e}")
    else:
        unit = fairlearn_run(data, one=True)
        theirs = unit * len(SLICINGS) * 6
        print(f"Fairlearn MetricFrame, mean exposure by sex only: {unit:.2f} s; extrapolated x18: {theirs:.1f} s")
    ratio = f"fairlearn/fairgate = {theirs / ours:.0f}x" + (" (extrapolated)" if args.fairlearn == "one" else "")
    print(f"rows={frame.height:,}: {ratio}, fairgate_peak_memory={ours_gb:.2f}GB")


if __name__ == "__main__":
    main()
