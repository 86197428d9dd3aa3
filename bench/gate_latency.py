"""Benchmark: ``fairgate audit --json`` as a CI gate on COMPAS against the same gate written with Fairlearn.

    .venv/bin/python bench/gate_latency.py [--runs 5] [--out DIR] [--baseline CHECKOUT] [--demo]

Both sides run in fresh processes on the same three Parquet files (the COMPAS split of ``fairgate demo``:
predictions, labels, attributes; 7,214 rows), alternating run by run so that both see the same load:

* fairgate: ``fairgate audit --policy P --predictions ... --labels ... --attributes ... --json`` with the demo
  policy (5 metrics, 3 attributes, 2 attribute pairs, 1,000 bootstrap replicates, every interval) but
  ``reporting.format: [json]`` (a CI gate reads the exit code and the JSON), against a running Prefect server:
  ``PREFECT_API_URL`` if set, else one this script starts (``bench/latency.py``'s) and stops.
* Fairlearn: the script ``FAIRLEARN_GATE`` below (pandas reads and joins the files, one ``MetricFrame`` per
  attribute and attribute pair, the same 5 metrics as point estimates against the same thresholds, the result
  as JSON on stdout, exit code 1 when a metric fails).

``--baseline CHECKOUT``: a third side, the same ``fairgate audit --json`` run by another checkout's
``.venv/bin/fairgate`` (e.g. main), alternating with the other two. ``--demo``: also ``fairgate demo --json``
(JSON, JUnit, HTML, PDF, model card, trail) of this checkout, and of the baseline's with ``--baseline``, each in
its own output folder.

Prints the median wall and CPU time (user + system of the process and its children) of each side, their ratio
and the load average before and after; the machine is shared, so quote the figures with the load. With the
server on this machine, also the server's CPU during each run (the process listening on the API's port, with
its children: the flow run, task runs, logs and events it records), which shares the same cores.
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
from typing import Any
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from latency import prefect_server  # noqa: E402  (bench/latency.py: the same server start)

FAIRGATE = [str(Path(sys.executable).parent / "fairgate")]

FAIRLEARN_GATE = """
import json, sys
import pandas as pd
from fairlearn.metrics import (MetricFrame, selection_rate, true_positive_rate, false_positive_rate)
from sklearn.metrics import precision_score

folder = sys.argv[1]
frame = (pd.read_parquet(f"{folder}/compas_predictions.parquet")
         .merge(pd.read_parquet(f"{folder}/compas_labels.parquet"), on="id")
         .merge(pd.read_parquet(f"{folder}/compas_attributes.parquet"), on="id"))
# The demo policy's favourable label is 0: count people NOT flagged / who did not reoffend as "positive".
y_true = 1 - frame["two_year_recid"]
y_pred = 1 - frame["y_pred"]
metrics = {"selection_rate": selection_rate, "tpr": true_positive_rate, "fpr": false_positive_rate,
           "precision": lambda t, p: precision_score(t, p, zero_division=0)}
slicings = [["race"], ["sex"], ["age_cat"], ["race", "sex"], ["race", "age_cat"]]
results, failed = [], False
for columns in slicings:
    features = frame[columns]
    sizes = features.value_counts()
    keep = features.apply(tuple, axis=1).isin(sizes[sizes >= 50].index) if len(columns) > 1 else slice(None)
    mf = MetricFrame(metrics=metrics, y_true=y_true[keep], y_pred=y_pred[keep], sensitive_features=features[keep])
    by = mf.by_group
    figures = {
        "disparate_impact_ratio": (by["selection_rate"].min() / by["selection_rate"].max(), 0.80, "higher"),
        "demographic_parity_difference": (by["selection_rate"].max() - by["selection_rate"].min(), 0.10, "lower"),
        "equal_opportunity_difference": (by["tpr"].max() - by["tpr"].min(), 0.10, "lower"),
        "equalized_odds_difference": (max(by["tpr"].max() - by["tpr"].min(), by["fpr"].max() - by["fpr"].min()),
                                      0.10, "lower"),
        "predictive_parity_difference": (by["precision"].max() - by["precision"].min(), 0.10, "lower"),
    }
    for name, (value, threshold, better) in figures.items():
        passed = value >= threshold if better == "higher" else value <= threshold
        failed |= not passed
        results.append({"slicing": "*".join(columns), "metric": name, "value": float(value), "passed": bool(passed)})
print(json.dumps({"verdict": "fail" if failed else "pass", "results": results}))
sys.exit(1 if failed else 0)
"""


def timed(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, int]:
    """Wall and CPU (user + system of the finished child) seconds of one fresh process, and its exit code."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{command[0]} exited {done.returncode}: {done.stderr.decode()[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.returncode


