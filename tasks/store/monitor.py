"""RECORD for monitoring: period cubes, monitored nights and drift alerts in the audit trail (tasks/store/).

Each table is an append-only chain like ``deliveries`` (``prev_hash``/``row_hash``, HMAC-SHA256 with
``FAIRGATE_TRAIL_KEY``), checked by ``fairgate trail verify``:

* ``period_cubes``: one row per model x period x version. A period rebuilt from late labels gets version
  n + 1 (``supersedes`` n); the older row stays in the chain, marked ``superseded`` with ``superseded_by``
  (those two columns follow from the later rows, so they are not hashed; verify checks them).
* ``monitor_nights``: per monitoring run and night, the windows' results and the night's observations (the
  detector's input; a night re-observed after late labels: its latest row counts).
* ``drift_alerts``: one row per alert raised.
* ``label_estimates``: per period stored without labels, the estimates a night made (kind ``estimate``), and
  once its labels arrived, those estimates against the measured values (kind ``check``, once per period).

A run records all its rows in one transaction under the trail's write lock: a night is stored whole or not at
all. Readers: :func:`current_period_cubes` (the windows' inputs: never rows), :func:`night_observations_history`
(the detector's history), :func:`baseline_audit_cube` (the deployment audit's cube from ``cubes``, written by
every audit), :func:`monitoring_history` (``fairgate monitor show``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import duckdb

from fairgate.monitoring.windows import PeriodCube, cube_from_record, cube_record
from tasks.store import (
    ALERT_COLUMNS,
    ESTIMATE_COLUMNS,
    KEYED,
    NIGHT_COLUMNS,
    PERIOD_CUBE_COLUMNS,
    UNKEYED,
    TrailError,
    append_chained_row,
    canonical,
    check_trail_key,
    has_table,
    locked_trail,
    trail_key,
    trail_transaction,
)


@dataclass
class MonitoringRecord:
    """What one monitoring run stores: new period cubes, its nights' rows and its alerts."""

    run_id: str
    model_name: str
    input_sha256: dict[str, str]
    periods: list[PeriodCube] = field(default_factory=list)
    nights: list[dict[str, Any]] = field(default_factory=list)  # {"night", "windows", "observations"}
    alerts: list[dict[str, Any]] = field(default_factory=list)  # ALERT_COLUMNS[5:-1] keys and "night"
    # {"period_start", "kind" (estimate or check), "reference_run_id", "content"}: see label_estimate_rows
    estimates: list[dict[str, Any]] = field(default_factory=list)


def record_monitoring(trail_path: Path, record: MonitoringRecord) -> dict[str, Any]:
    """Append the run's period cubes (superseding older versions), night rows and alerts in one transaction.

    Returns the stored periods' seq and version, and the counts written.
    """
    path = Path(trail_path)
    key = trail_key()
    label = KEYED if key else UNKEYED
    recorded_at = datetime.now(UTC).isoformat()
    stored: list[dict[str, Any]] = []
    # What is new is decided here, under the write lock: a second run of the same night that computed while the
    # first recorded finds the first's rows and stores nothing new, as when the two run one after the other.
    with locked_trail(path, write=True) as con, trail_transaction(con, path):
        check_trail_key(con, key, path, action="record monitoring runs in it")
        for period in record.periods:
            if not _period_stored(con, record.model_name, period):
                stored.append(_append_period(con, key, label, recorded_at, record, period))
        for night in record.nights:
            content = [record.run_id, record.model_name, str(night["night"])]
            content += [canonical(night["windows"]), canonical(night["observations"])]
            if stored or not _night_stored(con, content[1:]):
                append_chained_row(con, key, "monitor_nights", NIGHT_COLUMNS, [recorded_at, *content, label])
        for alert in record.alerts:
            if _alert_stored(con, record.model_name, alert):
                continue
            values = [alert[name] for name in ("stream", "metric", "slicing", "group")]
            values += [float(alert["statistic"]), float(alert["threshold"]), float(alert["change"]), alert["detail"]]
            content = [recorded_at, record.run_id, record.model_name, str(alert["night"]), *values, label]
            append_chained_row(con, key, "drift_alerts", ALERT_COLUMNS, content)
        for row in record.estimates:
            if row["kind"] == "check" and _checked(con, record.model_name, str(row["period_start"])):
                continue  # a period's estimates are checked once, when its labels first arrive
            estimate: list[Any] = [recorded_at, record.run_id, record.model_name, str(row["period_start"])]
            estimate += [row["kind"], row.get("reference_run_id"), canonical(row["content"]), label]
            append_chained_row(con, key, "label_estimates", ESTIMATE_COLUMNS, estimate)
    return {"trail": str(path), "periods": stored, "nights": len(record.nights), "alerts": len(record.alerts)}


