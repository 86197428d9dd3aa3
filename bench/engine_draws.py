"""Benchmark: the bootstrap's binomial draws at 10M rows, every slicing drawing its own cells or as the engine does.

    .venv/bin/python bench/engine_draws.py [--rows 10000000] [--repeats 5]

Counts ``bench/engine_vs_fairlearn.py``'s data into the cube inside DuckDB, plans its slicings (up to triples),
and times in this process (CPU seconds, medians of ``--repeats``) the draws of 1,000 replicates
(``fairgate.engine.bootstrap.draw_counts``) two ways: every slicing over its own occupied cells, and only the
slicings no other planned slicing contains (the others sum one of these slicings' replicates:
``fairgate.engine.planning.replicate_parents``), as the engine draws them. Prints the cells drawn and the CPU
per draw, with the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import numpy as np
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))

import engine_vs_fairlearn as bench

from fairgate.engine.bootstrap import draw_counts, slicing_seed
from fairgate.engine.planning import plan_slicings, replicate_parents
from fairgate.engine.replicate_sources import slicing_cells
from tasks.inputs.cube_sql import cube_from_relation


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    policy = bench.policy(triples=True)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.parquet"
        pq.write_table(bench.generate(args.rows), path)
        with duckdb.connect() as con:
            con.read_parquet(str(path)).create_view("bench_rows")
            cube = cube_from_relation(con, "select * from bench_rows", policy, score_histogram=False)
    plan = plan_slicings(cube, policy)
    summed = replicate_parents(plan)
    drawn = [s for s in plan if s not in summed]  # the rest sum one of these slicings' draws
    cells = {s: slicing_cells(cube, s, policy)[1] for s in plan}
    occupied = {s: rows[rows > 0] for s, rows in cells.items()}
    n_bootstrap = policy.statistics.n_bootstrap

    def draw(slicings: list[tuple[str, ...]]) -> float:
        times = []
        for _ in range(args.repeats):
            start = time.process_time()
            for s in slicings:
                draw_counts(occupied[s], n_bootstrap, slicing_seed(policy.statistics.seed, s))
            times.append(time.process_time() - start)
        return statistics.median(times)

    for label, slicings in (("every slicing its own cells", plan), ("the slicings the engine draws", drawn)):
        size = int(np.sum([occupied[s].size for s in slicings]))
        seconds = draw(slicings)
        per_draw = seconds / (size * n_bootstrap) * 1e9
        print(
            f"{label}: {len(slicings)} slicings, {size:,} cells x {n_bootstrap:,} replicates: {seconds:.3f} s CPU "
            f"({per_draw:.0f} ns a draw)"
        )
    print(f"rows={args.rows:,}, load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
