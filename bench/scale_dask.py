"""The audit on a Dask LocalCluster of 2 worker processes at 10M and 100M rows (issue 13).

    python bench/scale_data.py --rows 10_000_000 --parts 20 --out /work/scale-data/10m
    python bench/scale_dask.py --data /work/scale-data/10m --data /work/scale-data/100m

For each data directory (``bench/scale_data.py``'s layout: predictions/, labels/, attributes/ of K parts),
runs ``fairness-audit`` with ``--runner dask`` against a real local Prefect server (started here; workers
inherit its PREFECT_API_URL) on a fresh ``distributed.LocalCluster(n_workers=2, threads_per_worker=1,
processes=True)``, and prints:

* the wall time per size and the ratio of the largest to the smallest (target: at most 12x for 10x rows);
* each worker's peak RSS (psutil, sampled every 0.2 s with ``client.run``: DuckDB's buffers are in the worker
  process) per size and the ratio (target: within 1.3x as rows grow 10x);
* with ``--check`` (default on the smallest size), that the result equals the single-process audit of the
  same files (``--runner local``): identical counts, metrics to 1e-12, AUC (from the score histogram on both
  sides) to 1e-12 too.

Times on this shared 2-core machine move with the load: the load average is printed with each figure.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
_HOME = Path(tempfile.mkdtemp(prefix="fairgate-bench-prefect-"))
# Before Prefect is imported: a private Prefect home, no ephemeral servers (every process talks to ours).
os.environ["PREFECT_HOME"] = str(_HOME)
os.environ["PREFECT_SERVER_EPHEMERAL_ENABLED"] = "false"
os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
os.environ["GX_ANALYTICS_ENABLED"] = "false"
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
sys.path.insert(0, str(REPO / "tests"))  # the tests' process helpers (free port, group stop)

POLICY = """\
fairness_checker:
  sensitive_attributes:
    - {name: race, values: [White, Black, Hispanic, Asian, Other], reference_group: White}
    - {name: sex, values: [Male, Female], reference_group: Male}
    - {name: age_group, values: ["18-25", "26-40", "41-60", "60+"]}
    - {name: region, values: [North, South, East, West]}
  metrics:
    - {name: disparate_impact_ratio, threshold: 0.8}
    - {name: equal_opportunity_difference, threshold: 0.1}
    - {name: auc_difference, threshold: 0.05}
  intersectional_analysis: {enabled: true, min_group_size: 100, attribute_pairs: [[race, sex]]}
  reporting: {format: [json]}
  columns: {y_true: y_true}
  statistics: {n_bootstrap: 200}
  execution: {auc: histogram, auc_bins: 4096, memory_limit: DUCKDB_MEMORY, streaming: always}
"""
SAMPLE_S = 0.2
TOLERANCE = 1e-12


@contextlib.contextmanager
def prefect_server() -> Iterator[str]:
    """A real ``prefect server start`` on a loopback port, its database in the private home."""
    import httpx
    from server_processes import free_loopback_port, stop_process_group

    port = free_loopback_port()
    url = f"http://127.0.0.1:{port}/api"
    env = {**os.environ, "PREFECT_SERVER_DATABASE_CONNECTION_URL": f"sqlite+aiosqlite:///{_HOME / 'server.db'}"}
    env.pop("PREFECT_API_URL", None)
    command = [str(Path(sys.executable).parent / "prefect"), "server", "start", "--host", "127.0.0.1"]
    with (_HOME / "server.log").open("wb") as log:
        process = subprocess.Popen(
            [*command, "--port", str(port), "--no-ui", "--analytics-off"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/health", timeout=5).status_code == 200:
                    break
            time.sleep(0.5)
        else:
            raise RuntimeError(f"prefect server did not start: {(_HOME / 'server.log').read_text()[-2000:]}")
        os.environ["PREFECT_API_URL"] = url  # read by Prefect at import, and inherited by the Dask workers
        yield url
    finally:
        stop_process_group(process, timeout=10)


class PeakMemory:
    """Each worker's peak RSS, sampled in the background with ``client.run`` while an audit runs, overall and
    per step (the task the worker was running when sampled: check_partition, cube_of_partition, ...)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.peaks: dict[str, int] = {}
        self.step_peaks: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(Exception):  # a worker busy or restarting: next sample
                for worker, (rss, steps) in self.client.run(_rss, nanny=False).items():
                    self.peaks[worker] = max(self.peaks.get(worker, 0), rss)
                    for step in steps or ["between tasks"]:
                        self.step_peaks[step] = max(self.step_peaks.get(step, 0), rss)
            self._stop.wait(SAMPLE_S)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _rss(dask_worker: Any) -> tuple[int, list[str]]:
    """This worker's RSS and the steps (task name prefixes) it is running."""
    import psutil
    from dask.utils import key_split

    return int(psutil.Process().memory_info().rss), sorted({key_split(t.key) for t in dask_worker.state.executing})


