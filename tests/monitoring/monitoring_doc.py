"""A monitoring document of the shape ``fairgate monitor run`` writes, built from the drift simulation.

The windows are sums of the simulated nightly cubes, audited by the engine (``compute_slicing`` and
``adjudicate``) and compared with the baseline's audit; the detector part comes from ``scan`` as the flow
records it. "Tonight" is the night the step change is first alerted, so the document carries an alert.
"""

from __future__ import annotations

import math
from datetime import date
from typing import Any

from drift_sim import MIN_CHANGE, SIM, changed_monitors
from scipy import stats

import fairgate
from fairgate.document.monitoring import MONITORING_SCHEMA_VERSION
from fairgate.engine.stats import holm
from fairgate.monitoring.drift import scan
from fairgate.monitoring.headline import headline
from fairgate.monitoring.windowed import window_verdict
from tasks.monitor import detector_section, episode_records

WINDOWS = [7, 30, 90, "since_deployment"]
# The windows are judged with bootstrap intervals and standard errors, as the flow's audits are.
JUDGING = SIM.POLICY.model_copy(update={"statistics": SIM.POLICY.statistics.model_copy(update={"n_bootstrap": 200})})


def _judged(cube: fairgate.Cube) -> dict[tuple[str, tuple[str, ...]], dict[str, Any]]:
    parts = [fairgate.compute_slicing(cube, s, JUDGING) for s in fairgate.plan_slicings(cube, JUDGING)]
    document = fairgate.adjudicate(cube, parts, JUDGING).to_dict()
    return {(r["metric"], tuple(r["slicing"])): r for r in document["results"]}


def _window(
    label: str, cubes: list[fairgate.Cube], days: list[date], base: dict[Any, dict[str, Any]]
) -> dict[str, Any]:
    total = cubes[0]
    for cube in cubes[1:]:
        total = total + cube
    results = []
    judged = _judged(total)
    for key, r in judged.items():
        b = base[key]
        change = None if r["value"] is None or b["value"] is None else r["value"] - b["value"]
        se = math.hypot(r.get("standard_error") or 0.0, b.get("standard_error") or 0.0) or None
        z = None if change is None or se is None else change / se
        results.append(
            {
                "metric": r["metric"],
                "slicing": list(key[1]),
                "direction": r["direction"],
                "threshold": r["threshold"],
                "value": r["value"],
                "ci_low": r["ci_low"],
                "ci_high": r["ci_high"],
                "standard_error": r.get("standard_error"),
                "status": r["status"],
                "baseline_value": b["value"],
                "baseline_standard_error": b.get("standard_error"),
                "change": change,
                "change_standard_error": se,
                "z": z,
                "p_value": None if z is None else float(2 * stats.norm.sf(abs(z))),
                "significant": None,
                "reason": None,
            }
        )
    tested = [i for i, r in enumerate(results) if r["p_value"] is not None]
    adjusted = holm([results[i]["p_value"] for i in tested]) if tested else []
    for i, p in zip(tested, adjusted, strict=True):
        results[i]["significant"] = bool(p <= 0.05)
    return {
        "window": label,
        "start": days[0].isoformat(),
        "end": days[-1].isoformat(),
        "periods": len(cubes),
        "rows": total.n_rows,
        **window_verdict(list(judged.values()), JUDGING),
        "same_as": None,
        "results": results,
    }


def monitoring_document() -> dict[str, Any]:
    """The document of the night the first monitor's step change is first alerted."""
    monitor = changed_monitors(1)[0]
    rules = SIM.rules(MIN_CHANGE, 0.05)
    first = next(a for a in scan(monitor.history, rules).alerts if a.stream == SIM.CHANGED_STREAM)
    tonight = SIM.DAYS.index(first.night)
    history = [o for o in monitor.history if o.night <= first.night]
    result = scan(history, rules)
    base = _judged(monitor.baseline)
    windows = []
    for window in WINDOWS:
        start = 0 if window == "since_deployment" else max(0, tonight + 1 - int(window))
        cubes = monitor.cubes[start : tonight + 1]
        windows.append(_window(str(window), cubes, SIM.DAYS[start : tonight + 1], base))
    alerts = [
        {
            "stream": a.stream,
            "metric": a.metric,
            "slicing": a.slicing,
            "group": a.group,
            "night": a.night.isoformat(),
            "statistic": a.statistic,
            "threshold": a.threshold,
            "change": a.change,
            "detail": a.detail,
        }
        for a in result.alerts_on(first.night)
    ]
    episodes = episode_records(result)
    for window in windows:
        window.pop("failed", None)
    return {
        "schema_version": MONITORING_SCHEMA_VERSION,
        "kind": "monitoring",
        "run_id": "sim-run-1",
        "created_at": "2026-03-01T02:00:00+00:00",
        "night": first.night.isoformat(),
        "fairgate_version": "test",
        "policy_sha256": "0" * 64,
        "model": {"name": "credit", "version": "7"},
        "period": "day",
        "inputs": {},
        "stored": [
            {
                "start": first.night.isoformat(),
                "end": first.night.isoformat(),
                "version": 1,
                "rows": monitor.cubes[tonight].n_rows,
                "labelled_rows": monitor.cubes[tonight].n_rows,
                "supersedes": None,
                "unchanged": False,
            }
        ],
        "baseline": {"kind": "deployment_audit", "label": "audit-0", "rows": monitor.baseline.n_rows},
        "windows": windows,
        "confidence_level": 0.95,
        "alpha": 0.05,
        "detector": detector_section(result, []),
        "alerts": alerts,
        "episodes": episodes,
        "underpowered": [],
        "headline": headline(windows, alerts, episodes, watching=True),
        "exit_on": "any",
        "exit_code": 1 if alerts else 0,
        "notes": [],
    }
