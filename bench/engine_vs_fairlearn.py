"""Benchmark: fairgate's engine against Fairlearn's MetricFrame, and against a bare DuckDB group-by.

Generates one data set (4 sensitive attributes with 3, 4, 4 and 5 values; labels, scores and predictions)
and writes it to Parquet, then in this one process:

1. Fairlearn: MetricFrame with selection rate, TPR, FPR and PPV by group plus difference() and ratio(),
   over the 4 attributes and their 6 pairs (10 slicings). Run once (it takes minutes at 1M rows).
2. fairgate, the same 10 slicings, every metric with bootstrap intervals (n_bootstrap replicates).
3. fairgate's whole engine on the file: read, cube, every slicing up to triples, bootstrap, verdicts; once with
   the cube counted inside DuckDB (``tasks/inputs/cube_sql.py``, as the CLI's streaming path counts it: no row
   reaches Python) and once from ``pl.scan_parquet`` (the engine's own scan, for a frame given in Python).
4. A bare DuckDB ``count(*) group by`` of the four attributes on the same file.

Timings are medians of --repeats runs (the machine is shared and noisy). The group-by and the engine with the
DuckDB cube run in turn within each round, so that a change in the machine's load falls on both alike; the
ratio of each round's engine to its group-by is printed too, with the load average before and after. The last
line prints the ratios.

    .venv/bin/python bench/engine_vs_fairlearn.py --rows 1000000
    .venv/bin/python bench/engine_vs_fairlearn.py --rows 10000000 --skip-fairlearn
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

import fairgate

ATTRIBUTES = {"region": 3, "age_band": 4, "income_band": 4, "ethnicity": 5}
BOOTSTRAP = 1000


def generate(rows: int, seed: int = 7) -> pa.Table:
    """Rows with group-dependent base rates and a mildly biased, continuous score."""
    rng = np.random.default_rng(seed)
    codes = {name: rng.integers(0, k, rows, dtype=np.int8) for name, k in ATTRIBUTES.items()}
    shift = sum(0.15 * c / k for (name, k), c in zip(ATTRIBUTES.items(), codes.values(), strict=True))
    y_true = (rng.random(rows) < 0.25 + shift / 2).astype(np.int8)
    logit = 1.5 * (y_true - 0.5) + shift - 0.3 + rng.normal(0.0, 1.0, rows)
    score = 1.0 / (1.0 + np.exp(-logit))
    columns = {
        name: pa.DictionaryArray.from_arrays(pa.array(c), pa.array([f"{name}_{i}" for i in range(k)]))
        for (name, k), c in zip(ATTRIBUTES.items(), codes.values(), strict=True)
    }
    return pa.table({**columns, "y_true": y_true, "score": score, "y_pred": (score >= 0.5).astype(np.int8)})


def policy(*, triples: bool) -> fairgate.Policy:
    names = list(ATTRIBUTES)
    return fairgate.Policy.model_validate(
        {
            "sensitive_attributes": [{"name": n} for n in names],
            "metrics": [
                {"name": "demographic_parity_difference", "threshold": 0.1},
                {"name": "disparate_impact_ratio", "threshold": 0.8},
                {"name": "equalized_odds_difference", "threshold": 0.1},
                {"name": "predictive_parity_difference", "threshold": 0.1},
                {"name": "calibration_difference", "threshold": 0.05},
            ],
            "intersectional_analysis": {"min_group_size": 30, "include_triples": triples},
            "statistics": {"n_bootstrap": BOOTSTRAP},
        }
    )


def fairlearn_slicings(frame: pl.DataFrame) -> float:
    """Fairlearn MetricFrame over the 10 slicings; returns seconds."""
    import itertools

    from fairlearn.metrics import MetricFrame, false_positive_rate, selection_rate, true_positive_rate
    from sklearn.metrics import precision_score

    data = frame.select(*ATTRIBUTES, "y_true", "y_pred").to_pandas()
    metrics = {
        "selection_rate": selection_rate,
        "tpr": true_positive_rate,
        "fpr": false_positive_rate,
        "ppv": lambda y, p: precision_score(y, p, zero_division=0),
    }
    slicings = [[a] for a in ATTRIBUTES] + [list(p) for p in itertools.combinations(ATTRIBUTES, 2)]
    start = time.perf_counter()
    for slicing in slicings:
        frame_ = MetricFrame(
            metrics=metrics, y_true=data["y_true"], y_pred=data["y_pred"], sensitive_features=data[slicing]
        )
        frame_.difference()
        frame_.ratio()
    return time.perf_counter() - start


def fairgate_slicings(table: pa.Table) -> float:
    """fairgate: cube + the same 10 slicings with every metric and bootstrap intervals; returns seconds."""
    start = time.perf_counter()
    fairgate.audit(table, policy(triples=False))
    return time.perf_counter() - start


def fairgate_engine_on_file(path: Path, exact_auc: bool) -> float:
    """Read the file, then the whole engine (all slicings up to triples, bootstrap, verdicts)."""
    start = time.perf_counter()
    frame = pl.scan_parquet(path)
    fairgate.audit(frame, policy(triples=True), exact_auc=exact_auc)
    return time.perf_counter() - start


def fairgate_engine_duckdb(path: Path) -> float:
    """The cube counted by DuckDB from the file (one GROUP BY in sql/cube_cells.sql), then the whole engine."""
    from fairgate.engine.audit import audit_counted
    from tasks.inputs.cube_sql import cube_from_relation

    start = time.perf_counter()
    with duckdb.connect() as con:
        con.execute("set enable_progress_bar = false")
        con.read_parquet(str(path)).create_view("bench_rows")
        judged_by = policy(triples=True)
        cube = cube_from_relation(con, "select * from bench_rows", judged_by, score_histogram=False)
    audit_counted(cube, judged_by)
    return time.perf_counter() - start


def duckdb_group_by(path: Path) -> float:
    start = time.perf_counter()
    with duckdb.connect() as con:
        keys = ", ".join(ATTRIBUTES)
        con.execute(f"select {keys}, count(*) from read_parquet(?) group by {keys}", [str(path)]).fetchall()
    return time.perf_counter() - start


def median_of(run: Callable[[], float], repeats: int) -> float:
    return statistics.median(run() for _ in range(repeats))


def in_turn(runs: dict[str, Callable[[], float]], repeats: int) -> dict[str, list[float]]:
    """Each run's times over ``repeats`` rounds, the runs taken one after another within every round."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            times[name].append(run())
    return times


