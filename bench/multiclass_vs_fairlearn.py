"""Benchmark: fairgate's multiclass engine against Fairlearn's MetricFrame doing the same per-class work.

Generates N rows with 2 sensitive attributes (4 and 5 values) and K classes (a true class and an imperfect
prediction whose class mix depends on the groups), then, for the 3 slicings (each attribute and the pair):

1. fairgate: one multiclass cube, then every slicing as its marginal: the K x K confusion matrix, per-class
   selection rate, base rate, TPR (recall), FNR, FPR, precision and accuracy per group with Wilson intervals,
   and the per-class and worst-case demographic parity / equalized odds / equal opportunity / predictive parity
   summaries with --bootstrap simultaneous bootstrap intervals.
2. Fairlearn: one MetricFrame per slicing with sklearn's ``recall_score`` and ``precision_score``
   (``average=None``), ``confusion_matrix``, ``accuracy_score`` and per-class selection rates (no summaries,
   no intervals).
   Given integer class codes, its fastest input. Fairlearn's own ``demographic_parity_difference`` /
   ``equalized_odds_difference`` on each class's one-vs-rest indicators would add 2 K more MetricFrames per
   slicing; they are left out, which favours Fairlearn.

Times are wall-clock and CPU seconds of this process (on a shared machine the CPU time is what the work costs;
fairgate runs its slicings on two threads, so its CPU time can exceed its wall time). fairgate's are medians of
--repeats runs (the machine is shared and noisy); Fairlearn runs once per K,
after every fairgate run. Peak memory is the process's resident peak after fairgate's runs up to that K (the
generated data included), before Fairlearn.

    .venv/bin/python bench/multiclass_vs_fairlearn.py --rows 1000000
    .venv/bin/python bench/multiclass_vs_fairlearn.py --rows 10000000 --classes 5
"""

from __future__ import annotations

import argparse
import itertools
import resource
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

import fairgate
from fairgate.engine.multiclass import audit_multiclass
from fairgate.policy.task import MulticlassOptions

ATTRIBUTES = {"region": 4, "age_band": 5}


def generate(rows: int, k: int, seed: int = 7) -> pl.DataFrame:
    """Attributes as Enums and classes as Enums of "c0".."c{k-1}" (compact, as Parquet or Arrow would give)."""
    rng = np.random.default_rng(seed)
    codes = {name: rng.integers(0, n, rows, dtype=np.int8) for name, n in ATTRIBUTES.items()}
    shift = sum(0.3 * c / n for (name, n), c in zip(ATTRIBUTES.items(), codes.values(), strict=True))
    # The true class: a latent score in k ordered bands, shifted by the groups.
    latent = rng.normal(0.0, 1.0, rows) + shift
    truth = np.clip(np.floor((latent + 1.5) / 3.0 * k), 0, k - 1).astype(np.int8)
    noise = rng.random(rows) < 0.3
    guess = np.where(noise, rng.integers(0, k, rows, dtype=np.int8), truth)
    classes = [f"c{i}" for i in range(k)]
    frame = {name: _enum(c, [f"{name}_{i}" for i in range(ATTRIBUTES[name])]) for name, c in codes.items()}
    frame["y_true"] = _enum(truth, classes)
    frame["y_pred"] = _enum(guess, classes)
    return pl.DataFrame(frame)


def _enum(codes: np.ndarray, labels: list[str]) -> pl.Series:
    """Integer codes as an Enum column without building the strings (through an Arrow dictionary array)."""
    series = pl.from_arrow(pa.DictionaryArray.from_arrays(pa.array(codes), pa.array(labels)))
    assert isinstance(series, pl.Series)
    return series.cast(pl.Enum(labels))


def policy(bootstrap: int) -> fairgate.Policy:
    return fairgate.Policy.from_mapping(
        {
            "fairness_checker": {
                "sensitive_attributes": [{"name": n} for n in ATTRIBUTES],
                "metrics": [{"name": "demographic_parity_difference", "threshold": 0.1}],
                "intersectional_analysis": {"min_group_size": 30, "include_triples": False},
                "statistics": {"n_bootstrap": bootstrap},
            }
        }
    )


@dataclass(frozen=True)
class Timing:
    """Wall-clock and CPU seconds (the CPU time of this process: what the work costs whatever the load)."""

    wall: float
    cpu: float


