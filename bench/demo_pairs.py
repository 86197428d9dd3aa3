"""Bench: ``fairgate demo --json`` of this checkout against another's, in pairs, each run a fresh process.

    .venv/bin/python bench/demo_pairs.py --baseline CHECKOUT [--pairs 5]

Both sides run the binary demo (JSON, JUnit, HTML, PDF, model card, explorer, trail row) against one running
Prefect server (``PREFECT_API_URL``, or one this script starts: ``bench/latency.py``'s), alternating, the
order swapped every pair so that neither side always runs first. Prints each run's wall and CPU (user + system
of the process and its children) with the load, then each side's medians and the median of the pairs'
CPU differences; the machine is shared, so quote the figures with the load.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from latency import prefect_server  # noqa: E402  (bench/latency.py: the same server start)


def run_demo(checkout: Path, out: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one ``fairgate demo --json`` of ``checkout`` (its own .venv)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    command = [str(checkout / ".venv" / "bin" / "fairgate"), "demo", "--json", "--out", str(out)]
    done = subprocess.run(command, cwd=checkout, env=env, capture_output=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{checkout}: fairgate demo exited {done.returncode}: {done.stderr.decode()[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="another checkout (with its own .venv)")
    parser.add_argument("--pairs", type=int, default=5)
    args = parser.parse_args()
    sides = {"this checkout": REPO, "baseline": args.baseline.resolve()}
    times: dict[str, list[tuple[float, float]]] = {side: [] for side in sides}
    with tempfile.TemporaryDirectory(prefix="fairgate-demo-pairs-") as tmp, prefect_server(Path(tmp)) as api_url:
        env = {**os.environ, "PREFECT_API_URL": api_url}
        print(f"start: load average {os.getloadavg()[0]:.2f}", flush=True)
        for pair in range(args.pairs):
            order = list(sides) if pair % 2 == 0 else list(sides)[::-1]
            for side in order:
                wall, cpu = run_demo(sides[side], Path(tmp) / f"{pair}-{order.index(side)}", env)
                times[side].append((wall, cpu))
                load = os.getloadavg()[0]
                print(f"pair {pair + 1} {side}: {wall:.2f} s wall, {cpu:.2f} s CPU, load {load:.1f}", flush=True)
        print(f"end: load average {os.getloadavg()[0]:.2f}")
    for side, runs in times.items():
        cpus = [c for _, c in runs]
        wall = statistics.median(w for w, _ in runs)
        print(
            f"{side}: median {wall:.2f} s wall, {statistics.median(cpus):.2f} s CPU "
            f"(runs {min(cpus):.2f}-{max(cpus):.2f})"
        )
    diffs = [a[1] - b[1] for a, b in zip(times["this checkout"], times["baseline"], strict=True)]
    lower = sum(d < 0 for d in diffs)
    print(
        f"CPU difference (this checkout - baseline): median {statistics.median(diffs):+.2f} s; "
        f"lower in {lower} of {len(diffs)}"
    )


if __name__ == "__main__":
    main()
