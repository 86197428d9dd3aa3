"""Benchmark: fairgate's multiclass engine against Fairlearn's MetricFrame doing the same per-class work.

Generates N rows (seeded, in chunks of 1M straight into Polars: no pandas copy for fairgate) with 2 sensitive
attributes (4 and 5 values) and K classes (a true class and an imperfect prediction whose class mix depends on
the groups). Each side runs in its own fresh child process per size and K (``bench/peer_runs.py``: medians of
wall and CPU seconds, peak resident memory of that process, the generated data included), over the 3 slicings
(each attribute and the pair):

1. fairgate (``audit_multiclass``): one multiclass cube, then the population and every slicing as its marginal:
   the K x K confusion matrix, per-class selection rate, base rate, TPR (recall), FNR, FPR, precision and
   accuracy per group with Wilson intervals, and the per-class and worst-case demographic parity / equalized
   odds / equal opportunity / predictive parity summaries with --bootstrap simultaneous bootstrap intervals.
   One warm-up run, then the median of --repeats. fairgate runs its slicings on two threads, so its CPU time can
   exceed its wall time.
2. Fairlearn: one MetricFrame per slicing with sklearn's ``recall_score`` and ``precision_score``
   (``average=None``: per class), ``confusion_matrix``, ``accuracy_score``, the per-class false positive rate
   from ``multilabel_confusion_matrix`` and per-class selection and base rates (no summaries, no intervals).
   Given integer class codes, its fastest input, converted to pandas before its clock starts. Fairlearn's own
   ``demographic_parity_difference`` / ``equalized_odds_difference`` on each class's one-vs-rest indicators would
   add 2 K more MetricFrames per slicing; they are left out, which favours Fairlearn. --peer-repeats runs
   (default 1: at 10M rows one run takes minutes); the report says which.

    .venv/bin/python bench/multiclass_vs_fairlearn.py --rows 1000000 10000000 --classes 3 5 \
        --peer-part-rows 10000000 --cache /tmp/peer-cache
    .venv/bin/python bench/multiclass_vs_fairlearn.py --rows 10000000 --skip-peer     # fairgate only
"""

from __future__ import annotations

import argparse
import itertools
from functools import partial
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
from peer_runs import Case, Runner, add_peer_arguments, compare_sizes, emit, measure, peak_gb

import fairgate

ATTRIBUTES = {"region": 4, "age_band": 5}
CHUNK = 1_000_000


