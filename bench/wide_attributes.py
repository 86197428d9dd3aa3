"""Benchmark: staging an attributes CSV with many extra columns, narrowed (as fairgate reads it) and not.

    .venv/bin/python bench/wide_attributes.py [--extra 10000] [--skip-unnarrowed]

Writes the COMPAS split with ``--extra`` integer columns added to the attributes file, then times
``tasks.inputs.align.stage`` on it (wall and CPU seconds) as fairgate runs it, and with the narrowing switched
off (``WIDE_CSV_COLUMNS`` raised above the width: every column bound by DuckDB), and prints both with the load
average. The staged attributes are checked equal.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import duckdb

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "pipeline"))

from pipeline_helpers import POLICY_PASSING, split_compas  # noqa: E402

import fairgate  # noqa: E402
from tasks.inputs import wide_csv  # noqa: E402
from tasks.inputs.align import stage  # noqa: E402


def _timed(policy: fairgate.Policy, files: dict[str, Path]) -> tuple[float, float, list[tuple[object, ...]]]:
    wall, cpu = time.perf_counter(), time.process_time()
    staged = stage(policy, str(files["predictions"]), str(files["labels"]), str(files["attributes"]))
    rows = staged.con.sql("select * from stg_attributes order by id").fetchall()
    return time.perf_counter() - wall, time.process_time() - cpu, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--extra", type=int, default=10_000)
    parser.add_argument("--skip-unnarrowed", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        files = split_compas(Path(folder))
        con = duckdb.connect()
        con.read_csv(str(files["attributes"])).create_view("t")
        extra = ", ".join(f"(id * {k}) % 7 as x{k}" for k in range(args.extra))
        wide = Path(folder) / "wide.csv"
        con.sql(f"select *, {extra} from t").to_csv(str(wide))
        con.close()
        files["attributes"] = wide
        policy = fairgate.Policy.from_yaml(POLICY_PASSING)
        wall, cpu, narrowed = _timed(policy, files)
        print(
            f"{args.extra} extra columns ({wide.stat().st_size / 1e6:.0f} MB): narrowed {wall:.2f} s (CPU {cpu:.2f} s)"
        )
        if not args.skip_unnarrowed:
            wide_csv.WIDE_CSV_COLUMNS = args.extra + 10
            wall, cpu, whole = _timed(policy, files)
            print(f"  every column bound: {wall:.2f} s (CPU {cpu:.2f} s); same rows: {whole == narrowed}")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
