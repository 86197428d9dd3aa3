"""Benchmark: the latency a CI job sees, as medians of N runs (a script, not a timed test).

    .venv/bin/python bench/latency.py [--runs 5] [--demo-runs 3] [--skip-demo] [--baseline DIR]
    .venv/bin/python bench/latency.py --event [--events 3] [--query-seconds 10 2]

(1) CLI start: ``fairgate --help`` and ``fairgate trail list|verify`` (a fresh process each time).
(2) ``fairgate demo`` (COMPAS, 7,214 rows: JSON, JUnit, HTML, PDF, trail row) end to end against a running
    Prefect server: the one at ``PREFECT_API_URL`` if set, else a ``prefect server start`` this script starts on
    a free loopback port (and stops). Each run is split into stages from the flow's own task runs, read back
    from the Prefect API: start (process start to the flow run running: imports, argument checks, flow-run
    creation), align, validate, cube + metrics, outputs, report (HTML + PDF), trail, the rest of the flow
    (orchestration between tasks) and exit (flow run finished to process exit). ``--baseline DIR`` (an export of
    another commit: ``git archive REV | tar -x -C DIR``) runs its demo too, alternating, on ``PYTHONPATH``.
(3) The report task split into HTML and PDF, and Great Expectations' import alone, measured in a fresh process on
    the demo's own audit document.
(4) ``--event`` (only this): event -> verdict on a warm worker, as docs/guides/deployment.md runs it.
    ``fairgate deploy --demo`` on the server, then for each poll interval given a ``prefect worker start`` (its
    own process group, stopped at the end) with ``PREFECT_WORKER_QUERY_SECONDS`` set, one warm-up
    ``fairgate.model.registered`` event, then ``--events`` more, one at a time. Per event, from the registration
    run's and its audit subflow's timestamps and state history: event -> flow run created (the server's
    automation) -> Pending (the worker's poll picked it up) -> Running (a new Python process per run, the flow's
    imports) -> audit subflow running -> audit finished (JSON, JUnit, HTML, PDF, trail row).

Prints medians (and the process CPU time, which load on the machine inflates less than wall time). The machine
is shared: the load average is printed with the figures; quote them with it.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import json
import os
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
FAIRGATE = [str(BIN / "fairgate")]

# Stage -> the flow's task names (tasks/*.py); a stage's time is the time during which any of its tasks ran.
STAGES = {
    "align": ["stage inputs", "align"],
    "validate": ["validate inputs", "validate aligned"],
    "cube + metrics": ["build cube", "metrics", "adjudicate"],
    "outputs": ["write outputs"],
    "report (HTML + PDF)": ["render-report"],
    "trail": ["record run"],
}

# Run in a fresh interpreter on the demo's document: the report task's two halves, timed apart.
_REPORT_SPLIT = """
import json, sys, time
sys.path.insert(0, {repo!r})
from fairgate.report import build_view
from tasks.render.report import html_to_pdf, render_charts, render_html
document = json.load(open({document!r}))
t0 = time.perf_counter()
view = build_view(document)
charts = render_charts(view)
render_html(view, charts)
t1 = time.perf_counter()
html_to_pdf(render_html(view, charts, full_tables=False))
t2 = time.perf_counter()
print(json.dumps({{"html": t1 - t0, "pdf": t2 - t1}}))
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def prefect_server(home: Path) -> Iterator[str]:
    """The API URL of a running Prefect server: PREFECT_API_URL's, else one started here for the script's life."""
    if os.environ.get("PREFECT_API_URL"):
        yield os.environ["PREFECT_API_URL"]
        return
    import httpx

    port = _free_port()
    env = {
        **os.environ,
        "PREFECT_HOME": str(home),
        "PREFECT_SERVER_DATABASE_CONNECTION_URL": f"sqlite+aiosqlite:///{home / 'server.db'}",
        "PREFECT_SERVER_LOGGING_LEVEL": "WARNING",
        "PREFECT_UI_ENABLED": "false",
    }
    command = [str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)]
    with (home / "server.log").open("wb") as log:
        server = subprocess.Popen(
            [*command, "--no-ui", "--analytics-off"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    api_url = f"http://127.0.0.1:{port}/api"
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and server.poll() is None:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{api_url}/health", timeout=5).status_code == 200:
                    break
            time.sleep(0.25)
        else:
            raise SystemExit(f"the Prefect server did not start; see {home / 'server.log'}")
        yield api_url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


def timed(command: list[str], env: dict[str, str] | None = None) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user + system) and exit code of one command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=REPO, capture_output=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr.decode()[-3000:]}")
    return wall, cpu, done.returncode