def _period_stored(con: duckdb.DuckDBPyConnection, model_name: str, period: PeriodCube) -> bool:
    """Whether the period's current stored cube is this one (same rows, same cells): nothing new to store."""
    if not has_table(con, "period_cubes"):
        return False
    current = con.execute(
        "select rows, cube from period_cubes where model_name = $m and period_start = $s and status = 'current'",
        {"m": model_name, "s": period.start.isoformat()},
    ).fetchall()
    return bool(current) and current[0] == (period.rows, canonical(cube_record(period.cube)))


def _night_stored(con: duckdb.DuckDBPyConnection, content: list[str]) -> bool:
    """Whether the model's latest row for the night holds these windows and observations already."""
    if not has_table(con, "monitor_nights"):
        return False
    latest = con.execute(
        "select windows, observations from monitor_nights where model_name = ? and night = ? order by seq desc limit 1",
        content[:2],
    ).fetchall()
    return bool(latest) and list(latest[0]) == content[2:]


def _checked(con: duckdb.DuckDBPyConnection, model_name: str, period_start: str) -> bool:
    """Whether the trail holds a check of the period's estimates already."""
    if not has_table(con, "label_estimates"):
        return False
    found = con.execute(
        "select 1 from label_estimates where model_name = ? and period_start = ? and kind = 'check'",
        [model_name, period_start],
    ).fetchall()
    return bool(found)


def label_estimate_rows(trail_path: Path, model_name: str) -> list[dict[str, Any]]:
    """The model's estimate and check rows, oldest first: ``period_start``, ``kind``, ``run_id``,
    ``reference_run_id``, ``content`` (the period's estimated results; or the check: estimates against the
    measured values, covered or not)."""
    if not _readable(trail_path):
        return []
    with locked_trail(Path(trail_path), write=False) as con:
        if not has_table(con, "label_estimates"):
            return []
        rows = con.execute(
            "select period_start, kind, run_id, reference_run_id, content from label_estimates "
            "where model_name = ? order by seq",
            [model_name],
        ).fetchall()
    names = ("period_start", "kind", "run_id", "reference_run_id")
    return [dict(zip(names, row[:4], strict=True)) | {"content": json.loads(row[4])} for row in rows]


def _alert_stored(con: duckdb.DuckDBPyConnection, model_name: str, alert: dict[str, Any]) -> bool:
    """Whether the trail holds this alert (model, night, metric, slicing, group) already."""
    if not has_table(con, "drift_alerts"):
        return False
    found = con.execute(
        "select 1 from drift_alerts where model_name = ? and night = ? and metric = ? and slicing = ? and grp = ?",
        [model_name, str(alert["night"]), alert["metric"], alert["slicing"], alert["group"]],
    ).fetchall()
    return bool(found)


def _append_period(
    con: duckdb.DuckDBPyConnection,
    key: bytes | None,
    label: str,
    recorded_at: str,
    record: MonitoringRecord,
    period: PeriodCube,
) -> dict[str, Any]:
    """One period cube as the next version of its period; the current one (if any) becomes superseded."""
    current = con.execute(
        "select seq, version from period_cubes where model_name = $m and period_start = $s and status = 'current'",
        {"m": record.model_name, "s": period.start.isoformat()},
    ).fetchall()
    supersedes = current[0][1] if current else None
    version = (supersedes or 0) + 1
    content: list[Any] = [recorded_at, record.run_id, record.model_name, period.start.isoformat()]
    content += [period.end.isoformat()]
    content += [version, supersedes, period.rows, period.labelled_rows, canonical(record.input_sha256)]
    content += [canonical(cube_record(period.cube)), label]
    seq, _ = append_chained_row(con, key, "period_cubes", PERIOD_CUBE_COLUMNS, content, status="current")
    if current:
        con.execute(
            "update period_cubes set status = 'superseded', superseded_by = ? where seq = ?", [seq, current[0][0]]
        )
    return {"start": period.start.isoformat(), "version": version, "seq": seq, "supersedes": supersedes}


