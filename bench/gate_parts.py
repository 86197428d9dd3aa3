"""Benchmark: two parts of the CI gate's CPU, each in fresh processes: its imports, and the engine's adjudication.

    .venv/bin/python bench/gate_parts.py [--runs 5] [--baseline CHECKOUT]

* imports: what ``fairgate audit`` imports (``cli.audit_cmd``, ``tasks.audit``, ``flows.audit``) and Great
  Expectations' load (``tasks.validation.gx_suite.load_great_expectations``), as CPU seconds of the process; also
  which of SciPy's heavy subpackages (``stats``, ``optimize``, ``spatial``, ``linalg``) ran.
* adjudication: ``fairgate.adjudicate`` of the demo policy on the COMPAS file (``/work/shared/data``'s, with
  the engine's caches emptied after a first, warming call), CPU seconds; and a digest of its results, which must
  be the same on both sides.

``--baseline CHECKOUT``: the same parts run by another checkout's ``.venv/bin/python`` in that checkout,
alternating run by run with this one so that both see the same load. Prints each run, the medians and the
load average before and after; the machine is shared, so quote the figures with the load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

IMPORTS = """
import json, sys, time
start = time.process_time()
import cli.audit_cmd, tasks.audit, flows.audit
from tasks.validation.gx_suite import load_great_expectations
load_great_expectations()
cpu = time.process_time() - start
heavy = ["scipy.stats._stats_py", "scipy.optimize._optimize", "scipy.spatial", "scipy.linalg"]
print(json.dumps({"cpu": cpu, "ran": [m for m in heavy if m in sys.modules]}))
"""

ADJUDICATION = """
import functools, hashlib, json, sys, time
sys.path.insert(0, "tests/engine")
import fairgate
from conftest import load_compas
from fairgate.engine import exact, stats
policy = fairgate.Policy.from_yaml(open("fairgate/policies/compas_demo.yaml").read())
cube = fairgate.build_cube(load_compas().rename({"y_true": "two_year_recid"}), policy)
parts = [fairgate.compute_slicing(cube, s, policy) for s in fairgate.plan_slicings(cube, policy)]
fairgate.adjudicate(cube, parts, policy)  # warms the imports
for module in (exact, stats):  # every kept value of the engine's statistics, so the run computes them again
    for value in vars(module).values():
        if isinstance(value, functools._lru_cache_wrapper):
            value.cache_clear()
parts = [fairgate.compute_slicing(cube, s, policy) for s in fairgate.plan_slicings(cube, policy)]
start = time.process_time()
results = fairgate.adjudicate(cube, parts, policy).to_dict()["results"]
cpu = time.process_time() - start
digest = hashlib.sha256(json.dumps(results, sort_keys=True, default=str).encode()).hexdigest()[:12]
print(json.dumps({"cpu": cpu, "digest": digest}))
"""


def run(checkout: Path, code: str) -> dict[str, object]:
    done = subprocess.run(
        [str(checkout / ".venv" / "bin" / "python"), "-c", code],
        cwd=checkout,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{checkout}: {done.stderr[-2000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _load() -> str:
    return ", ".join(f"{value:.2f}" for value in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each part and side (alternating)")
    parser.add_argument("--baseline", type=Path, default=None, help="another checkout to alternate with (its .venv)")
    args = parser.parse_args()
    sides = {"this checkout": REPO, **({"baseline": args.baseline.resolve()} if args.baseline else {})}
    print(f"start: load average {_load()}")
    for part, code in (("imports", IMPORTS), ("adjudication", ADJUDICATION)):
        cpu: dict[str, list[float]] = {side: [] for side in sides}
        for number in range(args.runs):
            for side, checkout in sides.items():
                seen = run(checkout, code)
                cpu[side].append(float(seen["cpu"]))  # type: ignore[arg-type]
                extra = {key: value for key, value in seen.items() if key != "cpu"}
                print(f"run {number + 1} {part}, {side}: {seen['cpu']:.3f} s CPU {extra}", flush=True)
        for side, values in cpu.items():
            print(f"{part}, {side}: median {statistics.median(values):.3f} s CPU ({min(values):.3f}-{max(values):.3f})")
    print(f"end: load average {_load()}")


if __name__ == "__main__":
    sys.exit(main())