def _busy(runs: list[Any]) -> float:
    """Seconds during which at least one of the task runs ran (the union of their intervals: the metric tasks
    run in parallel threads, and a stage's tasks need not be adjacent)."""
    intervals = sorted((r.start_time, r.end_time) for r in runs if r.start_time and r.end_time)
    total, end = 0.0, None
    for start, stop in intervals:
        if end is None or start > end:
            total += (stop - start).total_seconds()
            end = stop
        elif stop > end:
            total += (stop - end).total_seconds()
            end = stop
    return total


def demo_stages(api_url: str, started: datetime, finished: datetime) -> dict[str, float]:
    """One demo run's stages from its flow run and task runs, read from the Prefect API."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        FlowFilter,
        FlowFilterName,
        FlowRunFilter,
        FlowRunFilterId,
    )
    from prefect.client.schemas.sorting import FlowRunSort
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: api_url}), get_client(sync_client=True) as client:
        flow_runs = client.read_flow_runs(
            flow_filter=FlowFilter(name=FlowFilterName(any_=["fairness-audit"])),
            sort=FlowRunSort.START_TIME_DESC,
            limit=1,
        )
        if not flow_runs or not flow_runs[0].start_time or flow_runs[0].start_time < started:
            raise SystemExit("the demo's flow run is not on the Prefect server: is PREFECT_API_URL the CLI's?")
        flow_run = flow_runs[0]
        task_runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run.id])))
    assert flow_run.start_time
    assert flow_run.end_time
    stages = {"start (imports, checks, flow run created)": (flow_run.start_time - started).total_seconds()}
    for stage, names in STAGES.items():
        stages[stage] = _busy([t for t in task_runs if _named(t, names)])
    flow_seconds = (flow_run.end_time - flow_run.start_time).total_seconds()
    stages["rest of the flow (orchestration)"] = flow_seconds - sum(v for k, v in stages.items() if k in STAGES)
    stages["exit (flow run finished to process exit)"] = (finished - flow_run.end_time).total_seconds()
    return stages


def _named(task_run: Any, names: list[str]) -> bool:
    """A task run's task name: its run name is the task's name plus a suffix ('-0', or the slicing for metrics)."""
    return any(task_run.name == name or task_run.name.startswith((f"{name}-", f"{name} ")) for name in names)


def bench_cli(runs: int, trail: Path | None) -> None:
    commands = {"fairgate --help": [*FAIRGATE, "--help"]}
    if trail is not None:
        commands["fairgate trail list"] = [*FAIRGATE, "trail", "list", "--trail", str(trail)]
        commands["fairgate trail verify"] = [*FAIRGATE, "trail", "verify", "--trail", str(trail)]
    print(f"\nCLI start (median of {runs} fresh processes)")
    for label, command in commands.items():
        times = [timed(command) for _ in range(runs)]
        walls = [wall for wall, _, _ in times]
        cpu = statistics.median(cpu for _, cpu, _ in times)
        print(
            f"  {label:24s} {statistics.median(walls):6.2f} s   (min {min(walls):.2f}, max {max(walls):.2f}; "
            f"CPU {cpu:.2f} s)"
        )


def bench_demo(runs: int, out: Path, api_url: str, home: Path, baseline: Path | None = None) -> Path:
    """``runs`` demos; with ``baseline`` (an export of another commit) as many of its demos, alternating with
    this checkout's (ABBA...), so that both see the same load on the shared machine."""
    env = {**os.environ, "PREFECT_API_URL": api_url, "PREFECT_HOME": str(home)}
    variants = {"this checkout": env}
    if baseline is not None:
        variants["baseline " + str(baseline)] = {**env, "PYTHONPATH": str(baseline)}  # its cli, flows, tasks first
    results: dict[str, list[tuple[float, float, dict[str, float]]]] = {label: [] for label in variants}
    for i in range(runs):
        for label in list(variants) if i % 2 == 0 else list(reversed(variants)):
            shutil.rmtree(out, ignore_errors=True)
            started = datetime.now(UTC)
            wall, cpu, code = timed([*FAIRGATE, "demo", "--out", str(out), "--quiet"], variants[label])
            results[label].append((wall, cpu, demo_stages(api_url, started, datetime.now(UTC))))
            print(f"  run {i + 1} ({label}): {wall:5.1f} s wall, {cpu:5.1f} s CPU (exit {code})", flush=True)
    for label, rows in results.items():
        print(
            f"\nfairgate demo end to end, {label} (median of {runs}): {statistics.median(r[0] for r in rows):.1f} s "
            f"wall, {statistics.median(r[1] for r in rows):.1f} s CPU (the CLI process; the server's own work is "
            "not counted)"
        )
        for stage in rows[0][2]:
            print(f"  {stage:44s} {statistics.median(r[2][stage] for r in rows):6.2f} s")
    return out


