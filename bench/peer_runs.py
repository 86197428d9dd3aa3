"""Shared harness of the per-kind benches against a peer library (``*_vs_fairlearn.py``).

Every measured run happens in a fresh child process (the bench script re-run with ``--child SIDE``), which
generates the seeded data itself, times ``repeats`` runs (the engine after one warm-up run) and prints one JSON
line: medians of wall-clock and CPU seconds, and its peak resident memory (``getrusage(RUSAGE_SELF).ru_maxrss``:
the generated data, the work and, for the peer, the pandas copy it needs) next to the memory the data alone
took. A child per side and size keeps one side's peak from hiding in the other's.
The parent runs the cases and prints each side's figures and the ratios with :func:`compare_sizes`; the
options every such bench takes are :func:`add_peer_arguments`.

CPU seconds are this process's (``time.process_time``, every thread): on a shared machine the wall clock grows
with the load, the CPU time much less.

The peer takes minutes per million rows. Two options keep its 10M-row figure affordable, both stated in the
output: ``--peer-part-rows N`` runs it at N rows on one slicing and one metric only (``fairlearn-part``) and
scales that by the full/part ratio measured at the smallest size run in full (Fairlearn's cost is a sum over
slicings x metrics x groups of passes over the rows, so the ratio does not depend on the row count); and
``--cache DIR`` keeps each peer child's JSON line and reuses it (the peer's result does not change when the
engine does).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
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


@dataclass
class Runner:
    """Runs the children of one bench script; peer results cached in ``cache`` (if set) and reused."""

    script: str
    cache: Path | None
    part_rows: set[int]

    def run(self, side: str, rows: int, repeats: int, extra: list[str]) -> Measured:
        if self.cache is None or side == "fairgate":
            return in_child(self.script, side, rows, repeats, extra)
        name = "-".join([Path(self.script).stem, side, str(rows), str(repeats), *extra]).replace("--", "")
        path = self.cache / f"{name}.json"
        if path.exists():
            return Measured(**json.loads(path.read_text()))
        measured = in_child(self.script, side, rows, repeats, extra)
        self.cache.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(measured)))
        return measured

    def peer(self, rows: int, full_sizes: list[int], repeats: int, extra: list[str]) -> tuple[Measured, str]:
        """The peer's full work at ``rows``: measured, or estimated from a part (see the module's text)."""
        if rows not in self.part_rows:
            return self.run("fairlearn", rows, repeats, extra), "measured"
        smaller = [r for r in full_sizes if r not in self.part_rows and r < rows]
        if not smaller:
            raise SystemExit(f"--peer-part-rows {rows}: run a smaller size in full too (its full/part ratio)")
        base = min(smaller)
        full, part_base = self.run("fairlearn", base, repeats, extra), self.run("fairlearn-part", base, repeats, extra)
        part = self.run("fairlearn-part", rows, repeats, extra)
        wall_scale, cpu_scale = full.wall / part_base.wall, full.cpu / part_base.cpu
        estimate = replace(part, side="fairlearn (estimated)", wall=part.wall * wall_scale, cpu=part.cpu * cpu_scale)
        note = (
            f"estimated: one slicing x one metric measured at {rows:,} rows ({part.wall:.1f} s wall, "
            f"{part.cpu:.1f} s CPU) x the full/part ratio at {base:,} rows ({wall_scale:.1f} wall, {cpu_scale:.1f} CPU)"
        )
        return estimate, note


def add_peer_arguments(parser: argparse.ArgumentParser, *, per: str, children: Sequence[str]) -> None:
    """The options every per-kind bench against a peer takes (``per``: what one measured case is, e.g. "size")."""
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--repeats", type=int, default=5, help=f"fairgate runs per {per} (after one warm-up)")
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--skip-peer", action="store_true", help="fairgate only")
    parser.add_argument(
        "--peer-part-rows",
        type=int,
        nargs="*",
        default=[],
        help="sizes where Fairlearn's time is estimated from one slicing x one metric (see bench/peer_runs.py)",
    )
    parser.add_argument("--cache", type=Path, help="keep and reuse the peer's results here")
    parser.add_argument(
        "--child", choices=["fairgate", "fairlearn", "fairlearn-part", *children], help=argparse.SUPPRESS
    )


@dataclass(frozen=True)
class Case:
    """One measured case: its row count, the flags its children take, and a tag naming the rest (e.g. "K=3")."""

    rows: int
    extra: list[str]
    tag: str = ""

    @property
    def label(self) -> str:
        return f"rows={self.rows:,}" + (f" {self.tag}" if self.tag else "")


@dataclass(frozen=True)
class Also:
    """A further side run beside the peer (e.g. scipy), its figures printed and its time set against fairgate's."""

    side: str
    what: str
    ratio: str


def compare_sizes(
    runner: Runner,
    cases: Iterable[Case],
    *,
    ours: str,
    peer: str,
    repeats: int,
    peer_repeats: int,
    full_sizes: list[int],
    skip_peer: bool,
    also: Sequence[Also] = (),
) -> None:
    """Run fairgate and the peer (``ours``, ``peer``: what each side does) on every case and print each side's
    figures as they come, the load between cases, then one summary line per case: the peer/fairgate ratios
    (or, with ``skip_peer``, fairgate's time and memory)."""
    print(f"start: {load()}", flush=True)
    lines = []
    for case in cases:
        mine = runner.run("fairgate", case.rows, repeats, case.extra)
        print(f"{case.label} {ours}: {describe(mine)}", flush=True)
        if skip_peer:
            lines.append(f"{case.label}: fairgate {mine.wall:.3f} s wall, peak memory {mine.peak_gb:.2f} GB")
            continue
        theirs, how = runner.peer(case.rows, full_sizes, peer_repeats, case.extra)
        print(f"{case.label} {peer}: {describe(theirs)}; {how}")
        line = (f"{case.tag} " if case.tag else "") + ratio_line(case.rows, mine, theirs)
        line += "" if how == "measured" else " (Fairlearn estimated)"
        for side in also:
            other = runner.run(side.side, case.rows, peer_repeats, case.extra)
            print(f"{case.label} {side.what}: {describe(other)}")
            line += f"; {side.ratio} = {other.wall / mine.wall:.0f}x wall"
        lines.append(line)
        print(f"{load()}", flush=True)
    print("\n".join(lines))