def fairgate_run(frame: pl.DataFrame, k: int, bootstrap: int) -> Timing:
    """Cube + population + 3 slicings, every per-class metric and summary with intervals; returns seconds."""
    options = MulticlassOptions(classes=[f"c{i}" for i in range(k)])
    start, cpu = time.perf_counter(), time.process_time()
    audit = audit_multiclass(frame, policy(bootstrap), options)
    elapsed = Timing(time.perf_counter() - start, time.process_time() - cpu)
    assert len(audit.slicings) == 4  # population, 2 attributes, 1 pair
    return elapsed


def fairlearn_run(frame: pl.DataFrame, k: int) -> Timing:
    """One MetricFrame per slicing with sklearn's per-class metrics (the same per-group work); seconds."""
    from fairlearn.metrics import MetricFrame
    from sklearn.metrics import accuracy_score, confusion_matrix, precision_score, recall_score

    labels = list(range(k))
    data = frame.select(
        *ATTRIBUTES, pl.col("y_true").to_physical().cast(pl.Int64), pl.col("y_pred").to_physical().cast(pl.Int64)
    ).to_pandas()
    data[list(ATTRIBUTES)] = data[list(ATTRIBUTES)].astype("category")

    def selection_rates(y_true: Any, y_pred: Any) -> np.ndarray:
        return np.bincount(np.asarray(y_pred), minlength=k) / len(y_pred)

    metrics = {
        "recall": partial(recall_score, labels=labels, average=None, zero_division=np.nan),
        "precision": partial(precision_score, labels=labels, average=None, zero_division=np.nan),
        "confusion": partial(confusion_matrix, labels=labels),
        "accuracy": accuracy_score,
        "selection_rate": selection_rates,
    }
    slicings = [[a] for a in ATTRIBUTES] + [list(p) for p in itertools.combinations(ATTRIBUTES, 2)]
    start, cpu = time.perf_counter(), time.process_time()
    for slicing in slicings:
        frame_ = MetricFrame(
            metrics=metrics, y_true=data["y_true"], y_pred=data["y_pred"], sensitive_features=data[slicing]
        )
        frame_.by_group  # noqa: B018  (computed in the constructor; read as a user would)
    return Timing(time.perf_counter() - start, time.process_time() - cpu)


def median_of(run: Callable[[], Timing], repeats: int) -> Timing:
    runs = [run() for _ in range(repeats)]
    return Timing(statistics.median(r.wall for r in runs), statistics.median(r.cpu for r in runs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--classes", type=int, nargs="+", default=[3, 4, 5], help="values of K to run")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--skip-fairlearn", action="store_true", help="skip the (slow) Fairlearn comparison")
    args = parser.parse_args()

    # fairgate first for every K (the peak memory it reaches is then its own and the data's), then Fairlearn.
    ours: dict[int, Timing] = {}
    lines: dict[int, str] = {}
    for k in args.classes:
        frame = generate(args.rows, k)
        fairgate_run(frame, k, args.bootstrap)  # warm-up: imports, first-call compilation
        ours[k] = median_of(partial(fairgate_run, frame, k, args.bootstrap), args.repeats)
        peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
        lines[k] = (
            f"rows={args.rows:,} K={k}: fairgate {ours[k].wall:.3f} s wall, {ours[k].cpu:.3f} s CPU "
            f"(medians of {args.repeats}, "
            f"{args.bootstrap} bootstrap replicates), peak memory so far {peak_gb:.2f} GB"
        )
        print(lines[k], flush=True)
        del frame
    if not args.skip_fairlearn:
        for k in args.classes:
            theirs = fairlearn_run(generate(args.rows, k), k)
            lines[k] += (
                f"; Fairlearn MetricFrame {theirs.wall:.1f} s wall, {theirs.cpu:.1f} s CPU; fairlearn/fairgate = "
                f"{theirs.wall / ours[k].wall:.0f}x wall, {theirs.cpu / ours[k].cpu:.0f}x CPU"
            )
            print(
                f"  K={k}: Fairlearn MetricFrame, 3 slicings: {theirs.wall:.1f} s wall, {theirs.cpu:.1f} s CPU",
                flush=True,
            )
    print("\n".join(lines.values()))


if __name__ == "__main__":
    main()