def bench_parts(runs: int, out: Path) -> None:
    document = sorted(glob.glob(str(out / "*.json")))[0]
    splits = []
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-c", _REPORT_SPLIT.format(repo=str(REPO), document=document)],
            capture_output=True,
            text=True,
            check=True,
        )
        splits.append(json.loads(done.stdout.strip().splitlines()[-1]))
    ge = [timed([sys.executable, "-c", "import great_expectations"])[0] for _ in range(runs)]
    print(f"\nparts, in a fresh process (median of {runs})")
    print(f"  report HTML (view, charts, Jinja)             {statistics.median(s['html'] for s in splits):6.2f} s")
    print(f"  report PDF (WeasyPrint, rendered once)        {statistics.median(s['pdf'] for s in splits):6.2f} s")
    print(f"  Great Expectations import (python -c)         {statistics.median(ge):6.2f} s")


# ---- (4) event -> verdict on a warm worker ------------------------------------------------------------------------

EVENT_POOL = "fairgate-latency"
EVENT_TIMEOUT_S = 300  # one event -> finished audit; far beyond what it takes, so a stuck worker ends the script
EVENT_STAGES = (
    "event -> flow run created (the server's automation)",
    "created -> picked up (the worker's poll: Pending)",
    "picked up -> running (new process, the flow's imports)",
    "running -> audit running (event checks, registration row)",
    "audit running -> audit finished (the audit: JSON..PDF)",
)


