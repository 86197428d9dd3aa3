"""Benchmark: the CPU time of the engine's 1M-row audit, this checkout against exports of other commits, alternating.

    .venv/bin/python bench/engine_cpu.py [--rows 1000000] [--repeats 5] [--rounds 3] [--baseline DIR ...]

Each round runs, for this checkout and then each ``--baseline`` directory (an export of another commit:
``git archive REV | tar -x -C DIR``, put first on ``PYTHONPATH``), a fresh process that generates
``bench/engine_vs_fairlearn.py``'s data, audits it once (warm-up), then ``--repeats`` more times with
``fairgate.audit`` (the same 10 slicings, every metric and interval, 1,000 bootstrap replicates) and prints the
median CPU time of the process (its threads included) around the audit. The deciding interval's root cache is
emptied before each run, as in a fresh CLI process. CPU time is the figure to compare on a shared machine; the
load average is printed with each line.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_ONE_SIDE = """
import statistics, sys, time
sys.path.insert(0, "bench")
import engine_vs_fairlearn as bench
import fairgate
from fairgate.engine import stats
table = bench.generate({rows})
policy = bench.policy(triples=False)
fairgate.audit(table, policy)
cpu = []
for _ in range({repeats}):
    if hasattr(stats, "_studentized_range_root"):
        stats._studentized_range_root.cache_clear()
    start = time.process_time()
    fairgate.audit(table, policy)
    cpu.append(time.process_time() - start)
print(statistics.median(cpu))
"""


def one_side(directory: Path, rows: int, repeats: int) -> float:
    """The median CPU seconds of the audit with the code in ``directory``."""
    env = {**os.environ, "PYTHONPATH": str(directory)}
    code = _ONE_SIDE.format(rows=rows, repeats=repeats)
    done = subprocess.run([sys.executable, "-c", code], cwd=directory, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{directory}: {done.stderr[-2000:]}")
    return float(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", type=Path, action="append", default=[], help="an export of another commit")
    args = parser.parse_args()
    sides = [REPO, *(path.resolve() for path in args.baseline)]
    figures: dict[Path, list[float]] = {side: [] for side in sides}
    for round_ in range(1, args.rounds + 1):
        for side in sides:
            cpu = one_side(side, args.rows, args.repeats)
            figures[side].append(cpu)
            load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
            print(f"round {round_} {side}: {cpu:.3f} s CPU (median of {args.repeats}); load {load}", flush=True)
    for side, values in figures.items():
        print(f"{side}: median {statistics.median(values):.3f} s CPU over {args.rounds} rounds")


if __name__ == "__main__":
    main()
