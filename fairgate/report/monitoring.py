"""The monitoring report's view model: one night's monitoring document as what the page shows (no Jinja here).

Built from the JSON document ``fairgate monitor run`` writes (``fairgate.document.monitoring``), read as a plain
mapping so the report renders any document of that shape. Two kinds of small multiples, in the style of the
audit report's trend section:

* per judged metric, its value on each slicing per window (7, 30, 90 days, since deployment), with its interval,
  the threshold and the baseline's value: where the metric stands;
* per metric and slicing, the drift detector's streams (one per group against the reference): each night's
  change against the baseline with its band, and the CUSUM statistic as a share of its threshold, alerts
  marked: whether it moved, night by night.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from fairgate.engine.stats import z_value
from fairgate.monitoring.headline import headline
from fairgate.policy.outcomes import RATE_ABBREVIATIONS
from fairgate.report.format import fmt, fmt_count, fmt_p, fmt_share, fmt_signed, interval_text, metric_label
from fairgate.report.model import KeyValue, ReportFrame
from fairgate.report.monitoring_frame import monitoring_frame
from fairgate.report.monitoring_skipped import SkippedStreams, skipped_streams
from fairgate.report.provenance import run_record

MAX_LINES = 6  # series per chart; the tables list the rest
RATE_SHORT = {**RATE_ABBREVIATIONS, "selection_rate": "selection rate"}  # the policy's table, lower case mid-text
MAX_STREAMS_LISTED = 20  # stream rows in the PDF (the HTML lists all)
WINDOW_LABELS = {"since_deployment": "since deployment"}


@dataclass(frozen=True)
class WindowMark:
    """One window's value of one slicing (rounded), with its interval and judgement."""

    value: float | None
    ci_low: float | None
    ci_high: float | None
    failed: bool
    significant: bool  # the change against the baseline is significant (Holm)


@dataclass(frozen=True)
class WindowLine:
    """One slicing's values over the windows (None where the window has no value) and its baseline value."""

    slicing_label: str
    colour: int
    marks: list[WindowMark | None]
    baseline: float | None
    alerted: bool  # a stream of this metric and slicing raised an alert tonight


@dataclass(frozen=True)
class WindowPanel:
    """The small multiple of one judged metric over the windows."""

    key: str
    metric: str
    metric_label: str
    higher_is_better: bool
    window_labels: list[str]
    threshold: float | None
    lines: list[WindowLine]
    n_hidden: int


@dataclass(frozen=True)
class StreamSeries:
    """One detector stream's nights: change against the baseline with its band, and statistic / threshold."""

    stream: str
    group: str
    colour: int
    nights: list[str]
    estimate: list[float]
    band_low: list[float]
    band_high: list[float]
    load: list[float]  # statistic / threshold: the stream alerts at 1
    alert_nights: list[int]  # indexes into nights
    threshold: float
    predicted_delay: float | None
    peak: float  # the largest load: how near the stream came to alerting


@dataclass(frozen=True)
class StreamRow:
    """One detector stream in the table under the charts."""

    metric_label: str
    slicing_label: str
    group: str
    threshold_text: str
    peak: float
    peak_text: str
    delay_text: str
    alerted: bool


@dataclass(frozen=True)
class NightPanel:
    """The streams of one metric and slicing (the most loaded first; at most ``MAX_LINES`` drawn)."""

    key: str
    metric_label: str
    slicing_label: str
    series: list[StreamSeries]
    n_hidden: int
    alerted: bool


@dataclass(frozen=True)
class AlertRow:
    """One alert raised tonight."""

    night: str
    metric_label: str
    slicing_label: str
    group: str
    change_text: str
    statistic_text: str
    detail: str


@dataclass(frozen=True)
class WindowRow:
    """One judged result of one window against the baseline (the table under the charts)."""

    window: str
    metric_label: str
    slicing_label: str
    value_text: str
    ci_text: str
    decision_text: str  # the gate's interval the status was decided on
    baseline_text: str
    change_text: str
    p_text: str
    significant: bool
    status: str
    reason: str
    status_reason: str  # the gate's words for the status (the HTML shows it)