def _readable(trail_path: Path) -> bool:
    return Path(trail_path).exists()


def current_period_cubes(
    trail_path: Path, model_name: str, *, start: date | None = None, end: date | None = None
) -> list[PeriodCube]:
    """The model's current period cubes (superseded versions left out) from ``start`` to ``end``, oldest first."""
    if not _readable(trail_path):
        return []
    with locked_trail(Path(trail_path), write=False) as con:
        if not has_table(con, "period_cubes"):
            return []
        rows = con.execute(
            "select seq, period_start, period_end, version, rows, labelled_rows, cube from period_cubes "
            "where model_name = $m and status = 'current' and ($s is null or period_start >= $s) "
            "and ($e is null or period_start <= $e) order by period_start",
            {"m": model_name, "s": start.isoformat() if start else None, "e": end.isoformat() if end else None},
        ).fetchall()
    return [
        PeriodCube(
            start=date.fromisoformat(r[1]),
            end=date.fromisoformat(r[2]),
            cube=cube_from_record(json.loads(r[6])),
            rows=int(r[4]),
            labelled_rows=int(r[5]),
            version=int(r[3]),
            seq=int(r[0]),
        )
        for r in rows
    ]


def night_observations_history(trail_path: Path, model_name: str) -> dict[str, list[dict[str, Any]]]:
    """Per night (ISO date), the observations its latest ``monitor_nights`` row holds (a night re-observed
    after late labels replaces its earlier observations)."""
    if not _readable(trail_path):
        return {}
    with locked_trail(Path(trail_path), write=False) as con:
        if not has_table(con, "monitor_nights"):
            return {}
        rows = con.execute(
            "select night, observations from monitor_nights where model_name = ? order by seq", [model_name]
        ).fetchall()
    return {str(night): json.loads(observations) for night, observations in rows}


def baseline_audit_cells(trail_path: Path, model_name: str, run_id: str | None) -> tuple[str, list[dict[str, Any]]]:
    """The cube cells the trail recorded with audit run ``run_id`` (default: the model's first recorded audit).

    Raises TrailError (exit 2) when there is no such audit: the fix is to audit the model first, or to name
    another baseline.
    """
    where = f"in {trail_path}"
    if not _readable(trail_path):
        raise TrailError(
            f"no audit trail at {trail_path}, so no deployment audit to compare with; run `fairgate audit` for "
            "the model first (same trail), or set monitoring.baseline to a reference_window"
        )
    with locked_trail(Path(trail_path), write=False) as con:
        if run_id is None:
            found = con.execute(
                "select r.run_id, c.cells from runs r join cubes c using (run_id) where r.model_name = ? "
                "order by r.seq limit 1",
                [model_name],
            ).fetchall()
            missing = f"no audit of model {model_name!r} is recorded {where}"
        else:
            found = con.execute(
                "select r.run_id, c.cells from runs r join cubes c using (run_id) where r.run_id = ?", [run_id]
            ).fetchall()
            missing = f"monitoring.baseline.run_id {run_id!r} is not an audit recorded {where}"
    if not found:
        raise TrailError(
            f"{missing}; run `fairgate audit` for the model first (same trail), name a recorded run "
            "(`fairgate trail list`), or set monitoring.baseline to a reference_window"
        )
    return str(found[0][0]), json.loads(found[0][1])


def monitoring_history(trail_path: Path, model_name: str) -> dict[str, Any]:
    """The model's monitored nights (windows per night, latest row per night) and its alerts, for display."""
    with locked_trail(Path(trail_path), write=False) as con:
        if not has_table(con, "monitor_nights"):
            return {"nights": [], "alerts": []}
        nights = con.execute(
            "select night, run_id, windows from monitor_nights where model_name = ? order by seq", [model_name]
        ).fetchall()
        alerts = con.execute(
            "select night, metric, slicing, grp, statistic, threshold, change, detail, run_id from drift_alerts "
            "where model_name = ? order by seq",
            [model_name],
        ).fetchall()
    latest = {str(n): {"night": str(n), "run_id": r, "windows": json.loads(w)} for n, r, w in nights}
    names = ["night", "metric", "slicing", "group", "statistic", "threshold", "change", "detail", "run_id"]
    return {
        "nights": [latest[n] for n in sorted(latest) if latest[n]["windows"]],
        "alerts": [dict(zip(names, row, strict=True)) for row in alerts],
    }
