"""The ``fairness-monitor`` flow: one night of monitoring.

read the new rows -> cube them per period -> windows from stored cubes -> baseline -> observations + drift scan
-> record (period cubes, night, alerts) -> write the monitoring JSON -> alert event + e-mail.

Only the night's rows are read (and a rebuilt period's, when its late labels are passed again); every window
is a sum of stored period cubes. Bad input (a file, the policy, a missing baseline) is a ``Failed`` state named
``InvalidInput`` with the fix in its message; nothing is recorded or written then.
"""

from __future__ import annotations

import statistics
import uuid
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from prefect import get_run_logger, unmapped
from prefect.client.schemas.objects import State
from prefect.states import Completed, Failed

import fairgate
from fairgate.document.monitoring import MONITORING_SCHEMA_VERSION
from fairgate.document.result import fairgate_version
from fairgate.engine.cube import check_cardinality
from fairgate.errors import FairgateError
from fairgate.monitoring.drift import TYPICAL_SE_NIGHTS
from fairgate.monitoring.estimates import estimates_judged, labelled_periods, unlabelled_periods
from fairgate.monitoring.headline import EXIT_ON, estimates_note, exit_code, headline
from fairgate.monitoring.windowed import coinciding
from fairgate.monitoring.windows import PeriodCube, check_nights
from flows.plain_flow import plain_flow
from flows.runtime import INVALID_INPUT, NO_LABELS, TASK_RUNNER, model_info, persisted, signals_held
from tasks.audit import read_policy
from tasks.inputs.align import align_inputs, release, stage_inputs
from tasks.inputs.monitor_inputs import cube_periods, night_of, row_periods
from tasks.monitor import (
    alert_records,
    baseline,
    changed_periods,
    deliver_alert,
    detector_section,
    drift_scan,
    episode_records,
    merged_periods,
    monitoring_of,
    observe,
    power_records,
    render_report,
    stored_periods,
    validated,
    window_summary,
    write_document,
)
from tasks.monitor_estimates import (
    check_records,
    estimate_checks,
    estimate_records,
    estimate_reference,
    estimated_window,
    label_free_section,
    without_labels,
)
from tasks.outbound.events import emit_drift_detected
from tasks.outputs import discard_staging, promote_outputs, staging_dir
from tasks.store import check_trail, default_trail_path
from tasks.store.monitor import (
    MonitoringRecord,
    baseline_audit_cells,
    monitoring_history,
    night_observations_history,
    record_monitoring,
)
from tasks.validation.validate import validate_aligned, validate_inputs

ALERT = "DriftDetected"


@plain_flow(name="fairness-monitor", task_runner=TASK_RUNNER)
def fairness_monitor(
    policy: str,
    predictions: str,
    labels: str | None,
    attributes: str,
    out_dir: str | None = None,
    model_name: str | None = None,
    model_version: str | int | None = None,
    trail: str | None = None,
    night: str | None = None,
    run_id: str | None = None,
    exit_on: str = "any",
    command_line: str | None = None,
) -> State:
    """Monitor one night of a model's predictions; the state's result is the run summary.

    Its exit code is 1 when a new drift alert fires or (``exit_on`` "any", the default) a window fails the policy;
    ``exit_on`` "alerts": new alerts only. ``labels`` None: a night whose labels have not arrived; its windows'
    label-dependent metrics are estimated from the scores (tasks/monitor_estimates.py).
    ``command_line``: the command that started the run (recorded for the report's reproduce block).
    """
    version = None if model_version is None else str(model_version)
    try:
        if exit_on not in EXIT_ON:
            raise FairgateError(f"exit_on {exit_on!r} is not one of {list(EXIT_ON)}; write any or alerts")
        sources = (predictions, labels, attributes)
        summary = _monitor(policy, sources, out_dir, model_name, version, trail, night, run_id, exit_on, command_line)
    except FairgateError as exc:
        return Failed(name=INVALID_INPUT, message=exc.message)
    name = ALERT if summary["alerts"] else "Completed"
    return persisted(Completed(name=name, message=f"{summary['night']}: {summary['headline']}", data=summary))