@dataclass(frozen=True)
class MonitoringView:
    """The monitoring section: a sentence, alerts, windows charts and table, detector charts and method."""

    title: str
    model_text: str
    night: str
    run_id: str
    created_at: str
    sentence: str  # the night's headline: windows' verdict · drift · ongoing episodes
    badge: str
    badge_class: str  # fail, pass or note (no evidence either way)
    episodes: list[str]  # drift episodes still open tonight
    underpowered: list[str]  # alert rules too weak for their min_change, with the volume they need
    baseline_text: str
    confidence_level_text: str
    alerts: list[AlertRow]
    window_panels: list[WindowPanel]
    window_rows: list[WindowRow]
    night_panels: list[NightPanel]
    stream_rows: list[StreamRow]  # every stream, alerted and most loaded first
    n_stream_rows_listed: int  # rows the PDF lists (alerted, or at least half way to the threshold; at most 20)
    legend: list[str]  # slicings in colour order, for the window charts
    method: str
    rules: list[str]
    skipped: SkippedStreams  # the streams left out tonight, one line per reason
    notes: list[str]
    stored: list[str]
    record: list[KeyValue]  # the run's identity and the policy's hash, above the sign-off
    frame: ReportFrame | None = None  # what to do, not judged, group sizes, model card, command, glossary


def build_monitoring_view(document: Mapping[str, Any]) -> MonitoringView:
    """The view of one monitoring document (``fairgate.document.monitoring.MonitoringDocument`` as JSON)."""
    model = document.get("model") or {}
    level = float(document.get("confidence_level") or 0.95)
    alerts = list(document.get("alerts") or [])
    alerted = {(a["metric"], a["slicing"]) for a in alerts}
    windows = list(document.get("windows") or [])
    legend = _slicings(windows)
    head = document.get("headline") or headline(
        windows, alerts, list(document.get("episodes") or []), watching=document.get("detector") is not None
    )
    detector = document.get("detector") or {}
    night_panels = _night_panels(detector.get("streams") or [], level, {a["stream"]: a for a in alerts}, alerts)
    streams = _stream_rows(detector.get("streams") or [], {a["stream"] for a in alerts})
    listed = [r for r in streams if r.alerted or r.peak >= 0.5][:MAX_STREAMS_LISTED]
    badge, sentence = str(head["badge"]), f"Night {document.get('night', '')}. {head['text']}"
    return MonitoringView(
        title=f"Fairness monitoring: {model.get('name', 'model')} {model.get('version', '')}".strip(),
        model_text=f"{model.get('name', '')} version {model.get('version', '')}",
        night=str(document.get("night", "")),
        run_id=str(document.get("run_id", "")),
        created_at=str(document.get("created_at", "")),
        sentence=sentence,
        badge=badge,
        badge_class="pass" if badge == "PASS" else ("note" if badge == "NO EVIDENCE" else "fail"),
        episodes=[_episode_text(e) for e in document.get("episodes") or []],
        underpowered=[str(rule["detail"]) for rule in document.get("underpowered") or []],
        baseline_text=_baseline_text(document.get("baseline")),
        confidence_level_text=f"{level:.0%}",
        alerts=[_alert_row(a) for a in alerts],
        window_panels=_window_panels(windows, legend, alerted),
        window_rows=[_window_row(w, r) for w in windows for r in w.get("results") or []],
        night_panels=night_panels,
        stream_rows=streams,
        n_stream_rows_listed=len(listed),
        legend=legend,
        method=str(detector.get("method", "")),
        rules=[_rule_text(rule) for rule in detector.get("rules") or []],
        skipped=skipped_streams([str(item) for item in detector.get("skipped") or []]),
        notes=list(document.get("notes") or []),
        stored=[_stored_text(p) for p in document.get("stored") or []],
        record=run_record(document),
        frame=monitoring_frame(document, [window_label(str(w.get("window"))) for w in windows], badge, sentence),
    )


def window_label(window: str) -> str:
    """A window's label: "7 days", or "since deployment"."""
    return WINDOW_LABELS.get(window, f"{window} days")


def _episode_text(episode: Mapping[str, Any]) -> str:
    verb = "rose" if episode.get("direction") == "up" else "fell"
    rate = RATE_SHORT.get(str(episode.get("component")), str(episode.get("component") or ""))
    return (
        f"{metric_label(str(episode['metric']))} on {episode['slicing']}: {episode['group']}'s {rate} gap {verb} by "
        f"{fmt(abs(float(episode['change'])))}; alerted on {episode['since']}, still open on {episode['last_night']} "
        f"({int(episode.get('confirmations') or 0)} confirming alarm(s) since)"
    )


def _baseline_text(baseline: Mapping[str, Any] | None) -> str:
    if not baseline:
        return "No baseline yet: the windows are shown without a change against it."
    kind = "the deployment audit" if baseline.get("kind") == "deployment_audit" else "the reference window"
    return f"Baseline: {kind} ({baseline.get('label', '')}, {fmt_count(baseline.get('rows') or 0)} rows)."


