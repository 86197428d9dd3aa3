"""Bench: what a gate run pays for the audit trail, as the trail grows run by run (a CI runner's trail).

    .venv/bin/python bench/trail_growth.py [--sizes 10,50,200] [--repeat 3] [--doc DOC.json]

A trail of each size is made by recording the same audit document that many times (``append_audit_run``, the
record step's own function, with a new run id each time); at each size the script times, each on a fresh
connection as a gate run opens it, medians of ``--repeat``:

* ``check``: the CLI's check before any work (``check_trail``);
* ``history``: the trend's read of the model's last 9 runs (``model_history``, ``reporting.trend_runs`` 10);
* ``estimated``: a labelled audit's search for an earlier audit of the same predictions without labels
  (``last_estimated_document``, none there: the usual case);
* ``append``: recording one more run (on a copy of the trail, so that it keeps its size).

``--doc``: the audit document to record (default: ``fairgate demo --json``'s, made against the Prefect server
at ``PREFECT_API_URL`` or one this script starts). Prints CPU seconds per step and size, and the load average.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from latency import prefect_server  # noqa: E402  (bench/latency.py: the same server start)

from tasks.store import append_audit_run, check_trail, model_history  # noqa: E402
from tasks.store.history import last_estimated_document  # noqa: E402

MODEL = "bench-model"


def _load() -> str:
    return ", ".join(f"{value:.2f}" for value in os.getloadavg())


def demo_document(folder: Path) -> Path:
    """``fairgate demo --json``'s audit document, written into ``folder``."""
    command = [str(Path(sys.executable).parent / "fairgate"), "demo", "--json", "--out", str(folder / "demo")]
    with prefect_server(folder) as api_url:
        subprocess.run(command, env={**os.environ, "PREFECT_API_URL": api_url}, capture_output=True, check=False)
    found = sorted(p for p in (folder / "demo").glob("fairness_*.json") if ".model_card" not in p.name)
    if not found:
        raise SystemExit(f"fairgate demo wrote no audit document into {folder / 'demo'}")
    return found[0]


def record(trail: Path, document: dict[str, Any]) -> None:
    """One more run of ``document`` in ``trail`` (a new run id), as the record step writes it."""
    run = document | {"run_id": uuid.uuid4().hex[:12], "model": {"name": MODEL, "version": "1"}}
    append_audit_run(trail, run, policy_text="bench", inputs={}, validation={}, join_report={}, cube_cells=[])


def cpu_seconds(step: Callable[[], object], repeat: int, before: Callable[[], object] = lambda: None) -> float:
    """The median CPU seconds of ``step`` (``before`` runs untimed ahead of each)."""
    times = []
    for _ in range(repeat):
        before()
        start = time.process_time()
        step()
        times.append(time.process_time() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,50,200", help="trail sizes in runs, ascending")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--doc", type=Path, default=None, help="an audit document (default: the demo's)")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))

    import json

    with tempfile.TemporaryDirectory(prefix="fairgate-trail-") as tmp:
        folder = Path(tmp)
        doc_path = args.doc or demo_document(folder)
        document = json.loads(doc_path.read_text(encoding="utf-8"))
        print(f"document: {doc_path.name} ({doc_path.stat().st_size / 1e6:.2f} MB); start: load average {_load()}")
        trail, copy = folder / "trail.duckdb", folder / "copy.duckdb"
        recorded = 0
        print(f"{'runs':>6} {'check':>8} {'history':>8} {'estimated':>10} {'append':>8}  (CPU seconds)")
        for size in sizes:
            while recorded < size:
                record(trail, document)
                recorded += 1
            sys.stderr.flush()

            def fresh_copy() -> None:
                shutil.copyfile(trail, copy)

            figures = (
                cpu_seconds(lambda: check_trail(trail), args.repeat),
                cpu_seconds(lambda: model_history(trail, MODEL, 9, exclude_run="none"), args.repeat),
                cpu_seconds(lambda: last_estimated_document(trail, MODEL, "no-such-sha"), args.repeat),
                cpu_seconds(lambda: record(copy, document), args.repeat, before=fresh_copy),
            )
            print(f"{size:>6} " + " ".join(f"{f:>{w}.3f}" for f, w in zip(figures, (8, 8, 10, 8), strict=True)))
    print(f"end: load average {_load()}")


if __name__ == "__main__":
    main()