def server_process(api_url: str) -> Any:
    """The local process listening on the API's port (a ``psutil.Process``), or None (a remote server)."""
    import psutil

    port = urlsplit(api_url).port
    for connection in psutil.net_connections(kind="tcp"):
        if connection.status == psutil.CONN_LISTEN and connection.laddr.port == port and connection.pid:
            return psutil.Process(connection.pid)
    return None


def server_cpu(server: Any) -> float:
    """CPU seconds (user + system) the server process and its children have used so far; 0 without one."""
    if server is None:
        return 0.0
    processes = [server, *server.children(recursive=True)]
    return sum(sum(p.cpu_times()[:2]) for p in processes if p.is_running())


def gate_policy(folder: Path) -> Path:
    """The demo policy with JSON output only (what a CI gate reads)."""
    text = (REPO / "fairgate" / "policies" / "compas_demo.yaml").read_text(encoding="utf-8")
    marker = "format: [json, junit, html, pdf, model_card]"
    if marker not in text:
        raise SystemExit("the demo policy's reporting.format line changed: update bench/gate_latency.py")
    path = folder / "gate.yaml"
    path.write_text(text.replace(marker, "format: [json]"), encoding="utf-8")
    return path


def _load() -> str:
    return ", ".join(f"{value:.2f}" for value in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each side (alternating)")
    parser.add_argument("--out", type=Path, default=None, help="folder for the inputs (default: a temporary one)")
    parser.add_argument("--baseline", type=Path, default=None, help="another checkout to alternate with (its .venv)")
    parser.add_argument("--demo", action="store_true", help="also time `fairgate demo --json` (with its PDF)")
    args = parser.parse_args()

    from cli.demos import DEMOS

    with tempfile.TemporaryDirectory(prefix="fairgate-gate-") as tmp:
        folder = args.out or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        files = DEMOS["binary"].write_inputs(folder)
        policy = gate_policy(folder)
        fairgate_cmd = [
            *FAIRGATE, "audit", "--policy", str(policy), "--predictions", str(files["predictions"]),
            "--labels", str(files["labels"]), "--attributes", str(files["attributes"]),
            "--out", str(folder / "reports"), "--json",
        ]  # fmt: skip
        fairlearn_cmd = [sys.executable, "-c", FAIRLEARN_GATE, str(folder)]
        sides = {"fairgate": fairgate_cmd, "fairlearn": fairlearn_cmd}
        baseline = [str(args.baseline / ".venv" / "bin" / "fairgate")] if args.baseline else None
        if baseline:
            sides["baseline"] = [*baseline, *fairgate_cmd[1:]]
        if args.demo:
            sides["demo"] = [*FAIRGATE, "demo", "--json", "--out", str(folder / "demo")]
            if baseline:
                sides["baseline demo"] = [*baseline, "demo", "--json", "--out", str(folder / "baseline-demo")]
        with prefect_server(Path(tmp)) as api_url:
            env = {**os.environ, "PREFECT_API_URL": api_url}
            server = server_process(api_url)
            print(f"start: load average {_load()}")
            timed(fairgate_cmd, env, folder)  # warm-up: the server's first flow run, the page cache
            times: dict[str, list[tuple[float, float]]] = {side: [] for side in sides}
            served: dict[str, list[float]] = {side: [] for side in sides}
            for run in range(args.runs):
                for side, command in sides.items():
                    before = server_cpu(server)
                    wall, cpu, code = timed(command, env, folder)
                    served[side].append(server_cpu(server) - before)
                    times[side].append((wall, cpu))
                    print(
                        f"run {run + 1} {side}: {wall:.2f} s wall, {cpu:.2f} s CPU, exit {code}, "
                        f"server {served[side][-1]:.2f} s CPU",
                        flush=True,
                    )
            print(f"end: load average {_load()}")
    medians = {
        side: (statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs))
        for side, runs in times.items()
    }
    for side, (wall, cpu) in medians.items():
        server_median = statistics.median(served[side])
        print(f"{side}: median {wall:.2f} s wall, {cpu:.2f} s CPU, server {server_median:.2f} s CPU ({args.runs} runs)")
    for side in ("fairgate", "baseline"):
        if side in medians:
            wall_ratio = medians[side][0] / medians["fairlearn"][0]
            cpu_ratio = medians[side][1] / medians["fairlearn"][1]
            print(f"ratio {side} / fairlearn: {wall_ratio:.2f}x wall, {cpu_ratio:.2f}x CPU")


if __name__ == "__main__":
    main()