def _slicings(windows: Sequence[Mapping[str, Any]]) -> list[str]:
    seen: dict[str, None] = {}
    for window in windows:
        for result in window.get("results") or []:
            seen.setdefault(_slicing(result.get("slicing")), None)
    return list(seen)


def _slicing(slicing: Any) -> str:
    if isinstance(slicing, str):
        return slicing
    return " × ".join(slicing) if slicing else "whole population"


def _window_panels(
    windows: Sequence[Mapping[str, Any]], legend: list[str], alerted: set[tuple[str, str]]
) -> list[WindowPanel]:
    labels = [window_label(str(w.get("window"))) for w in windows]
    metrics: dict[str, dict[str, Any]] = {}
    for w_index, window in enumerate(windows):
        for result in window.get("results") or []:
            entry = metrics.setdefault(result["metric"], {"direction": result.get("direction"), "lines": {}})
            if entry.get("threshold") is None:
                entry["threshold"] = result.get("threshold")
            line = entry["lines"].setdefault(_slicing(result.get("slicing")), [None] * len(windows))
            line[w_index] = result
    panels = []
    for metric, entry in metrics.items():
        lines = []
        for slicing, results in entry["lines"].items():
            baseline = next(
                (r.get("baseline_value") for r in results if r and r.get("baseline_value") is not None), None
            )
            marks = [_mark(r) for r in results]
            lines.append(WindowLine(slicing, legend.index(slicing), marks, baseline, (metric, slicing) in alerted))
        shown = sorted(lines, key=lambda line: (not line.alerted, line.colour))[:MAX_LINES]
        panels.append(
            WindowPanel(
                key=metric,
                metric=metric,
                metric_label=metric_label(metric),
                higher_is_better=entry["direction"] == "higher_is_better",
                window_labels=labels,
                threshold=entry.get("threshold"),
                lines=sorted(shown, key=lambda line: line.colour),
                n_hidden=len(lines) - len(shown),
            )
        )
    return panels


def _mark(result: Mapping[str, Any] | None) -> WindowMark | None:
    if result is None or result.get("value") is None:
        return None
    return WindowMark(
        value=result["value"],
        ci_low=result.get("ci_low"),
        ci_high=result.get("ci_high"),
        failed=result.get("status") == "fail",
        significant=bool(result.get("significant")),
    )


def _window_title(window: Mapping[str, Any]) -> str:
    """A window's label, marked when it sums the same periods as an earlier one (the same numbers)."""
    label = window_label(str(window.get("window")))
    same = window.get("same_as")
    return f"{label} (= {window_label(str(same))})" if same else label


def _interval(low: Any, high: Any) -> str:
    return interval_text(low, high) or "–"


def _window_row(window: Mapping[str, Any], result: Mapping[str, Any]) -> WindowRow:
    low, high = result.get("ci_low"), result.get("ci_high")
    change = result.get("change")
    p = result.get("p_value")
    return WindowRow(
        window=_window_title(window),
        metric_label=metric_label(result["metric"]),
        slicing_label=_slicing(result.get("slicing")),
        value_text=fmt(result.get("value")),
        ci_text=_interval(low, high),
        decision_text=_interval(result.get("decision_ci_low"), result.get("decision_ci_high")),
        baseline_text=fmt(result.get("baseline_value")),
        change_text=_signed(change),
        p_text=fmt_p(p),
        significant=bool(result.get("significant")),
        status=str(result.get("status") or "–"),
        reason=str(result.get("reason") or ""),
        status_reason=str(result.get("status_reason") or ""),
    )


