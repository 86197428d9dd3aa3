"""Benchmark: `fairgate audit` end to end on N generated rows in Parquet (a script, not a timed test).

    .venv/bin/python bench/end_to_end.py --rows 1000000
    .venv/bin/python bench/end_to_end.py --rows 10000000

Reports (1) the CLI run as a user runs it: wall time and peak memory (max RSS of the process); (2) the same
flow run in-process, stage by stage (stage, validate, align, cube, metrics, adjudicate, write, ...: the
flow's own task runs, timed by Prefect) with each stage's share; (3) the bare DuckDB scan of the three files
and the fixed costs (Prefect ephemeral start-up, Great Expectations import), so that the run can be compared
with "20x the bare scan + Prefect start-up".
Generated data goes to bench/out/ (git-ignored).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

ATTRIBUTES = {
    "sex": ["female", "male"],
    "race": ["white", "black", "hispanic", "asian", "native", "other"],
    "age_band": ["18-25", "26-45", "46-65", "65+"],
    "region": ["north", "south", "east", "west", "centre"],
}
POLICY = """\
fairness_checker:
  sensitive_attributes:
    - {name: sex, values: [female, male], reference_group: male}
    - {name: race, values: [white, black, hispanic, asian, native, other], reference_group: white}
    - {name: age_band, values: ["18-25", "26-45", "46-65", "65+"]}
    - {name: region, values: [north, south, east, west, centre]}
  metrics:
    - {name: disparate_impact_ratio, threshold: 0.8}
    - {name: equal_opportunity_difference, threshold: 0.05}
    - {name: equalized_odds_difference, threshold: 0.05}
  intersectional_analysis: {enabled: true, min_group_size: 200, attribute_pairs: [[sex, race], [race, age_band]]}
  reporting: {format: [json, junit]}
"""


def generate(folder: Path, rows: int, chunk: int = 2_000_000, seed: int = 0) -> dict[str, Path]:
    """Write predictions / labels / attributes Parquet files in chunks (bounded memory)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {role: folder / f"{role}_{rows}.parquet" for role in ("predictions", "labels", "attributes")}
    if all(p.exists() for p in paths.values()):
        return paths
    rng = np.random.default_rng(seed)
    writers: dict[str, pq.ParquetWriter] = {}
    for start in range(0, rows, chunk):
        n = min(chunk, rows - start)
        ids = np.arange(start, start + n, dtype=np.int64)
        codes = {name: rng.integers(0, len(values), n) for name, values in ATTRIBUTES.items()}
        # A mild built-in bias: group 1 of race gets lower scores, so the audit has something to find.
        score = np.clip(rng.beta(2, 3, n) - 0.05 * (codes["race"] == 1), 0.0, 1.0)
        y_true = (rng.random(n) < score).astype(np.int8)
        tables = {
            "predictions": pa.table({"id": ids, "score": score, "y_pred": (score >= 0.5).astype(np.int8)}),
            "labels": pa.table({"id": ids, "y_true": y_true}),
            "attributes": pa.table(
                {
                    "id": ids,
                    **{
                        name: pa.DictionaryArray.from_arrays(
                            pa.array(codes[name].astype(np.int32)), pa.array(values)
                        ).cast(pa.string())
                        for name, values in ATTRIBUTES.items()
                    },
                }
            ),
        }
        for role, table in tables.items():
            if role not in writers:
                writers[role] = pq.ParquetWriter(paths[role], table.schema)
            writers[role].write_table(table)
    for writer in writers.values():
        writer.close()
    return paths


def bare_scan(paths: dict[str, Path]) -> float:
    """Read every column of the three files once with DuckDB (the floor any audit is compared with)."""
    import duckdb

    con = duckdb.connect()
    started = time.perf_counter()
    for path in paths.values():
        # hash() of every column forces every value to be read (min() alone is answered from Parquet statistics).
        con.execute("select count(*), sum(hash(columns(*))) from read_parquet(?)", [str(path)]).fetchall()
    return time.perf_counter() - started


def fixed_costs() -> dict[str, float]:
    """Prefect ephemeral start-up (a no-op flow in a fresh process) and the Great Expectations import."""
    code = (
        "import os; os.environ.setdefault('PREFECT_SERVER_ANALYTICS_ENABLED','false');"
        "from prefect import flow\n@flow\ndef noop(): return 1\nnoop()"
    )
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    prefect = time.perf_counter() - started
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import great_expectations"], check=True, capture_output=True)
    gx = time.perf_counter() - started
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True, capture_output=True)
    python = time.perf_counter() - started
    return {"prefect_noop_flow_s": prefect, "great_expectations_import_s": gx - python}


