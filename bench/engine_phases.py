"""Benchmark: the CPU time of each phase of the binary engine, this checkout against exports of other commits.

    .venv/bin/python bench/engine_phases.py [--rows 10000000] [--triples] [--exact-auc] [--repeats 3]
        [--rounds 2] [--baseline DIR ...]

Writes ``bench/engine_vs_fairlearn.py``'s data to a Parquet file once, then each round runs, for this checkout
and each ``--baseline`` directory (an export of another commit: ``git archive REV | tar -x -C DIR``), a fresh
process that audits ``pl.scan_parquet(file)`` once (warm-up) and ``--repeats`` more times, timing each phase
with the slicings one after the other: the cube (the scan), planning, the slicings, adjudication, and with
``--exact-auc`` the score table and the slicings that read it; then the whole ``fairgate.audit`` (two threads);
then, where the checkout has them, the cube counted inside DuckDB (``tasks/inputs/cube_sql.py``, the streaming
path's cube) and the whole audit from that cube (``fairgate.engine.audit.audit_counted``), and the bare DuckDB
``count(*) group by`` of the four attributes on the same file (``bench/engine_vs_fairlearn.py``'s yardstick), with
the ratio of the two.
It prints the median CPU and wall seconds per phase and the load average: on a shared machine CPU time is the
figure to compare.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

_ONE_SIDE = """
import statistics, sys, time
sys.path.insert(0, "bench")
import engine_vs_fairlearn as bench
import fairgate, polars as pl
from fairgate.engine.adjudicate import adjudicate
from fairgate.engine.cube import add_score_table, build_cube
from fairgate.engine.slicing import compute_slicing, plan_slicings, wants_auc
import duckdb
try:  # an export of an older commit may have neither
    from fairgate.engine.audit import audit_counted as counted
    from tasks.inputs.cube_sql import cube_from_relation
except ImportError:
    counted = None
policy = bench.policy(triples={triples})
def timed(times, name, step):
    cpu, wall = time.process_time(), time.perf_counter()
    result = step()
    times[name] = (time.process_time() - cpu, time.perf_counter() - wall)
    return result
def once():
    times = {{}}
    cube = timed(times, "cube", lambda: build_cube(pl.scan_parquet({path!r}), policy, exact_auc=False))
    plan = timed(times, "plan", lambda: plan_slicings(cube, policy))
    parts = timed(times, "slicings", lambda: [compute_slicing(cube, s, policy) for s in plan])
    timed(times, "adjudicate", lambda: adjudicate(cube, parts, policy))
    if {auc}:
        scored = timed(times, "score table", lambda: add_score_table(cube, pl.scan_parquet({path!r}), policy))
        auc_plan = [s for s in plan if wants_auc(s, policy)]
        timed(times, "auc slicings", lambda: [compute_slicing(scored, s, policy) for s in auc_plan])
    timed(times, "audit", lambda: fairgate.audit(pl.scan_parquet({path!r}), policy, exact_auc={auc}))
    if counted is not None:  # this checkout: the cube counted in DuckDB, then the engine on it
        con = duckdb.connect()
        con.execute("set enable_progress_bar = false")  # its bar would mix into these lines
        con.read_parquet({path!r}).create_view("bench_rows")
        sql = "select * from bench_rows"
        count = lambda: cube_from_relation(con, sql, policy, score_histogram=False)
        timed(times, "cube (DuckDB)", count)
        timed(times, "audit (DuckDB)", lambda: counted(count(), policy))
        keys = ", ".join(bench.ATTRIBUTES)
        bare = f"select {{keys}}, count(*) from bench_rows group by {{keys}}"
        timed(times, "bare group-by", lambda: con.execute(bare).fetchall())
        con.close()
    return times
once()
runs = [once() for _ in range({repeats})]
for name in runs[0]:
    cpu = statistics.median(r[name][0] for r in runs)
    wall = statistics.median(r[name][1] for r in runs)
    print(f"{{name}} {{cpu:.3f}} {{wall:.3f}}")
"""


def one_side(directory: Path, path: Path, args: argparse.Namespace) -> dict[str, tuple[float, float]]:
    """Median (CPU, wall) seconds per phase with the code in ``directory``."""
    env = {**os.environ, "PYTHONPATH": str(directory)}
    code = _ONE_SIDE.format(path=str(path), triples=args.triples, auc=args.exact_auc, repeats=args.repeats)
    done = subprocess.run([sys.executable, "-c", code], cwd=directory, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{directory}: {done.stderr[-2000:]}")
    phases = {}
    for line in done.stdout.strip().splitlines():
        name, cpu, wall = line.rsplit(" ", 2)
        phases[name] = (float(cpu), float(wall))
    return phases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--triples", action="store_true", help="audit the triples too (as the 10M-row figures)")
    parser.add_argument("--exact-auc", action="store_true", help="time the score table and exact AUC too")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--baseline", type=Path, action="append", default=[], help="an export of another commit")
    args = parser.parse_args()
    import engine_vs_fairlearn as bench

    sides = [REPO, *(path.resolve() for path in args.baseline)]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.parquet"
        pq.write_table(bench.generate(args.rows), path)
        for round_ in range(1, args.rounds + 1):
            for side in sides:
                phases = one_side(side, path, args)
                load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
                print(f"round {round_} {side} (load {load}):", flush=True)
                for name, (cpu, wall) in phases.items():
                    print(f"  {name:14s} {cpu:7.3f} s CPU {wall:7.3f} s wall", flush=True)
                if "bare group-by" in phases:  # the yardstick: the engine on the file over the bare group-by
                    engine, bare = phases["audit (DuckDB)"], phases["bare group-by"]
                    print(f"  engine / bare group-by: {engine[1] / bare[1]:.2f}x wall, {engine[0] / bare[0]:.2f}x CPU")


if __name__ == "__main__":
    main()
