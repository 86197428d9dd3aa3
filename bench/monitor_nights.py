"""Simulated monitoring nights through the real ``fairness-monitor`` flow: cost per night and the alerts.

A seeded daily population (race A/B/C, sex F/M; one model whose true-positive rate is 0.75 in every group)
is written night by night as three Parquet files with a ``timestamp`` column; optionally group C's TPR drops
by ``--shift`` from night ``--shift-from``. The deployment audit (the baseline) is a large sample of the same
population, audited by the engine and recorded in the trail as ``fairgate audit`` records it. Each night
then runs the real flow (Prefect: a temporary local server of this process unless PREFECT_API_URL is set),
which reads only that night's files: the per-night cost must not grow with the history.

    .venv/bin/python bench/monitor_nights.py --nights 90                    # stable: expect no alert
    .venv/bin/python bench/monitor_nights.py --nights 90 --shift 0.15 --shift-from 45

Prints each night's exit code and headline (windows' verdict · drift · open episodes), the median wall time and
CPU time (this process: robust to other load on the machine; the Prefect server excluded) of nights 1-10 and of
the last ten nights (their ratio: ~1 when the cost is independent of the history length), and the nights on which
alerts fired with the detector's predicted delay.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import date, datetime, timedelta
from datetime import time as clock
from pathlib import Path
from typing import Any, cast

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

GROUPS = {"race": (["A", "B", "C"], [0.5, 0.3, 0.2]), "sex": (["F", "M"], [0.5, 0.5])}
BASE_TPR, BASE_FPR, PREVALENCE = 0.75, 0.2, 0.4
START = date(2026, 1, 1)

POLICY = """\
fairness_checker:
  sensitive_attributes:
    - {name: race, values: [A, B, C], reference_group: A}
    - {name: sex, values: [F, M], reference_group: M}
  metrics:
    - {name: equal_opportunity_difference, threshold: 0.1}
    - {name: demographic_parity_difference, threshold: 0.1}
  intersectional_analysis: {enabled: false, min_group_size: 30}
  statistics: {n_bootstrap: %(n_bootstrap)d, seed: 1}
  reporting: {format: [json]}
  monitoring:
    windows: [7, 30, since_deployment]
    alerts:
      - {metric: equal_opportunity_difference, slicing: [race], min_change: 0.1, false_alarm_rate: 0.05,
         horizon_nights: 90}
