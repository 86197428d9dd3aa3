"""MONITOR: the steps of a monitoring night between reading its rows and recording it (flows/monitor.py).

Windows are sums of stored period cubes (never rows); each is judged like an audit and compared with the
baseline (fairgate/monitoring/windowed.py). The drift detector (fairgate/monitoring/drift.py) replays every
stored nightly observation plus tonight's; its alerts become an event, an e-mail and a trail row.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from datetime import date
from pathlib import Path
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

import fairgate
from fairgate.document.monitoring import MonitoringDocument
from fairgate.engine.text import fmt, fmt_signed
from fairgate.errors import DataError
from fairgate.monitoring.drift import DriftScan, Observation, drift_rules, night_contrasts, scan
from fairgate.monitoring.power import rule_powers, underpowered
from fairgate.monitoring.windowed import by_key, compare_with_baseline, group_sizes, judged_results, window_verdict
from fairgate.monitoring.windows import PeriodCube, audit_cube, sum_cubes, window_label, window_periods
from fairgate.policy.monitoring import Monitoring, Window
from fairgate.report.sizes import published_sizes
from tasks.outbound.deliver import deliver_report
from tasks.outputs import write_atomic
from tasks.store.monitor import baseline_audit_cells, current_period_cubes

Key = tuple[str, tuple[str, ...]]


def monitoring_of(policy: fairgate.Policy, source: str) -> Monitoring:
    """The policy's monitoring section; a policy without one cannot be monitored (exit 2)."""
    if policy.monitoring is None:
        raise fairgate.PolicyError(
            f"{source} has no monitoring: section; add one (docs/guides/monitoring.md), e.g. monitoring: "
            "{windows: [7, 30], alerts: [{metric: equal_opportunity_difference, min_change: 0.05}]}"
        )
    return policy.monitoring


def merged_periods(stored: Sequence[PeriodCube], new: Sequence[PeriodCube]) -> list[PeriodCube]:
    """The stored current cubes with tonight's cubes in place of the periods they rebuild, oldest first."""
    rebuilt = {p.start for p in new}
    return sorted([p for p in stored if p.start not in rebuilt] + list(new), key=lambda p: p.start)


def changed_periods(stored: Sequence[PeriodCube], new: Sequence[PeriodCube]) -> tuple[list[PeriodCube], list[date]]:
    """The new cubes to store (new periods, and rebuilt ones whose cells differ), and the periods unchanged."""
    current = {p.start: p for p in stored}
    to_store, unchanged = [], []
    for period in new:
        old = current.get(period.start)
        if old is not None and old.rows == period.rows and old.cube.cells.equals(period.cube.cells):
            unchanged.append(period.start)
            continue
        version = 1 if old is None else old.version + 1
        to_store.append(PeriodCube(period.start, period.end, period.cube, period.rows, period.labelled_rows, version))
    return to_store, unchanged


@task(name="stored period cubes", cache_policy=NO_CACHE)
def stored_periods(trail_path: Path, model_name: str) -> list[PeriodCube]:
    """The model's current period cubes from the trail (none yet: an empty list)."""
    return current_period_cubes(trail_path, model_name)


@task(name="baseline", cache_policy=NO_CACHE)
def baseline(
    trail_path: Path, policy: fairgate.Policy, model_name: str, periods: Sequence[PeriodCube], template: fairgate.Cube
) -> dict[str, Any]:
    """The baseline cube, what it is, and its judged results by (metric, slicing)."""
    setting = monitoring_of(policy, "the policy").baseline
    if setting.kind == "deployment_audit":
        run_id, cells = baseline_audit_cells(trail_path, model_name, setting.run_id)
        cube, label = audit_cube(cells, template), f"audit run {run_id}"
    else:
        run_id = None
        assert setting.start is not None
        assert setting.end is not None
        inside = [p.cube for p in periods if setting.start <= p.start <= setting.end]
        summed = sum_cubes(inside)
        if summed is None:
            raise DataError(
                f"monitoring.baseline is the reference window {setting.start} to {setting.end}, but no period "
                "cube of the model is stored in it; monitor those periods first, or move the window"
            )
        cube, label = summed, f"periods {setting.start} to {setting.end} ({len(inside)} stored)"
    results = judged_results(cube, policy)
    run = run_id if setting.kind == "deployment_audit" else None
    return {
        "kind": setting.kind,
        "label": label,
        "run_id": run,
        "rows": cube.n_rows,
        "cube": cube,
        "results": by_key(results),
    }