def _monitor(
    policy_path: str,
    sources: tuple[str, str | None, str],
    out_dir: str | None,
    model_name: str | None,
    model_version: str | None,
    trail: str | None,
    night_text: str | None,
    run_id: str | None,
    exit_on: str,
    command_line: str | None = None,
) -> dict[str, Any]:
    """The recipe: each line one step of a monitoring night."""
    run_id = run_id or uuid.uuid4().hex[:12]
    policy, monitoring, output, trail_path = _checked_setup(policy_path, out_dir, trail, model_name)
    new, night, staged_summary, model = _read_night(policy, sources, _night(night_text), model_name, model_version)
    stored = stored_periods(trail_path, model.name)
    to_store, unchanged, all_periods, kept_notes = _periods(stored, new, labels_given=sources[1] is not None)
    measured = labelled_periods(all_periods)
    base = baseline(trail_path, policy, model.name, measured, all_periods[0].cube)
    windows = window_summary.map(
        monitoring.windows, unmapped(measured), unmapped(night), unmapped(base["results"]), unmapped(policy)
    ).result()
    coinciding(windows)
    tonight = [p for p in measured if p.start == night]
    watched = _observed(labelled_periods(to_store), tonight)
    observed, skipped = observe(watched, base["cube"], policy) if monitoring.alerts else ({}, [])
    history = night_observations_history(trail_path, model.name) | observed
    result = drift_scan(history, policy) if monitoring.alerts else None
    recorded = monitoring_history(trail_path, model.name)["alerts"] if trail_path.exists() else []
    alerts = alert_records(result, list(observed), recorded) if result is not None else []
    document = _document(run_id, night, policy, model, staged_summary, to_store, unchanged, base, windows, alerts)
    document["notes"] += kept_notes
    document |= _record(policy, command_line)
    if result is not None:
        document["detector"] = detector_section(result, skipped)
        document["episodes"] = episode_records(result)
        document["underpowered"] = power_records(result, _rows_per_period(measured), monitoring.period)
    label_rows = _estimates(document, policy, trail_path, base, (all_periods, to_store), night, sources[1] is not None)
    document = validated(_judged_night(document, policy, exit_on))
    record_of_night = MonitoringRecord(
        run_id=run_id,
        model_name=model.name,
        input_sha256={role: str(entry["sha256"]) for role, entry in staged_summary.items()},
        periods=to_store,
        nights=_night_rows(night, windows + document["estimated_windows"], observed),
        alerts=alerts,
        estimates=label_rows,
    )
    written, record = _publish(document, policy, record_of_night, trail_path, output)
    delivery = deliver_alert(document, policy, trail_path, output, written)
    if alerts:
        emit_drift_detected(document, str(trail_path))
    get_run_logger().info(f"monitoring {night}: {len(alerts)} alert(s); {written['json']}")
    return _run_summary(document, model, alerts, written, delivery, record)


def _run_summary(
    document: dict[str, Any],
    model: fairgate.ModelInfo,
    alerts: list[dict[str, Any]],
    written: dict[str, str],
    delivery: Any,
    record: dict[str, Any],
) -> dict[str, Any]:
    """The flow's result: the night, the model, the exit code, the alerts, the files, the trail rows stored."""
    return {
        "run_id": document["run_id"],
        "night": document["night"],
        "model_name": model.name,
        "model_version": model.version,
        "exit_code": document["exit_code"],
        "headline": document["headline"]["text"],
        "alerts": [f"{a['metric']}@{a['slicing']}:{a['group']}" for a in alerts],
        "outputs": written,
        "delivery": delivery,
        "trail": {k: v for k, v in record.items() if k != "periods"} | {"stored": record["periods"]},
    }


def _checked_setup(
    policy_path: str, out_dir: str | None, trail: str | None, model_name: str | None
) -> tuple[fairgate.Policy, Any, Path, Path]:
    """The policy, its monitoring section, the output folder and the trail, checked before any work."""
    policy, _ = read_policy(Path(policy_path))
    monitoring = monitoring_of(policy, policy_path)
    output = Path(out_dir or policy.reporting.output_dir)
    trail_path = Path(trail) if trail else default_trail_path(policy, output)
    check_trail(trail_path)
    if monitoring.baseline.kind == "deployment_audit" and model_name is not None:  # before any work, if we can
        baseline_audit_cells(trail_path, model_name, monitoring.baseline.run_id)
    return policy, monitoring, output, trail_path


def _read_night(
    policy: fairgate.Policy,
    sources: tuple[str, str | None, str],
    night: date | None,
    model_name: str | None,
    model_version: str | None,
) -> tuple[list[PeriodCube], date, dict[str, Any], fairgate.ModelInfo]:
    """Read, validate and align the night's rows and cube them per period: the cubes, the night, the inputs'
    summary (source, sha256, rows) and the model."""
    staged = stage_inputs(policy, *sources)
    validation = validate_inputs(staged)
    aligned = align_inputs(staged)
    check_cardinality(aligned.table, policy, source=staged.sources["attributes"].label)
    validation = validate_aligned(staged, aligned, validation)
    periods = row_periods(staged, policy, night)
    release(staged)
    for warning in validation.warnings:
        get_run_logger().warning(warning)
    summary = {
        role: {"source": source.label, "sha256": staged.sha256[role], "rows": staged.row_counts[role]}
        for role, source in staged.sources.items()
    }
    if staged.labels_absent:  # the predictions stood in for the labels (tasks/inputs/align.py)
        summary["labels"] = {"source": NO_LABELS, "sha256": staged.sha256["labels"], "rows": 0}
    new = cube_periods(aligned.table, periods, policy)
    return new, night_of(periods, night, policy), summary, model_info(staged, model_name, model_version)