def load_average() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--skip-fairlearn", action="store_true", help="skip the (slow) Fairlearn comparison")
    args = parser.parse_args()

    print(f"load average (1/5/15 min) at the start: {load_average()}")
    table = generate(args.rows)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.parquet"
        pq.write_table(table, path)
        fairgate_slicings(table)  # warm-up: imports, first-call compilation
        ours = median_of(lambda: fairgate_slicings(table), args.repeats)
        print(f"fairgate, 10 slicings, all metrics, {BOOTSTRAP} bootstrap replicates: {ours:.3f} s (median)")
        ratios = []
        if not args.skip_fairlearn:
            theirs = fairlearn_slicings(pl.DataFrame(table))
            print(f"Fairlearn MetricFrame, 10 slicings, 4 metrics + difference/ratio: {theirs:.1f} s")
            ratios.append(f"fairlearn/fairgate = {theirs / ours:.0f}x")
        duckdb_group_by(path), fairgate_engine_duckdb(path)  # warm-up: both sides' first-call costs (imports)
        # Only the two DuckDB runs take turns: right after a Polars scan the group-by runs about 8% slower
        # (Polars' worker threads are still winding down), which would flatter the ratio.
        times = in_turn(
            {"duck": lambda: duckdb_group_by(path), "engine": lambda: fairgate_engine_duckdb(path)}, args.repeats
        )
        duck, engine = statistics.median(times["duck"]), statistics.median(times["engine"])
        engine_polars = median_of(lambda: fairgate_engine_on_file(path, exact_auc=False), args.repeats)
        paired = statistics.median(e / d for e, d in zip(times["engine"], times["duck"], strict=True))
        # Peak resident memory so far: the data, the cube, replicates and slicings (before the AUC score table).
        peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
        engine_auc = median_of(lambda: fairgate_engine_on_file(path, exact_auc=True), max(1, args.repeats // 2))
        peak_auc_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
        print(f"bare DuckDB count(*) group by on the file: {duck:.3f} s (median)")
        print(
            f"fairgate engine on the file (DuckDB cube + slicings up to triples + bootstrap): {engine:.3f} s (median)"
        )
        print(f"  ... the same with the cube from pl.scan_parquet: {engine_polars:.3f} s (median)")
        print(f"  ... plus exact per-group AUC from the row-level score table: {engine_auc:.3f} s (median)")
        rounds = ", ".join(f"{e / d:.2f}x" for e, d in zip(times["engine"], times["duck"], strict=True))
        print(f"engine/duckdb in each round: {rounds} (median {paired:.2f}x)")
        print(f"load average (1/5/15 min) at the end: {load_average()}")
        print(f"peak memory of this process: {peak_gb:.2f} GB (engine), {peak_auc_gb:.2f} GB (with exact AUC)")
        ratios.append(f"engine/duckdb = {engine / duck:.2f}x")
        ratios.append(f"engine_polars_scan/duckdb = {engine_polars / duck:.2f}x")
        ratios.append(f"engine+exact_auc/duckdb = {engine_auc / duck:.2f}x")
        memory = f"peak_memory={peak_gb:.2f}GB, with_exact_auc={peak_auc_gb:.2f}GB"
        print(f"rows={args.rows:,}: " + ", ".join(ratios) + f", {memory}")


if __name__ == "__main__":
    main()