@task(name="window", task_run_name="window {window}", cache_policy=NO_CACHE)
def window_summary(
    window: Window,
    periods: Sequence[PeriodCube],
    night: date,
    base: Mapping[Key, dict[str, Any]] | None,
    policy: fairgate.Policy,
) -> dict[str, Any]:
    """One window: its periods summed, judged, and compared with the baseline."""
    inside = window_periods(periods, window, night, policy)
    cube = sum_cubes(p.cube for p in inside)
    results = [] if cube is None else judged_results(cube, policy)
    alpha = policy.statistics.significance_level
    k = policy.reporting.min_cell_size
    none = {"verdict": None, "n_judged": 0, "n_failed": 0, "n_inconclusive": 0}
    verdict = window_verdict(results, policy) if results else none
    return {
        "window": window_label(window),
        "start": inside[0].start.isoformat() if inside else None,
        "end": inside[-1].end.isoformat() if inside else None,
        "periods": len(inside),
        "rows": 0 if cube is None else cube.n_rows,
        "verdict": verdict["verdict"],
        "n_judged": verdict["n_judged"],
        "n_failed": verdict["n_failed"],
        "n_inconclusive": verdict["n_inconclusive"],
        "same_as": None,
        "results": compare_with_baseline(results, dict(base) if base is not None else None, alpha),
        "groups": [] if cube is None else published_sizes(group_sizes(cube, policy), cube.n_rows, k),
    }


@task(name="observe nights", cache_policy=NO_CACHE)
def observe(
    periods: Sequence[PeriodCube], baseline_cube: fairgate.Cube, policy: fairgate.Policy
) -> tuple[dict[str, list[dict[str, Any]]], list[str]]:
    """Each given period's observations against the baseline, by night (ISO date of the period's start), and the
    streams skipped on those nights (too few events) with the reason."""
    observed: dict[str, list[dict[str, Any]]] = {}
    skipped: list[str] = []
    for period in periods:
        contrasts = night_contrasts(period.cube, baseline_cube, policy, period.start)
        observed[period.start.isoformat()] = [_observation_record(o) for o in contrasts.observations]
        skipped += [f"{period.start.isoformat()}: {reason}" for reason in contrasts.skipped]
    return observed, skipped


@task(name="drift scan", cache_policy=NO_CACHE)
def drift_scan(history: Mapping[str, list[dict[str, Any]]], policy: fairgate.Policy) -> DriftScan:
    """The detector over every stored night's observations (tonight's included), oldest first."""
    observations = [_observation(record) for night in sorted(history) for record in history[night]]
    return scan(observations, drift_rules(monitoring_of(policy, "the policy")))


def _observation_record(observation: Observation) -> dict[str, Any]:
    record = asdict(observation)
    record["night"] = observation.night.isoformat()
    return record


def _observation(record: Mapping[str, Any]) -> Observation:
    return Observation(**{**record, "night": date.fromisoformat(str(record["night"]))})


