"""Benchmark: Prefect's share of one ``fairgate audit --json`` on COMPAS, around the audit flow's body.

    .venv/bin/python bench/flow_overhead.py [--runs 4] [--baseline CHECKOUT]

Each run is a fresh process running the CLI in-process (the same command as ``bench/gate_latency.py``'s gate,
against a running Prefect server: ``PREFECT_API_URL``, or one this script starts), with the flow's call and
its body timed from inside. Printed per run and as medians: "before", from the flow's call to its body (the
flow and flow run created, the Running state); "body", the audit's own work with its task runs; "after", from
the body's return to the flow's call returning (the final state, the heartbeat's thread), each in wall seconds
and CPU seconds of the process. With ``--baseline``, another checkout's (its ``.venv``) alternating run by run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from gate_latency import _load, gate_policy  # noqa: E402  (the same inputs and policy as the gate bench)
from latency import prefect_server  # noqa: E402

# Run in the checkout's interpreter: the CLI in-process, the flow's call and body wrapped with timers.
_TIMED = """
import contextlib, io, json, os, sys, time
marks = {}
def mark(name):
    marks[name] = (time.perf_counter(), time.process_time())
import cli, cli.exits, cli.signals, flows.audit
def wrap(module, name, before, after):
    inner = getattr(module, name)
    def timed(*args, **kwargs):
        mark(before)
        try:
            return inner(*args, **kwargs)
        finally:
            mark(after)
    setattr(module, name, timed)
wrap(cli.exits, "flow_state", "call", "returned")
wrap(flows.audit, "_audit", "body", "body end")
real_exit = os._exit
def report(code):
    (c0, p0), (b0, q0), (b1, q1), (c1, p1) = (marks[k] for k in ("call", "body", "body end", "returned"))
    figures = {"before": (b0 - c0, q0 - p0), "body": (b1 - b0, q1 - q0), "after": (c1 - b1, p1 - q1)}
    sys.__stderr__.write("FIGURES " + json.dumps(figures) + "\\n")
    real_exit(code)
cli.signals.os._exit = report  # the os module's: the CLI ends with os._exit once its command is done
sys.argv = ["fairgate", *sys.argv[1:]]
with contextlib.redirect_stdout(io.StringIO()):
    cli.main()
"""

PHASES = ("before", "body", "after")


def timed_run(python: Path, checkout: Path, args: list[str], env: dict[str, str], cwd: Path) -> dict[str, list[float]]:
    """One fresh process's phases: {phase: [wall, cpu]}."""
    done = subprocess.run(
        [str(python), "-c", _TIMED, *args],
        env={**env, "PYTHONPATH": str(checkout)},
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    lines = [line for line in done.stderr.splitlines() if line.startswith("FIGURES ")]
    if not lines:
        raise SystemExit(f"the run printed no figures (exit {done.returncode}): {done.stderr[-2000:]}")
    figures: dict[str, list[float]] = json.loads(lines[-1].removeprefix("FIGURES "))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4, help="runs of each side (alternating)")
    parser.add_argument("--baseline", type=Path, default=None, help="another checkout to alternate with (its .venv)")
    args = parser.parse_args()

    from cli.demos import DEMOS

    sides = {"this checkout": REPO}
    if args.baseline:
        sides["baseline"] = args.baseline.resolve()
    with tempfile.TemporaryDirectory(prefix="fairgate-flow-") as tmp:
        folder = Path(tmp)
        files = DEMOS["binary"].write_inputs(folder)
        gate = [
            "audit", "--policy", str(gate_policy(folder)), "--predictions", str(files["predictions"]),
            "--labels", str(files["labels"]), "--attributes", str(files["attributes"]),
            "--out", str(folder / "reports"), "--json",
        ]  # fmt: skip
        with prefect_server(folder) as api_url:
            env = {**os.environ, "PREFECT_API_URL": api_url}
            print(f"start: load average {_load()}")
            runs: dict[str, list[dict[str, list[float]]]] = {side: [] for side in sides}
            for run in range(args.runs):
                for side, checkout in sides.items():
                    figures = timed_run(checkout / ".venv" / "bin" / "python", checkout, gate, env, folder)
                    runs[side].append(figures)
                    shown = ", ".join(f"{p} {figures[p][0]:.3f} s ({figures[p][1]:.3f} s CPU)" for p in PHASES)
                    print(f"run {run + 1} {side}: {shown}", flush=True)
            print(f"end: load average {_load()}")
    for side, figures_of in runs.items():
        medians = {p: [statistics.median(f[p][i] for f in figures_of) for i in (0, 1)] for p in PHASES}
        shown = ", ".join(f"{p} {medians[p][0]:.3f} s ({medians[p][1]:.3f} s CPU)" for p in PHASES)
        print(f"{side}: median {shown} ({args.runs} runs)")


if __name__ == "__main__":
    main()
