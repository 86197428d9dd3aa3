"""``fairgate explore``'s pages as data: what each template shows, read from the trail (read-only) and the report
folder. Numbers go through the report's one formatter (``fairgate.report.format``: values to three decimals,
interval ends rounded outward and joined "a–b", metric names in words); nothing here writes anything."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fairgate.engine.labels import slicing_label
from fairgate.report.format import STATUS_MARKS, fmt, fmt_count, interval_text, metric_label
from tasks.outputs import output_stem
from tasks.serve.guard import served_file
from tasks.serve.trend_svg import TrendPoint, trend_svg
from tasks.store import list_runs, metric_series, show_run
from tasks.store.monitor import monitoring_history

REPORT_FILES = (
    ("report", ".html"),
    ("explorer", ".explorer.html"),
    ("PDF", ".pdf"),
    ("audit document (JSON)", ".json"),
)


class NotFound(LookupError):
    """A run, model or metric the trail does not hold (a 404 page, with the message)."""


def index_context(trail: Path) -> dict[str, Any]:
    """The models (in the order first recorded) and their runs, newest first."""
    models: dict[str, list[dict[str, Any]]] = {}
    for run in list_runs(trail):
        models.setdefault(str(run["model_name"] or "model"), []).append(run)
    return {"models": [{"name": name, "runs": runs[::-1]} for name, runs in models.items()]}


def _run_record(trail: Path, run_id: str) -> dict[str, Any]:
    if not any(run["run_id"] == run_id for run in list_runs(trail)):
        raise NotFound(f"no run {run_id!r} in the trail; the first page lists the recorded runs")
    return show_run(trail, run_id)


def result_row(result: Mapping[str, Any]) -> dict[str, Any]:
    """One judged result as a table row: the metric in words, the value, its interval "a–b", the status."""
    status = str(result.get("status") or "")
    return {
        "metric": result.get("metric"),
        "label": metric_label(str(result.get("metric"))),
        "slicing": slicing_label(result.get("slicing") or []),
        "value": fmt(result.get("value")),
        "interval": interval_text(result.get("ci_low"), result.get("ci_high")),
        "threshold": fmt(result.get("threshold")),
        "status": status,
        "mark": STATUS_MARKS.get(status, status.upper()),
    }


def report_files(reports: Path, document: Mapping[str, Any]) -> list[dict[str, str]]:
    """The run's report files found in the report folder (by the stem every output of the run shares)."""
    stem = output_stem(document)
    found = []
    for kind, suffix in REPORT_FILES:
        if served_file(reports, stem + suffix) is not None:
            found.append({"kind": kind, "name": stem + suffix})
    return found


def run_context(trail: Path, reports: Path, run_id: str) -> dict[str, Any]:
    """One audit: its record, judged results and report files."""
    record = _run_record(trail, run_id)
    document = record.get("document") or {}
    return {
        "run": record,
        "model": record.get("model_name"),
        "rows": fmt_count(record.get("n_rows")),
        "results": [result_row(r) for r in document.get("results", [])],
        "files": report_files(reports, document),
        "others": [
            r for r in list_runs(trail) if r["model_name"] == record.get("model_name") and r["run_id"] != run_id
        ],
    }


def compare_context(trail: Path, first: str, second: str) -> dict[str, Any]:
    """Two runs side by side: every (metric, slicing) either judged, with both values and the change."""
    a, b = _run_record(trail, first), _run_record(trail, second)
    by_key: dict[tuple[str, str], dict[str, Any]] = {}
    for side, record in (("a", a), ("b", b)):
        for result in (record.get("document") or {}).get("results", []):
            row = result_row(result)
            entry = by_key.setdefault(
                (row["metric"], row["slicing"]), {"label": row["label"], "slicing": row["slicing"]}
            )
            entry[side] = row
            entry[f"{side}_value"] = result.get("value")
    rows = []
    for entry in by_key.values():
        va, vb = entry.pop("a_value", None), entry.pop("b_value", None)
        defined = va is not None and vb is not None and math.isfinite(va) and math.isfinite(vb)
        entry["change"] = fmt(vb - va) if defined else "–"
        rows.append(entry)
    return {"a": a, "b": b, "rows": rows}


def trend_context(trail: Path, model: str, metric: str) -> dict[str, Any]:
    """One metric's recorded values across the model's runs: the SVG chart and its table."""
    rows = metric_series(trail, model, metric)
    if not rows:
        raise NotFound(f"no recorded result of {metric!r} for model {model!r} in the trail")
    runs = list(dict.fromkeys(row["seq"] for row in rows))
    position = {seq: i for i, seq in enumerate(runs)}
    thresholds: list[float | None] = [None] * len(runs)
    series: dict[str, list[TrendPoint]] = {}
    for row in rows:
        label = slicing_label(row["slicing"])
        thresholds[position[row["seq"]]] = row["threshold"]
        point = TrendPoint(position[row["seq"]], row["value"], row["ci_low"], row["ci_high"], row["status"] == "fail")
        series.setdefault(label, []).append(point)
    title = f"{metric_label(metric)} across the runs of {model}"
    return {
        "title": title,
        "model": model,
        "metric": metric,
        "label": metric_label(metric),
        "svg": trend_svg(title, [str(seq) for seq in runs], series, thresholds),
        "rows": [row | {"slicing_label": slicing_label(row["slicing"])} | result_row(row) for row in rows],
    }


def nights_context(trail: Path, model: str) -> dict[str, Any]:
    """The model's monitored nights: each night's windows and results, and the drift alerts raised."""
    history = monitoring_history(trail, model)
    nights = []
    for night in history["nights"][::-1]:
        rows = []
        for window in night["windows"]:
            label = f"{window.get('window')} (no labels yet)" if window.get("estimated") else window.get("window")
            for result in window.get("results", []):
                change = result.get("change")
                estimated = bool(result.get("estimated"))
                rows.append(result_row(result) | {"window": label, "change": fmt(change), "estimated": estimated})
        nights.append({"night": night["night"], "run_id": night["run_id"], "rows": rows})
    return {"model": model, "nights": nights, "alerts": history["alerts"]}