@contextlib.contextmanager
def process_worker(env: dict[str, str], query_seconds: float, log_path: Path) -> Iterator[None]:
    """``prefect worker start --pool`` polling every ``query_seconds``, in its own process group (stopped, with
    its flow runs, at the end)."""
    worker_env = {**env, "PREFECT_WORKER_QUERY_SECONDS": str(query_seconds)}
    with log_path.open("ab") as log:
        worker = subprocess.Popen(
            [str(BIN / "prefect"), "worker", "start", "--pool", EVENT_POOL],
            cwd=log_path.parent,
            env=worker_env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(worker.pid, signal.SIGTERM)
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()


def emit_registration(env: dict[str, str], predictions: Path, version: str) -> str:
    """``prefect event emit fairgate.model.registered`` exactly as docs/guides/deployment.md; the event's id."""
    resource = {
        "prefect.resource.id": f"model.compas.{version}",
        "prefect.resource.name": "compas",
        "fairgate.model.name": "compas",
        "fairgate.model.version": version,
    }
    command = [str(BIN / "prefect"), "event", "emit", "fairgate.model.registered"]
    command += ["--resource", json.dumps(resource), "--payload", json.dumps({"predictions": str(predictions)})]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=False)
    ids = re.findall(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", done.stdout.replace("\n", ""))
    if done.returncode != 0 or len(ids) != 1:
        raise SystemExit(f"prefect event emit failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return str(ids[0])


def wait_for_registration(api_url: str, event_id: str, worker_log: Path) -> dict[str, float]:
    """The event's registration run and its audit subflow, once finished, as the stages of EVENT_STAGES (seconds,
    from the runs' own timestamps and state history read from the Prefect API), plus the total."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName, FlowRunFilter, FlowRunFilterParentFlowRunId
    from prefect.client.schemas.sorting import FlowRunSort
    from prefect.settings import PREFECT_API_URL, temporary_settings

    deadline = time.monotonic() + EVENT_TIMEOUT_S
    with temporary_settings(updates={PREFECT_API_URL: api_url}), get_client(sync_client=True) as client:
        while True:
            runs = client.read_flow_runs(
                flow_filter=FlowFilter(name=FlowFilterName(any_=["fairgate-registration"])),
                sort=FlowRunSort.EXPECTED_START_TIME_DESC,
                limit=20,
            )
            run = next((r for r in runs if str((r.parameters.get("event") or {}).get("id")) == event_id), None)
            if run is not None and run.state is not None and run.state.is_final():
                break
            if time.monotonic() > deadline:
                raise SystemExit(
                    f"event {event_id}: no finished registration run after {EVENT_TIMEOUT_S} s; worker log:\n"
                    f"{worker_log.read_text()[-4000:]}"
                )
            time.sleep(0.5)
        if not run.state.is_completed():
            raise SystemExit(f"the registration run ended {run.state.name}: {run.state.message}")
        states = client.read_flow_run_states(run.id)
        audits = client.read_flow_runs(
            flow_run_filter=FlowRunFilter(parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[run.id]))
        )
    audit = next(a for a in audits if a.start_time and a.end_time)
    assert run.start_time
    assert run.end_time
    assert run.created
    assert audit.start_time
    assert audit.end_time
    occurred = datetime.fromisoformat(run.parameters["event"]["occurred"])
    pending = min(s.timestamp for s in states if s.type.value == "PENDING")
    marks: list[datetime] = [occurred, run.created, pending, run.start_time, audit.start_time, audit.end_time]
    stages = {name: (b - a).total_seconds() for name, a, b in zip(EVENT_STAGES, marks, marks[1:], strict=False)}
    stages["event -> audit finished"] = (audit.end_time - occurred).total_seconds()
    stages["event -> registration run finished"] = (run.end_time - occurred).total_seconds()
    return stages


def bench_event(api_url: str, home: Path, events: int, query_seconds: list[float]) -> None:
    """``fairgate deploy --demo``, then per poll interval a worker, a warm-up event and ``events`` timed ones."""
    env = {**os.environ, "PREFECT_API_URL": api_url, "PREFECT_HOME": str(home)}
    out = home / "event-out"
    deploy = [*FAIRGATE, "deploy", "--demo", "--out", str(out), "--pool", EVENT_POOL]
    done = subprocess.run(deploy, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"fairgate deploy --demo exited {done.returncode}:\n{done.stdout}{done.stderr}")
    predictions = out / "demo-inputs" / "compas_predictions.parquet"
    worker_log = home / "worker.log"
    for seconds in query_seconds:
        per_event = []
        with process_worker(env, seconds, worker_log):
            print(f"\nworker polling every {seconds:g} s (PREFECT_WORKER_QUERY_SECONDS)", flush=True)
            warm = wait_for_registration(api_url, emit_registration(env, predictions, f"{seconds:g}.0"), worker_log)
            print(f"  warm-up event: audit finished {warm['event -> audit finished']:.1f} s after it", flush=True)
            for i in range(1, events + 1):
                event_id = emit_registration(env, predictions, f"{seconds:g}.{i}")
                per_event.append(wait_for_registration(api_url, event_id, worker_log))
        print(f"  {'stage (seconds)':58s}" + "".join(f"{f'event {i}':>9s}" for i in range(1, events + 1)) + "   median")
        for stage in per_event[0]:
            values = [s[stage] for s in per_event]
            cells = "".join(f"{v:9.1f}" for v in values)
            print(f"  {stage:58s}{cells}{statistics.median(values):9.1f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each CLI start-up command")
    parser.add_argument("--demo-runs", type=int, default=3, help="runs of the demo (each ~10 s)")
    parser.add_argument("--skip-demo", action="store_true", help="CLI start-up only")
    parser.add_argument(
        "--baseline",
        type=Path,
        help="an export of another commit (git archive REV | tar -x -C DIR): its demos alternate with these",
    )
    parser.add_argument("--event", action="store_true", help="only (4): event -> verdict on a warm process worker")
    parser.add_argument("--events", type=int, default=3, help="timed events per poll interval (after a warm-up)")
    parser.add_argument(
        "--query-seconds", type=float, nargs="+", default=[10.0], help="the worker's poll intervals to compare"
    )
    args = parser.parse_args()
    print(f"load average at start: {' '.join(f'{x:.1f}' for x in os.getloadavg())} ({os.cpu_count()} cores)")
    home = Path(tempfile.mkdtemp(prefix="fairgate-latency-"))
    try:
        if args.event:
            with prefect_server(home) as api_url:
                print(f"Prefect server: {api_url}")
                bench_event(api_url, home, args.events, args.query_seconds)
            return
        trail = None
        if not args.skip_demo:
            with prefect_server(home) as api_url:
                print(f"Prefect server: {api_url}")
                out = bench_demo(args.demo_runs, home / "out", api_url, home, args.baseline)
            trail = out / "audit_trail.duckdb"
        bench_cli(args.runs, trail)
        if not args.skip_demo:
            bench_parts(args.demo_runs, home / "out")
    finally:
        shutil.rmtree(home, ignore_errors=True)
        print(f"load average at end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