def run_audit(policy: Path, data: Path, out: Path, *, runner: str, address: str | None) -> tuple[dict[str, Any], float]:
    """One ``fairness-audit`` run; returns its document and wall time."""
    from flows.audit import fairness_audit

    inputs = {role: str(data / role / "*.parquet") for role in ("predictions", "labels", "attributes")}
    started = time.perf_counter()
    state = fairness_audit(
        policy=str(policy),
        **inputs,
        out_dir=str(out),
        model_name="bench",
        model_version="1",
        runner=runner,
        dask_address=address,
        return_state=True,
    )
    elapsed = time.perf_counter() - started
    if state.is_failed() and state.name != "PolicyFailed":
        raise RuntimeError(f"the audit of {data} failed: {state.name}: {state.message}")
    (path,) = out.glob("fairness_*.json")
    return json.loads(path.read_text()), elapsed


def differences(single: Any, dask: Any, where: str = "") -> list[str]:
    """Where two audit documents differ beyond TOLERANCE (counts and texts exactly)."""
    if isinstance(single, dict) and isinstance(dask, dict):
        if single.keys() != dask.keys():
            return [f"{where}: keys {sorted(single)} != {sorted(dask)}"]
        return [d for key in single for d in differences(single[key], dask[key], f"{where}.{key}")]
    if isinstance(single, list) and isinstance(dask, list):
        if len(single) != len(dask):
            return [f"{where}: {len(single)} != {len(dask)} items"]
        return [
            d for i, (a, b) in enumerate(zip(single, dask, strict=True)) for d in differences(a, b, f"{where}[{i}]")
        ]
    if isinstance(single, float) and isinstance(dask, float):
        same = math.isclose(single, dask, rel_tol=0, abs_tol=TOLERANCE) or (math.isnan(single) and math.isnan(dask))
        return [] if same else [f"{where}: {single!r} != {dask!r}"]
    return [] if single == dask else [f"{where}: {single!r} != {dask!r}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, action="append", required=True, help="scale_data.py output (repeat)")
    parser.add_argument("--check", type=Path, action="append", default=None, help="sizes to check (default: first)")
    parser.add_argument("--no-check", action="store_true", help="time the Dask audits only")
    parser.add_argument("--worker-memory", default="6GiB", help="each worker's Dask memory limit")
    parser.add_argument("--duckdb-memory", default="1GB", help="DuckDB's memory_limit per partition task (policy)")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the Prefect server and the cluster on kill
    checked = set() if args.no_check else set(args.check or [args.data[0]])
    import distributed  # untyped: its calls are checked at run time

    with prefect_server():
        rows, times, peaks = [], [], []
        for data in args.data:
            manifest = json.loads((data / "manifest.json").read_text())
            with (
                distributed.LocalCluster(  # type: ignore[no-untyped-call]
                    n_workers=2,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=":0",
                    memory_limit=args.worker_memory,
                ) as cluster,
                distributed.Client(cluster) as client,  # type: ignore[no-untyped-call]
            ):
                out = Path(tempfile.mkdtemp(prefix="fairgate-bench-out-"))
                load = os.getloadavg()[0]
                with PeakMemory(client) as memory:
                    document, elapsed = run_audit(
                        _policy(args.duckdb_memory),
                        data,
                        out / "dask",
                        runner="dask",
                        address=cluster.scheduler_address,
                    )
            peak = max(memory.peaks.values())
            rows.append(int(manifest["rows"]))
            times.append(elapsed)
            peaks.append(peak)
            print(
                f"{manifest['rows']:>12,} rows, {manifest['parts']} parts: dask audit {elapsed:7.1f} s, "
                f"worker peak RSS {', '.join(f'{v / 2**20:.0f}' for v in memory.peaks.values())} MiB "
                f"(load {load:.1f}); n_rows {document['n_rows']:,}, verdict {document['verdict']}",
                flush=True,
            )
            steps = ", ".join(f"{step} {v / 2**20:.0f}" for step, v in sorted(memory.step_peaks.items()))
            print(f"{'':>12} peak RSS by step (MiB, either worker): {steps}", flush=True)
            if data in checked:
                single, single_s = run_audit(
                    _policy(args.duckdb_memory), data, out / "single", runner="local", address=None
                )
                found = [
                    d for key in ("n_rows", "groups", "results") for d in differences(single[key], document[key], key)
                ]
                status = "EQUAL (counts exact, metrics and AUC to 1e-12)" if not found else f"DIFFER: {found[:5]}"
                print(f"{'':>12} single-process streaming audit {single_s:7.1f} s: {status}", flush=True)
            shutil.rmtree(out, ignore_errors=True)
        if len(rows) > 1:
            print(
                f"rows x{rows[-1] / rows[0]:.0f}: time x{times[-1] / times[0]:.2f} (target <= 12), "
                f"per-worker peak memory x{peaks[-1] / peaks[0]:.2f} (target <= 1.3)"
            )


def _policy(duckdb_memory: str) -> Path:
    path = _HOME / "policy.yaml"
    path.write_text(POLICY.replace("DUCKDB_MEMORY", duckdb_memory))
    return path


if __name__ == "__main__":
    main()