def _publish(
    document: dict[str, Any],
    policy: fairgate.Policy,
    record_of_night: MonitoringRecord,
    trail_path: Path,
    output: Path,
) -> tuple[dict[str, str], dict[str, Any]]:
    """Write the JSON (and the HTML/PDF report when the policy asks) into a staging folder, record the night,
    then move the files into place: a failed run leaves neither files nor trail rows."""
    staging = staging_dir(output, document["run_id"])
    try:
        written = {"json": write_document(document, staging)}
        written |= render_report(document, staging, policy.reporting.format)
        with signals_held():  # recorded with its files in place, or neither
            record = record_monitoring(trail_path, record_of_night)
            moved = promote_outputs(staging, output)
    finally:
        discard_staging(staging)
    return {kind: moved.get(path, path) for kind, path in written.items()}, record


def _periods(
    stored: list[PeriodCube], new: list[PeriodCube], *, labels_given: bool
) -> tuple[list[PeriodCube], list[date], list[PeriodCube], list[str]]:
    """Tonight's cubes against the stored ones: those to store, the periods unchanged, every current period
    (oldest first) and notes. A night without labels stores its cubes as unlabelled, never over labelled ones."""
    new, notes = (new, []) if labels_given else without_labels(new, stored)
    to_store, unchanged = changed_periods(stored, new)
    all_periods = merged_periods(stored, new)
    if not all_periods:
        raise FairgateError(
            "no period of the model has labelled rows yet; pass predictions that have labels, or leave --labels "
            "out to estimate the label-dependent metrics from the scores"
        )
    return to_store, unchanged, all_periods, notes


def _estimates(
    document: dict[str, Any],
    policy: fairgate.Policy,
    trail_path: Path,
    base: dict[str, Any],
    periods: tuple[list[PeriodCube], list[PeriodCube]],
    night: date,
    labels_given: bool,
) -> list[dict[str, Any]]:
    """The night's estimated windows, their method and reference, and the estimates checked against labels now
    arrived, into the document; the trail rows of the periods estimated and checked tonight."""
    all_periods, to_store = periods
    model = document["model"]["name"]
    reference = estimate_reference(trail_path, model, base.get("run_id"))
    windows = monitoring_of(policy, "the policy").windows
    estimated = _estimated_windows(windows, all_periods, night, reference, base["results"], policy)
    label_rows = estimate_records(to_store, reference, policy) + check_records(trail_path, model, to_store, policy)
    _with_estimates(document, labels_given, estimated, reference, policy, trail_path, label_rows)
    return label_rows


def _estimated_windows(
    windows: list[Any],
    periods: list[PeriodCube],
    night: date,
    reference: Any,
    base: Any,
    policy: fairgate.Policy,
) -> list[dict[str, Any]]:
    """The windows over periods without labels yet (none when every period has its labels)."""
    if not unlabelled_periods(periods):
        return []
    found = estimated_window.map(
        windows, unmapped(periods), unmapped(night), unmapped(reference), unmapped(base), unmapped(policy)
    ).result()
    summaries = [w for w in found if w is not None]
    coinciding(summaries)
    return summaries


def _with_estimates(
    document: dict[str, Any],
    labels_given: bool,
    estimated: list[dict[str, Any]],
    reference: Any,
    policy: fairgate.Policy,
    trail_path: Path,
    label_rows: list[dict[str, Any]],
) -> None:
    """The night's estimated windows, their method and reference, and the estimates checked against labels."""
    document["labels_given"] = labels_given
    document["estimated_windows"] = estimated
    document["label_free"] = label_free_section(reference, policy, estimated) if estimated else None
    checks = [r for r in label_rows if r["kind"] == "check"]
    model = document["model"]["name"]
    document["estimate_checks"] = estimate_checks(trail_path, model, checks, policy.reporting.confidence_level)


def _night(text: str | date | None) -> date | None:
    """``--night`` as a date (ISO); a wrong one is bad input."""
    if text is None or isinstance(text, date):
        return text
    try:
        night = date.fromisoformat(str(text))
    except ValueError:
        raise FairgateError(f"--night {text!r} is not a date; write it as YYYY-MM-DD, e.g. 2026-12-01") from None
    check_nights(night, night, f"--night {text!r}")
    return night