def cli_run(paths: dict[str, Path], policy: Path, out: Path) -> dict[str, Any]:
    """`fairgate audit` as a user runs it; peak memory is the child's max RSS."""
    args = [
        str(Path(sys.executable).parent / "fairgate"),
        "audit",
        "--policy",
        str(policy),
        "--predictions",
        str(paths["predictions"]),
        "--labels",
        str(paths["labels"]),
        "--attributes",
        str(paths["attributes"]),
        "--out",
        str(out),
        "--quiet",
        "--trail",
        str(out / "bench_trail.duckdb"),
    ]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    completed = subprocess.run(args, capture_output=True, text=True)
    wall = time.perf_counter() - started
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if completed.returncode not in (0, 1):
        raise SystemExit(f"fairgate audit failed ({completed.returncode}):\n{completed.stderr[-4000:]}")
    return {"exit_code": completed.returncode, "wall_s": wall, "peak_rss_mb": max(peak_kb, before) / 1024}


# The flow's task names, grouped into the stages the report shows (others keep their own name).
STAGES = {
    "stage inputs": "stage",
    "validate inputs": "validate",
    "align": "align",
    "validate aligned": "validate",
    "build cube": "cube",
    "metrics": "metrics",
    "adjudicate": "adjudicate",
    "write outputs": "write",
}


def stages(paths: dict[str, Path], policy_path: Path, out: Path) -> dict[str, float]:
    """The ``fairness-audit`` flow itself, run in-process; each stage's time read back from its task runs.

    Mapped metric tasks run side by side in threads, so the stage times may add up to more than the wall time.
    """
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    from flows.audit import fairness_audit
    from tasks.validation.gx_suite import load_great_expectations

    load_great_expectations()  # the import is a fixed cost, reported apart
    folder = out / "in_process"
    state = fairness_audit(
        policy=str(policy_path),
        predictions=str(paths["predictions"]),
        labels=str(paths["labels"]),
        attributes=str(paths["attributes"]),
        out_dir=str(folder),
        model_name="bench",
        model_version="1",
        trail=str(folder / "bench_trail.duckdb"),
        return_state=True,
    )
    if state.is_failed():
        raise SystemExit(f"the in-process flow failed: {state.message}")
    flow_run_id = state.state_details.flow_run_id
    assert flow_run_id is not None  # a flow called in-process always has its run
    flow_runs = FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id]))
    runs: list[Any] = []
    with get_client(sync_client=True) as client:
        while page := client.read_task_runs(flow_run_filter=flow_runs, limit=200, offset=len(runs)):  # API max
            runs += page
    timings: dict[str, float] = {}
    for run in sorted(runs, key=lambda r: r.start_time or r.expected_start_time):  # in the flow's order
        task_name = re.sub(r"-[0-9a-f]{3}$", "", run.name)  # Prefect's default run name: "<task>-<hex>"
        stage = STAGES.get(task_name.split(" (")[0], task_name)
        timings[stage] = timings.get(stage, 0.0) + run.total_run_time.total_seconds()
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out")
    parser.add_argument("--skip-cli", action="store_true", help="only the in-process stage timings")
    args = parser.parse_args()
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

    started = time.perf_counter()
    paths = generate(args.out / "data", args.rows)
    generation = time.perf_counter() - started
    policy = args.out / "bench_policy.yaml"
    policy.write_text(POLICY)
    run_out = args.out / f"run_{args.rows}"

    report: dict[str, Any] = {"rows": args.rows, "cpus": os.cpu_count(), "generate_s": round(generation, 2)}
    report["bare_duckdb_scan_s"] = bare_scan(paths)
    report["fixed"] = fixed_costs()
    if not args.skip_cli:
        report["cli"] = cli_run(paths, policy, run_out)
    self_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    timings = stages(paths, policy, run_out)
    total = sum(timings.values())
    report["in_process"] = {
        "total_s": total,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "rss_before_mb": self_before / 1024,
        "stages": {k: {"s": round(v, 3), "share": round(v / total, 3)} for k, v in timings.items()},
    }
    report["ratio_in_process_to_bare_scan"] = total / report["bare_duckdb_scan_s"]
    if "cli" in report:
        fixed = report["fixed"]["prefect_noop_flow_s"]
        report["ratio_cli_minus_prefect_startup_to_bare_scan"] = (report["cli"]["wall_s"] - fixed) / report[
            "bare_duckdb_scan_s"
        ]
    print(json.dumps(report, indent=2, default=lambda v: round(v, 3) if isinstance(v, float) else str(v)))


if __name__ == "__main__":
    main()