%(delivery)s"""


def population(rng: np.random.Generator, size: int, tpr_c: float = BASE_TPR) -> pl.DataFrame:
    """``size`` people: attributes, outcome, score and prediction (group C's TPR ``tpr_c``)."""
    race = rng.choice(GROUPS["race"][0], size=size, p=GROUPS["race"][1])
    sex = rng.choice(GROUPS["sex"][0], size=size, p=GROUPS["sex"][1])
    y_true = (rng.random(size) < PREVALENCE).astype(np.int8)
    tpr = np.where(race == "C", tpr_c, BASE_TPR)
    p_positive = np.where(y_true == 1, tpr, BASE_FPR)
    y_pred = (rng.random(size) < p_positive).astype(np.int8)
    score = np.clip(np.where(y_pred == 1, 0.5 + rng.random(size) / 2, rng.random(size) / 2), 0.0, 1.0)
    return pl.DataFrame({"race": race, "sex": sex, "y_true": y_true, "y_pred": y_pred, "score": score})


def write_inputs(people: pl.DataFrame, folder: Path, night: date, first_id: int) -> dict[str, str]:
    """The three input files of one night (ids from ``first_id``; timestamps within the night)."""
    folder.mkdir(parents=True, exist_ok=True)
    n = people.height
    stamps = [datetime.combine(night, clock(hour=int(h))) for h in np.linspace(0, 23, n)]
    people = people.with_columns(pl.int_range(first_id, first_id + n).alias("id"), pl.Series("timestamp", stamps))
    files = {
        "predictions": people.select("id", "score", "y_pred", "timestamp"),
        "labels": people.select("id", "y_true"),
        "attributes": people.select("id", "race", "sex"),
    }
    paths = {}
    for role, frame in files.items():
        paths[role] = str(folder / f"{role}.parquet")
        frame.write_parquet(paths[role])
    return paths


def policy_text(n_bootstrap: int = 200, delivery: str = "") -> str:
    return POLICY % {"n_bootstrap": n_bootstrap, "delivery": delivery}


def record_deployment_audit(policy_path: Path, trail: Path, size: int, seed: int, model: str) -> str:
    """Audit a deployment sample with the engine and record it as ``fairgate audit`` does; its run id."""
    import fairgate
    from tasks.store import append_audit_run

    text = policy_path.read_text()
    policy = fairgate.Policy.from_yaml(text)
    rows = population(np.random.default_rng(seed), size)
    cube = fairgate.build_cube(rows, policy)
    parts = [fairgate.compute_slicing(cube, s, policy) for s in fairgate.plan_slicings(cube, policy)]
    document = fairgate.adjudicate(
        cube, parts, policy, model=fairgate.ModelInfo(name=model, version="1"), run_id="deployment"
    ).to_dict()
    append_audit_run(
        trail, document, policy_text=text, inputs={}, validation={}, join_report={}, cube_cells=cube.cells.to_dicts()
    )
    return str(document["run_id"])


def night_people(seed: int, night: int, size: int, shift: float, shift_from: int | None) -> pl.DataFrame:
    """Night ``night``'s people (1-based), group C's TPR lowered by ``shift`` from night ``shift_from`` on."""
    tpr_c = BASE_TPR - shift if shift_from is not None and night >= shift_from else BASE_TPR
    return population(np.random.default_rng([seed, night]), size, tpr_c)


def run(args: argparse.Namespace) -> dict[str, Any]:
    from flows.monitor import fairness_monitor

    work = Path(args.work or tempfile.mkdtemp(prefix="fairgate-monitor-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    policy_path = work / "policy.yaml"
    policy_path.write_text(policy_text(args.n_bootstrap))
    trail = work / "trail.duckdb"
    record_deployment_audit(policy_path, trail, args.baseline_rows, args.seed, "bench")
    seconds: list[float] = []
    cpu: list[float] = []  # this process's CPU seconds: robust to other load on the machine (server excluded)
    alerts, delay = [], None
    for night in range(1, args.nights + 1):
        day = START + timedelta(days=night - 1)
        people = night_people(args.seed, night, args.rows, args.shift, args.shift_from)
        files = write_inputs(people, work / "nights" / day.isoformat(), day, night * 1_000_000)
        started, started_cpu = time.perf_counter(), time.process_time()
        state = fairness_monitor(
            policy=str(policy_path),
            out_dir=str(work / "out"),
            model_name="bench",
            trail=str(trail),
            **files,
            return_state=True,
        )
        seconds.append(time.perf_counter() - started)
        cpu.append(time.process_time() - started_cpu)
        summary = cast(dict[str, Any], state.result())
        if summary["alerts"]:
            alerts.append((night, summary["alerts"]))
        if delay is None:
            delay = _predicted_delay(Path(summary["outputs"]["json"]))
        print(
            f"night {night:3d} {day}: {seconds[-1]:.2f} s wall, {cpu[-1]:.2f} s cpu, exit {summary['exit_code']}: "
            f"{summary['headline']}",
            flush=True,
        )
    return {"seconds": seconds, "cpu": cpu, "alerts": alerts, "delay": delay}


def _predicted_delay(path: Path) -> float | None:
    import json

    detector = json.loads(path.read_text())["detector"] or {}
    delays = [s["predicted_delay"] for s in detector.get("streams", []) if s["predicted_delay"] is not None]
    return statistics.median(delays) if delays else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nights", type=int, default=90)
    parser.add_argument("--rows", type=int, default=2_000, help="people per night")
    parser.add_argument("--baseline-rows", type=int, default=60_000)
    parser.add_argument("--shift", type=float, default=0.0, help="drop of group C's TPR")
    parser.add_argument("--shift-from", type=int, default=None, help="first night of the shift")
    parser.add_argument("--n-bootstrap", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--work", default=None, help="working folder (default: a new temporary one)")
    args = parser.parse_args()
    # Before Prefect is imported (as the CLI does): quiet logs, no telemetry writes, a patient server start.
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
    result = run(args)
    print(f"nights: {len(result['seconds'])}, rows per night: {args.rows}")
    for kind in ("seconds", "cpu"):
        values = result[kind]
        first, last = values[:10], values[-10:]
        print(f"median {kind}, nights 1-10: {statistics.median(first):.3f}")
        print(f"median {kind}, nights {len(values) - len(last) + 1}-{len(values)}: {statistics.median(last):.3f}")
        print(f"ratio last/first ({kind}): {statistics.median(last) / statistics.median(first):.2f}")
    print(f"predicted detection delay (median nights, min_change 0.1): {result['delay']}")
    if result["alerts"]:
        for night, names in result["alerts"]:
            print(f"alert on night {night}: {', '.join(names)}")
    else:
        print("no alert")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