def _observed(to_store: list[PeriodCube], tonight: list[PeriodCube]) -> list[PeriodCube]:
    """The periods observed this run: tonight's, and every period rebuilt (its observation replaces the old)."""
    by_start = {p.start: p for p in [*tonight, *to_store]}
    return [by_start[start] for start in sorted(by_start)]


def _rows_per_period(periods: list[PeriodCube]) -> float:
    """The labelled rows a period observed: the median of the first periods (those a stream's SE is typed from)."""
    first = [p.labelled_rows for p in periods[:TYPICAL_SE_NIGHTS]]
    return float(statistics.median(first)) if first else 0.0


def _judged_night(document: dict[str, Any], policy: fairgate.Policy, exit_on: str) -> dict[str, Any]:
    """The night's headline (windows' verdict, new alerts, open episodes) and its exit code.

    Windows over rows without labels yet join the verdict with the results their policy rule counts (measured
    ones; estimated ones too under ``labels.estimated_results: judge``), and the headline says how estimates count.
    """
    gate = policy.ci_cd_gate.enabled
    watching = document["detector"] is not None
    windows = document["windows"] + document["estimated_windows"]
    estimates = estimates_note(document["estimated_windows"], estimates_judged(policy))
    head = headline(
        windows, document["alerts"], document["episodes"], watching=watching, gate_enabled=gate, estimates=estimates
    )
    code = exit_code(head, exit_on, gate_enabled=gate, insufficient=policy.ci_cd_gate.insufficient)
    return document | {"headline": head, "exit_on": exit_on, "exit_code": code}


def _night_rows(night: date, windows: list[dict[str, Any]], observed: dict[str, Any]) -> list[dict[str, Any]]:
    """Tonight's row (windows, the estimated ones marked ``estimated``, and observations) and one row per
    re-observed earlier period (observations)."""
    key = night.isoformat()
    rows = [{"night": key, "windows": windows, "observations": observed.get(key, [])}]
    rows += [{"night": n, "windows": [], "observations": obs} for n, obs in observed.items() if n != key]
    return rows


def _record(policy: fairgate.Policy, command_line: str | None) -> dict[str, Any]:
    """What the report's frame shows besides the numbers: the command run, the model card, the small-cell rule."""
    card = policy.model_card
    return {
        "command_line": command_line,
        "model_card": None if card is None else card.model_dump(mode="json"),
        "min_cell_size": policy.reporting.min_cell_size,
    }


def _document(
    run_id: str,
    night: date,
    policy: fairgate.Policy,
    model: fairgate.ModelInfo,
    inputs: dict[str, Any],
    to_store: list[PeriodCube],
    unchanged: list[date],
    base: dict[str, Any],
    windows: list[dict[str, Any]],
    alerts: list[dict[str, Any]],
) -> dict[str, Any]:
    """The monitoring document (fairgate/document/monitoring.py)."""
    monitoring = monitoring_of(policy, "the policy")
    stored = [
        {
            "start": p.start.isoformat(),
            "end": p.end.isoformat(),
            "version": p.version,
            "rows": p.rows,
            "labelled_rows": p.labelled_rows,
            "supersedes": p.version - 1 if p.version > 1 else None,
            "unchanged": False,
        }
        for p in to_store
    ]
    notes = [f"period {d.isoformat()}: same cube as stored, not stored again" for d in unchanged]
    if monitoring.baseline.kind == "reference_window":
        notes.append(
            "windows overlapping the reference window share its rows, so their change test is conservative there"
        )
    return {
        "schema_version": MONITORING_SCHEMA_VERSION,
        "kind": "monitoring",
        "run_id": run_id,
        "created_at": datetime.now(UTC).isoformat(),
        "night": night.isoformat(),
        "fairgate_version": fairgate_version(),
        "policy_sha256": policy.sha256(),
        "model": {"name": model.name, "version": model.version},
        "period": monitoring.period,
        "inputs": inputs,
        "stored": stored,
        "baseline": {"kind": base["kind"], "label": base["label"], "rows": base["rows"]},
        "windows": windows,
        "confidence_level": policy.reporting.confidence_level,
        "alpha": policy.statistics.significance_level,
        "detector": None,
        "alerts": alerts,
        "episodes": [],
        "underpowered": [],
        "exit_code": 1 if alerts else 0,  # set with the headline (_judged_night)
        "notes": notes,
        "labels_given": True,
        "estimated_windows": [],
        "label_free": None,
        "estimate_checks": None,
    }