def generate(rows: int, k: int, seed: int = 7) -> pl.DataFrame:
    """Attributes as Enums and classes as Enums of "c0".."c{k-1}" (compact, as Parquet or Arrow would give)."""
    classes = [f"c{i}" for i in range(k)]
    chunks = []
    for start, stream in zip(range(0, rows, CHUNK), np.random.SeedSequence(seed).spawn(-(-rows // CHUNK)), strict=True):
        size = min(CHUNK, rows - start)
        rng = np.random.default_rng(stream)
        codes = {name: rng.integers(0, n, size, dtype=np.int8) for name, n in ATTRIBUTES.items()}
        shift = sum(0.3 * c / n for (name, n), c in zip(ATTRIBUTES.items(), codes.values(), strict=True))
        # The true class: a latent score in k ordered bands, shifted by the groups.
        latent = rng.normal(0.0, 1.0, size) + shift
        truth = np.clip(np.floor((latent + 1.5) / 3.0 * k), 0, k - 1).astype(np.int8)
        noise = rng.random(size) < 0.3
        guess = np.where(noise, rng.integers(0, k, size, dtype=np.int8), truth)
        frame = {name: _enum(c, [f"{name}_{i}" for i in range(ATTRIBUTES[name])]) for name, c in codes.items()}
        frame["y_true"] = _enum(truth, classes)
        frame["y_pred"] = _enum(guess, classes)
        chunks.append(pl.DataFrame(frame))
    return pl.concat(chunks, rechunk=True)


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


def fairgate_run(frame: pl.DataFrame, k: int, bootstrap: int) -> None:
    """Cube + population + 3 slicings, every per-class metric and summary with intervals."""
    from fairgate.engine.multiclass import audit_multiclass
    from fairgate.policy.task import MulticlassOptions

    audit = audit_multiclass(frame, policy(bootstrap), MulticlassOptions(classes=[f"c{i}" for i in range(k)]))
    assert len(audit.slicings) == 4  # population, 2 attributes, 1 pair


def fairlearn_metrics(k: int) -> dict[str, Any]:
    """sklearn's per-class metrics for MetricFrame (the same per-group work as fairgate's)."""
    from sklearn.metrics import (
        accuracy_score,
        confusion_matrix,
        multilabel_confusion_matrix,
        precision_score,
        recall_score,
    )

    labels = list(range(k))

    def selection_rates(y_true: Any, y_pred: Any) -> np.ndarray:
        return np.bincount(np.asarray(y_pred), minlength=k) / len(y_pred)

    def base_rates(y_true: Any, y_pred: Any) -> np.ndarray:
        return np.bincount(np.asarray(y_true), minlength=k) / len(y_true)

    def false_positive_rates(y_true: Any, y_pred: Any) -> np.ndarray:
        (tn, fp), _ = multilabel_confusion_matrix(y_true, y_pred, labels=labels).transpose(1, 2, 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(fp / (fp + tn))

    return {
        "recall": partial(recall_score, labels=labels, average=None, zero_division=np.nan),
        "precision": partial(precision_score, labels=labels, average=None, zero_division=np.nan),
        "false_positive_rate": false_positive_rates,
        "confusion": partial(confusion_matrix, labels=labels),
        "accuracy": accuracy_score,
        "selection_rate": selection_rates,
        "base_rate": base_rates,
    }


def fairlearn_run(data: Any, k: int, *, part: bool = False) -> None:
    """One MetricFrame per slicing with sklearn's per-class metrics.

    ``part``: recall by region only (one slicing x one metric), for the estimate at sizes where the full run is
    too long.
    """
    from fairlearn.metrics import MetricFrame

    slicings = [[a] for a in ATTRIBUTES] + [list(p) for p in itertools.combinations(ATTRIBUTES, 2)]
    metrics = fairlearn_metrics(k)
    if part:
        slicings, metrics = slicings[:1], {"recall": metrics["recall"]}
    for slicing in slicings:
        frame = MetricFrame(
            metrics=metrics, y_true=data["y_true"], y_pred=data["y_pred"], sensitive_features=data[slicing]
        )
        frame.by_group  # noqa: B018  (computed in the constructor; read as a user would)


def child(args: argparse.Namespace) -> None:
    rows, k = args.rows[0], args.classes[0]
    frame = generate(rows, k)
    data_gb = peak_gb()
    if args.child == "fairgate":
        emit(
            measure(
                "fairgate",
                rows,
                lambda: fairgate_run(frame, k, args.bootstrap),
                args.repeats,
                data_gb=data_gb,
                warm_up=True,
            )
        )
        return
    run = partial(fairlearn_run, as_pandas(frame), k, part=args.child == "fairlearn-part")
    emit(measure(args.child, rows, run, args.repeats, data_gb=data_gb, warm_up=False))


def as_pandas(frame: pl.DataFrame) -> Any:
    """Fairlearn's input: integer class codes and categorical attributes in pandas."""
    data = frame.select(
        *ATTRIBUTES, pl.col("y_true").to_physical().cast(pl.Int64), pl.col("y_pred").to_physical().cast(pl.Int64)
    ).to_pandas()
    data[list(ATTRIBUTES)] = data[list(ATTRIBUTES)].astype("category")
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_peer_arguments(parser, per="size and K", children=[])
    parser.add_argument("--classes", type=int, nargs="+", default=[3, 5], help="values of K to run")
    parser.add_argument("--peer-repeats", type=int, default=1, help="Fairlearn runs per size and K")
    args = parser.parse_args()
    if args.child:
        return child(args)

    cases = [
        Case(rows, ["--classes", str(k), "--bootstrap", str(args.bootstrap)], f"K={k}")
        for k, rows in itertools.product(args.classes, sorted(args.rows))
    ]
    compare_sizes(
        Runner(__file__, args.cache, set(args.peer_part_rows)),
        cases,
        ours=f"fairgate multiclass engine (cube + population + 3 slicings, {args.bootstrap} bootstrap replicates)",
        peer="Fairlearn MetricFrame, 3 slicings, per-class metrics",
        repeats=args.repeats,
        peer_repeats=args.peer_repeats,
        full_sizes=args.rows,
        skip_peer=args.skip_peer,
    )


if __name__ == "__main__":
    main()