def alert_records(
    result: DriftScan, nights: Sequence[str], recorded: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The scan's alerts on the nights this run observed that the trail does not hold yet."""
    seen = {(a["night"], a["metric"], a["slicing"], a["group"]) for a in recorded}
    out = []
    for alert in result.alerts:
        record = {
            "stream": alert.stream,
            "metric": alert.metric,
            "slicing": alert.slicing,
            "group": alert.group,
            "night": alert.night.isoformat(),
            "statistic": float(alert.statistic),
            "threshold": float(alert.threshold),
            "change": float(alert.change),
            "detail": alert.detail,
        }
        if record["night"] in nights and (record["night"], alert.metric, alert.slicing, alert.group) not in seen:
            out.append(record)
    return out


def detector_section(result: DriftScan, skipped: list[str]) -> dict[str, Any]:
    """The detector's part of the document: its method, rules, every stream's path and threshold."""
    return {
        "method": result.method,
        "rules": [rule.describe() for rule in result.rules],
        "streams": [
            {
                "stream": s.stream,
                "metric": s.metric,
                "slicing": s.slicing,
                "group": s.group,
                "threshold": s.threshold,
                "nights": [n.isoformat() for n in s.nights],
                "statistic": list(s.statistic),
                "estimate": list(s.estimate),
                "standard_error": list(s.standard_error),
                "predicted_delay": s.predicted_delay if math.isfinite(s.predicted_delay) else None,
                "episode_since": s.episode.since.isoformat() if s.episode is not None else None,
            }
            for s in result.streams
        ],
        "n_observations": result.n_observations,
        "skipped": skipped,
    }


def episode_records(result: DriftScan) -> list[dict[str, Any]]:
    """The drift episodes still open after tonight, as the document lists them (oldest first)."""
    return [
        {
            "stream": e.stream,
            "metric": e.metric,
            "slicing": e.slicing,
            "group": e.group,
            "component": e.component,
            "direction": e.direction,
            "since": e.since.isoformat(),
            "change": float(e.change),
            "last_night": e.last_night.isoformat(),
            "confirmations": e.confirmations,
        }
        for e in result.episodes
    ]


@task(name="rule power", cache_policy=NO_CACHE)
def power_records(result: DriftScan, rows_per_period: float, period: str) -> list[dict[str, Any]]:
    """The alert rules that cannot be expected to catch their min_change in time, named with the volume they need."""
    out = []
    for power in underpowered(rule_powers(result)):
        delay = power.predicted_delay
        out.append(
            {
                "metric": power.metric,
                "slicing": list(power.slicing) if power.slicing is not None else None,
                "min_change": power.min_change,
                "horizon_nights": power.horizon_nights,
                "stream": power.stream,
                "threshold": float(power.threshold) if math.isfinite(power.threshold) else None,
                "peak": float(power.peak),
                "predicted_delay": delay if math.isfinite(delay) else None,
                "detection_probability": float(power.detection_probability),
                "rows_per_period": float(rows_per_period),
                "rows_needed": None
                if power.volume_factor is None
                else math.ceil(power.volume_factor * rows_per_period),
                "detail": power.sentence(rows_per_period, period),
            }
        )
    return out


def validated(document: dict[str, Any]) -> dict[str, Any]:
    """The document checked against its model (a shape error is a bug, caught before anything is written)."""
    return MonitoringDocument.model_validate(document).model_dump(mode="json")


def document_path(out_dir: Path, document: Mapping[str, Any]) -> Path:
    """``monitoring_<model>_<version>_<night>_<run>.json`` in the output folder."""
    from tasks.outputs import output_stem

    stem = output_stem(document).replace("fairness_", "monitoring_", 1)
    return Path(out_dir) / f"{stem}_{document['night']}.json"


@task(name="write monitoring document", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=1)
def write_document(document: dict[str, Any], out_dir: Path) -> str:
    """Write the monitoring JSON atomically beside the audits."""
    path = document_path(out_dir, document)
    write_atomic(path, (json.dumps(document, indent=2, sort_keys=False, allow_nan=False) + "\n").encode())
    return str(path)


def alert_message(document: Mapping[str, Any]) -> str:
    """The alert e-mail's plain-text body: each alert, the windows' values of its metric, where the JSON is."""
    model = document["model"]
    lines = [
        f"fairgate detected fairness drift for model {model['name']} {model['version']} on {document['night']}.",
        "",
        document["headline"]["text"],
        "",
    ]
    for alert in document["alerts"]:
        lines.append(
            f"- {alert['metric']} on {alert['slicing']}, group {alert['group']}: "
            f"change {fmt_signed(alert['change'], 4)} against the baseline "
            f"(statistic {fmt(alert['statistic'], 2)} >= threshold {fmt(alert['threshold'], 2)})"
        )
        lines.append(f"  {alert['detail']}")
    baseline_text = document["baseline"]["label"] if document.get("baseline") else "none"
    lines += ["", f"Baseline: {baseline_text}.", f"Run {document['run_id']}; trail rows under this run id."]
    lines.append("`fairgate monitor show --model NAME` shows each window's values and bands.")
    return "\n".join(lines) + "\n"


@task(name="render monitoring report", cache_policy=NO_CACHE)
def render_report(document: dict[str, Any], out_dir: Path, formats: Sequence[str]) -> dict[str, str]:
    """The HTML/PDF monitoring report (tasks/render/monitor_report.py) in the formats the policy's reporting asks."""
    from tasks.render.monitor_report import render_monitoring_report  # matplotlib and WeasyPrint: only when asked

    if not {"html", "pdf"} & set(formats):
        return {}
    return {kind: str(path) for kind, path in render_monitoring_report(document, out_dir, formats).items()}


@task(name="deliver drift alert", cache_policy=NO_CACHE)
def deliver_alert(
    document: dict[str, Any], policy: fairgate.Policy, trail_path: Path, out_dir: Path, written: dict[str, str]
) -> dict[str, Any]:
    """E-mail the alert through the report delivery (policy ``delivery:``; ``monitoring.recipients`` when set),
    with the monitoring report attached as ``delivery.attach`` says, recorded in the trail's ``deliveries``.
    No alert, no e-mail."""
    if not document["alerts"]:
        return {"status": "skipped", "detail": "no alert", "recipients": []}
    monitoring = monitoring_of(policy, "the policy")
    delivery = policy.delivery
    if delivery is None:
        return {"status": "skipped", "detail": "no delivery section in the policy", "recipients": []}
    if monitoring.recipients is not None:
        delivery = delivery.model_copy(update={"recipients": monitoring.recipients})
    head = {"verdict": "drift", "model": document["model"], "run_id": document["run_id"]}
    attachments: dict[str, Path | None] = {kind: Path(written[kind]) for kind in ("pdf", "html") if kind in written}
    outcome = deliver_report(head, delivery, attachments, alert_message(document), trail_path, out_dir=out_dir)
    return {k: str(v) if k == "eml" else v for k, v in outcome.items()}
