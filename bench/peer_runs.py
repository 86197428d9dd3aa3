"""Shared harness of the per-kind benches against a peer library (``*_vs_fairlearn.py``).

Every measured run happens in a fresh child process (the bench script re-run with ``--child SIDE``), which
generates the seeded data itself, times ``repeats`` runs (the engine after one warm-up run) and prints one JSON
line: medians of wall-clock and CPU seconds, and its peak resident memory (``getrusage(RUSAGE_SELF).ru_maxrss``:
the generated data, the work and, for the peer, the pandas copy it needs) next to the memory the data alone
took. A child per side and size keeps one side's peak from hiding in the other's.

CPU seconds are this process's (``time.process_time``, every thread): on a shared machine the wall clock grows
with the load, the CPU time much less.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Measured:
    """Medians of a side's runs at one size, with the memory its child process reached."""

    side: str
    rows: int
    repeats: int
    wall: float
    cpu: float
    walls: list[float]
    data_gb: float
    peak_gb: float


def peak_gb() -> float:
    """This process's peak resident memory so far, in GB (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2


def measure(side: str, rows: int, run: Callable[[], Any], repeats: int, *, data_gb: float, warm_up: bool) -> Measured:
    """Time ``repeats`` calls of ``run`` (after one untimed call if ``warm_up``); medians of wall and CPU."""
    if warm_up:
        run()  # imports, first-call compilation, allocator warm-up
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        run()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return Measured(side, rows, repeats, statistics.median(walls), statistics.median(cpus), walls, data_gb, peak_gb())


def emit(measured: Measured) -> None:
    """The child's one line of output, read by :func:`in_child`."""
    print(json.dumps(asdict(measured)), flush=True)


def in_child(script: str, side: str, rows: int, repeats: int, extra: list[str]) -> Measured:
    """Run ``script --child side`` in a fresh interpreter and return what it measured."""
    command = [sys.executable, script, "--child", side, "--rows", str(rows), "--repeats", str(repeats), *extra]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{side} at {rows:,} rows failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return Measured(**json.loads(done.stdout.strip().splitlines()[-1]))


def load() -> str:
    """The 1, 5 and 15 minute load averages (2 cores: above 2 the runs share the CPU)."""
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def describe(m: Measured) -> str:
    runs = "one run" if m.repeats == 1 else f"median of {m.repeats}"
    return (
        f"{m.wall:.3f} s wall, {m.cpu:.3f} s CPU ({runs}); peak memory {m.peak_gb:.2f} GB "
        f"(data alone {m.data_gb:.2f} GB)"
    )


def ratio_line(rows: int, ours: Measured, theirs: Measured) -> str:
    return (
        f"rows={rows:,}: fairlearn/fairgate = {theirs.wall / ours.wall:.0f}x wall, {theirs.cpu / ours.cpu:.0f}x CPU; "
        f"fairgate peak memory {ours.peak_gb:.2f} GB"
    )
