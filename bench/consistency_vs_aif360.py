"""Benchmark: fairgate's consistency against AIF360's on the same people (and fairgate alone at 1M and 10M rows).

Generates N people with --features numeric features of one --shape, and 0/1 decisions that depend on them:

* ``audit`` (default): an age in years, counts such as priors, and a few continuous scores reported to one
  decimal. Features repeat and distances tie often (a grid).
* ``counts``: age and counts only, as COMPAS's priors, age and juvenile counts (features repeat a lot).
* ``gaussian``: independent standard normal features, every person distinct. The worst case for any exact index,
  as it uses the full --features dimensions.

It then times, median of --repeats:

1. fairgate: ``fairgate.engine.individual.disagreements`` (SciPy's KD-tree on --n-jobs threads, AIF360's ball tree
   for the queries tied at the k-th distance, each distinct feature vector queried once) and the consistency;
2. AIF360 ``aif360.sklearn.metrics.consistency_score`` (one ball-tree query per person, one thread);
3. AIF360 ``BinaryLabelDatasetMetric.consistency`` (the same search, then a Python loop over the people), at
   sizes up to --loop-max.

With ``--sample N`` the --big sizes are run as ``individual_fairness.sample_people: N`` runs them: a seeded simple
random sample of N people is queried (their neighbours searched among everyone) and the estimate is printed with
its 95% interval, which covers the sampling error (the compared sizes stay exact).

Every run checks that the values agree to 1e-9. AIF360 is timed at the sizes up to --aif360-max; beyond, its time
is extrapolated from a power law fitted to its measured sizes (printed as such, never as a measurement). Wall and
CPU seconds are both printed: on a shared machine the CPU time is the steadier measure of the work. ``ball_tree``
is the share of distinct feature vectors whose k-th and (k+1)-th neighbours tie (measured at the compared sizes).

    .venv/bin/python bench/consistency_vs_aif360.py --sizes 10000 100000 --big 1000000 10000000 --shape counts
    .venv/bin/python bench/consistency_vs_aif360.py --sizes 10000 50000 --big 1000000 --shape gaussian
    .venv/bin/python bench/consistency_vs_aif360.py --sizes 5000 20000 --big 200000 --repeats 1   # quick
    .venv/bin/python bench/consistency_vs_aif360.py --sizes 10000 50000 --big 1000000 10000000 --shape gaussian \
        --sample 100000 --repeats 1
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time
import warnings
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

import numpy as np
import pandas as pd
from peer_runs import peak_gb

from fairgate.engine.individual import GroupConsistency, disagreements
from fairgate.engine.individual.consistency import sample_rows
from fairgate.engine.individual.neighbours import AIF360Neighbours
from fairgate.engine.stats import z_value

SHAPES = ("audit", "counts", "gaussian")
T = TypeVar("T")


def generate(rows: int, n_features: int, shape: str, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """Features of the given shape (see the module's docstring) and decisions depending on them."""
    rng = np.random.default_rng(seed)
    if shape == "gaussian":
        features = rng.normal(size=(rows, n_features))
        signal = features[:, 0] - 0.5 * features[:, 1]
        return features, (rng.random(rows) < 1.0 / (1.0 + np.exp(-signal))).astype(np.int64)
    counts_only = shape == "counts"
    age = rng.integers(18, 80, rows)
    n_counts = n_features - 1 if counts_only else max(0, min(n_features - 1, (2 * n_features) // 3))
    counts = rng.poisson(np.linspace(0.2, 4.0, n_counts), size=(rows, n_counts)) if n_counts else np.empty((rows, 0))
    continuous = rng.normal(size=(rows, n_features - 1 - n_counts)).round(1)  # scores as reported: one decimal
    features = np.column_stack([age, counts, continuous]).astype(np.float64)
    signal = 0.04 * (45 - age) + (counts.sum(axis=1) - counts.sum(axis=1).mean()) * 0.3
    decisions = (rng.random(rows) < 1.0 / (1.0 + np.exp(-signal))).astype(np.int64)
    return features, decisions


def tied_share(x: np.ndarray, distinct: np.ndarray, k: int) -> float:
    """The share of distinct feature vectors whose neighbours come from the ball tree (a tie at the k-th)."""
    search = AIF360Neighbours(x, k, n_jobs=os.cpu_count())
    search.nearest(distinct)
    return float(search.ball_tree_queries / distinct.shape[0])


def timed(function: Callable[[], T], repeats: int) -> tuple[float, float, T]:
    """(median wall seconds, median CPU seconds, the last run's value) over ``repeats`` (>= 1) runs."""
    walls, cpus, values = [], [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        values.append(function())
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus), values[-1]


def fairgate_consistency(x: np.ndarray, y: np.ndarray, k: int, n_jobs: int) -> float:
    return 1.0 - float(disagreements(x, y, k=k, n_jobs=n_jobs).sum()) / (k * y.size)


def sampled_consistency(
    x: np.ndarray, y: np.ndarray, k: int, n_jobs: int, size: int, seed: int = 0
) -> tuple[float, float, float]:
    """(estimate, 95% low, 95% high) from a seeded sample of ``size`` people, as the audit computes it."""
    rows = sample_rows(y.size, size, seed)
    terms = disagreements(x, y, k=k, n_jobs=n_jobs, rows=rows)
    measured = GroupConsistency.of(terms, np.zeros(terms.size, dtype=np.int64), 1, k)
    low, high = measured.interval(z_value(0.95))
    return float(measured.value[0]), float(low[0]), float(high[0])


def aif360_score(x: np.ndarray, y: np.ndarray, k: int) -> float:
    from aif360.sklearn.metrics import consistency_score

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(consistency_score(x, y, n_neighbors=k))


def aif360_loop(x: np.ndarray, y: np.ndarray, k: int) -> float:
    from aif360.datasets import BinaryLabelDataset
    from aif360.metrics import BinaryLabelDatasetMetric

    frame = pd.DataFrame(x, columns=[f"f{i}" for i in range(x.shape[1])])
    frame["protected"], frame["label"] = 0.0, y.astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dataset = BinaryLabelDataset(df=frame, label_names=["label"], protected_attribute_names=["protected"])
        return float(np.asarray(BinaryLabelDatasetMetric(dataset).consistency(n_neighbors=k)).ravel()[0])


def power_law(sizes: list[int], seconds: list[float]) -> tuple[float, float]:
    """(a, b) of seconds = a * n^b fitted on log scales (b = 1 with one size: linear)."""
    if len(sizes) < 2:
        return seconds[0] / sizes[0], 1.0
    b, log_a = np.polyfit(np.log(sizes), np.log(seconds), 1)
    return float(math.exp(log_a)), float(b)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--big", type=int, nargs="+", default=[1_000_000], help="fairgate alone at these sizes")
    parser.add_argument("--features", type=int, default=10)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--n-jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--aif360-max", type=int, default=100_000, help="largest size AIF360 is timed at")
    parser.add_argument("--loop-max", type=int, default=100_000, help="largest size of AIF360's dataset metric")
    parser.add_argument("--shape", choices=SHAPES, default="audit", help="the features' shape (see above)")
    parser.add_argument("--sample", type=int, default=None, help="the --big sizes on a seeded sample of N people")
    args = parser.parse_args()
    print(
        f"{args.features} features shaped '{args.shape}', k = {args.k}, fairgate on {args.n_jobs} threads, "
        f"median of {args.repeats}"
    )
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    warm_x, warm_y = generate(200, args.features, args.shape)  # imports and first-call costs stay out of the timings
    fairgate_consistency(warm_x, warm_y, args.k, args.n_jobs), aif360_score(warm_x, warm_y, args.k)
    aif360_loop(warm_x, warm_y, args.k)
    measured_aif: list[int] = []
    aif_seconds: list[float] = []
    for rows in args.sizes:
        x, y = generate(rows, args.features, args.shape)
        distinct = np.unique(x, axis=0)
        fg_wall, fg_cpu, fg_value = timed(partial(fairgate_consistency, x, y, args.k, args.n_jobs), args.repeats)
        line: dict[str, Any] = {
            "rows": rows,
            "distinct": distinct.shape[0],
            "ball_tree": tied_share(x, distinct, args.k),
            "fairgate_wall": fg_wall,
            "fairgate_cpu": fg_cpu,
        }
        if rows <= args.aif360_max:
            wall, cpu, value = timed(partial(aif360_score, x, y, args.k), args.repeats)
            assert abs(value - fg_value) <= 1e-9, (value, fg_value)
            line |= {"aif360_wall": wall, "aif360_cpu": cpu, "ratio_wall": wall / fg_wall, "ratio_cpu": cpu / fg_cpu}
            measured_aif.append(rows)
            aif_seconds.append(wall)
        if rows <= args.loop_max:
            wall, _, value = timed(partial(aif360_loop, x, y, args.k), 1)
            assert abs(value - fg_value) <= 1e-9, (value, fg_value)
            line["aif360_dataset_metric_wall"] = wall
        print(" ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in line.items()))
    for rows in args.big:
        x, y = generate(rows, args.features, args.shape)
        # The exact run queries every distinct vector; a sampled run only the sample's (counting them costs a sort).
        counted = f"distinct={np.unique(x, axis=0).shape[0]} " if args.sample is None else ""
        repeats = 1 if rows >= 10**6 else args.repeats  # one run at a million rows and more: the machine is shared
        if args.sample is None:
            wall, cpu, value = timed(partial(fairgate_consistency, x, y, args.k, args.n_jobs), repeats)
            result = f"value={value:.6f}"
        else:
            run = partial(sampled_consistency, x, y, args.k, args.n_jobs, args.sample)
            wall, cpu, (value, low, high) = timed(run, repeats)
            result = f"sampled={min(args.sample, rows)} estimate={value:.6f} ci95=[{low:.6f}, {high:.6f}]"
        print(
            f"rows={rows} {counted}fairgate_wall={wall:.3f} fairgate_cpu={cpu:.3f} {result} "
            f"peak_gb={peak_gb():.2f}"  # the process's peak so far: the largest size's, sizes ascending
        )
        if measured_aif:
            a, b = power_law(measured_aif, aif_seconds)
            estimate = a * rows**b
            print(
                f"AIF360 consistency_score at {rows} rows: EXTRAPOLATED {estimate:.1f} s (power law fitted to its "
                f"measured sizes {measured_aif}: seconds = {a:.3g} * n^{b:.2f}); ratio ~ {estimate / wall:.1f}x (wall)"
            )


if __name__ == "__main__":
    main()