def _night_panels(
    streams: Sequence[Mapping[str, Any]],
    level: float,
    alerts_by_stream: Mapping[str, Mapping[str, Any]],
    alerts: Sequence[Mapping[str, Any]],
) -> list[NightPanel]:
    z = z_value(level)
    alert_nights: dict[str, set[str]] = {}
    for alert in alerts:
        alert_nights.setdefault(alert["stream"], set()).add(alert["night"])
    grouped: dict[tuple[str, str], list[StreamSeries]] = {}
    rates: dict[tuple[str, str], set[str]] = {}
    for stream in streams:
        rates.setdefault((stream["metric"], stream["slicing"]), set()).add(str(stream["stream"]).split(" · ")[-1])
    for stream in streams:
        threshold = float(stream["threshold"])
        nights = [str(n) for n in stream.get("nights") or []]
        estimate = [float(v) for v in stream.get("estimate") or []]
        se = [float(v) for v in stream.get("standard_error") or []]
        load = [float(s) / threshold if threshold > 0 else 0.0 for s in stream.get("statistic") or []]
        marked = alert_nights.get(stream["stream"], set())
        # The stream's earlier alerts (before tonight) show where its statistic reached 1 and restarted.
        hits = [i for i, (n, share) in enumerate(zip(nights, load, strict=True)) if n in marked or share >= 1.0]
        delay = stream.get("predicted_delay")
        grouped.setdefault((stream["metric"], stream["slicing"]), []).append(
            StreamSeries(
                stream=stream["stream"],
                # The rate is named only where a metric watches several (equalized odds: TPR and FPR).
                group=_group_text(stream, rate=len(rates[(stream["metric"], stream["slicing"])]) > 1),
                colour=0,
                nights=nights,
                estimate=estimate,
                band_low=[e - z * s for e, s in zip(estimate, se, strict=True)],
                band_high=[e + z * s for e, s in zip(estimate, se, strict=True)],
                load=load,
                alert_nights=hits,
                threshold=threshold,
                predicted_delay=None if delay is None or not math.isfinite(delay) else float(delay),
                peak=max(load, default=0.0),
            )
        )
    panels = []
    for (metric, slicing), series in grouped.items():
        ranked = sorted(series, key=lambda s: (-(s.stream in alerts_by_stream), -s.peak, s.group))
        shown = [replace(s, colour=i) for i, s in enumerate(sorted(ranked[:MAX_LINES], key=lambda s: s.stream))]
        panels.append(
            NightPanel(
                key=f"{metric}:{slicing}",
                metric_label=metric_label(metric),
                slicing_label=slicing,
                series=shown,
                n_hidden=len(series) - len(shown),
                alerted=any(s.stream in alerts_by_stream for s in series),
            )
        )
    return sorted(panels, key=lambda p: (not p.alerted, p.key))


def _stream_rows(streams: Sequence[Mapping[str, Any]], alerted: set[str]) -> list[StreamRow]:
    rows = []
    for stream in streams:
        threshold = float(stream["threshold"])
        statistic = [float(v) for v in stream.get("statistic") or []]
        peak = max(statistic, default=0.0) / threshold if threshold > 0 else 0.0
        delay = stream.get("predicted_delay")
        rows.append(
            StreamRow(
                metric_label=metric_label(stream["metric"]),
                slicing_label=str(stream["slicing"]),
                group=_group_text(stream),
                threshold_text=fmt(threshold, 2),
                peak=peak,
                peak_text=fmt_share(peak),
                delay_text="beyond the horizon" if delay is None else f"{fmt(float(delay), 0)} nights",
                alerted=stream["stream"] in alerted,
            )
        )
    return sorted(rows, key=lambda r: (not r.alerted, -r.peak))


def _group_text(stream: Mapping[str, Any], *, rate: bool = True) -> str:
    # The stream key names the reference and the component rate: "metric · slicing · group vs ref · rate".
    parts = str(stream["stream"]).split(" · ")
    if len(parts) < 4:
        return str(stream["group"])
    return f"{parts[2]} ({RATE_SHORT.get(parts[3], parts[3])})" if rate else parts[2]


def _alert_row(alert: Mapping[str, Any]) -> AlertRow:
    return AlertRow(
        night=str(alert["night"]),
        metric_label=metric_label(alert["metric"]),
        slicing_label=str(alert["slicing"]),
        group=str(alert["group"]),
        change_text=_signed(alert.get("change")),
        statistic_text=f"{fmt(float(alert['statistic']), 2)} ≥ {fmt(float(alert['threshold']), 2)}",
        detail=str(alert.get("detail", "")),
    )


def _rule_text(rule: Mapping[str, Any]) -> str:
    slicing = rule.get("slicing")
    where = "every slicing" if not slicing else _slicing(slicing)
    return (
        f"{metric_label(str(rule.get('metric')))} on {where}: alert on a change of {rule.get('min_change')} "
        f"with at most {rule.get('false_alarm_rate')} chance of any false alarm over "
        f"{rule.get('horizon_nights')} nights"
    )


def _stored_text(period: Mapping[str, Any]) -> str:
    what = "unchanged" if period.get("unchanged") else f"version {period.get('version')}"
    if period.get("supersedes"):
        what += f", supersedes version {period['supersedes']} (late labels)"
    return (
        f"{period.get('start')} to {period.get('end')}: {int(period.get('labelled_rows') or 0):,} labelled of "
        f"{int(period.get('rows') or 0):,} rows ({what})"
    )


def _signed(value: Any) -> str:
    return fmt_signed(None if value is None else float(value))
