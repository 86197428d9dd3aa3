"""The trend section's view: each judged metric over the model's recent runs, and the changes since the last.

Built from the document's ``trend`` block (:func:`fairgate.monitoring.build_trend`). The values are the judged
summaries (a difference or ratio over groups), never a group's own cell, so nothing here needs suppression.
"""

from __future__ import annotations

import dataclasses

from fairgate.document.trend import Trend, TrendChange, TrendRun, TrendSeries
from fairgate.monitoring.trend import FIRST_RUN
from fairgate.report.format import (
    STATUS_MARKS,
    fmt,
    fmt_p,
    fmt_signed,
    interval_text,
    metric_label,
    round_number,
    slicing_key,
)
from fairgate.report.trend_model import ChangeRow, TrendLine, TrendMark, TrendPanel, TrendRunRow, TrendView

#: Slicings drawn in one metric's chart; the table lists every change.
MAX_LINES = 6
#: Rows of the changes table in the PDF: the significant changes and changed statuses first (the HTML has all).
PDF_CHANGE_ROWS = 12


def trend_view(trend: Trend | None) -> TrendView | None:
    """The view of the document's trend block (None when the document has none)."""
    if trend is None:
        return None
    labels = [_run_label(run) for run in trend.runs]
    first = len(trend.runs) < 2
    changes = [_change_row(s, s.change) for s in trend.series if s.change is not None]
    changes.sort(key=lambda row: (not row.significant, not row.status_changed, not row.worse))
    if trend.same_data_as_previous:  # said once in the sentence, not on every row
        changes = [dataclasses.replace(row, note="") for row in changes]
    listed = sum(1 for row in changes if row.significant or row.status_changed)
    return TrendView(
        first_run=first,
        same_data=bool(trend.same_data_as_previous),
        sentence=_sentence(trend, first),
        note="" if trend.note in (None, FIRST_RUN) else str(trend.note),
        method=trend.method,
        runs=[_run_row(run, label) for run, label in zip(trend.runs, labels, strict=True)],
        panels=[] if first else _panels(trend, labels),
        changes=changes,
        n_significant=trend.n_significant,
        legend=list(dict.fromkeys(slicing_key(s.slicing) for s in trend.series)),
        n_changes_listed=min(listed, PDF_CHANGE_ROWS),
    )


def _run_label(run: TrendRun) -> str:
    return "now" if run.current else f"#{run.seq}"


def _run_row(run: TrendRun, label: str) -> TrendRunRow:
    return TrendRunRow(
        label="this run" if run.current else label,
        recorded_at=(run.recorded_at or "–")[:16].replace("T", " "),
        model_version=run.model_version or "–",
        verdict=(run.verdict or "–").upper(),
        run_id=run.run_id,
        current=run.current,
    )


def _sentence(trend: Trend, first: bool) -> str:
    if first:
        return f"This is the first audit of model {trend.model_name} in this trail: there is no trend to show yet."
    previous = trend.runs[-2]
    tested = sum(1 for s in trend.series if s.change is not None and s.change.tested)
    text = (
        f"{len(trend.runs)} audits of model {trend.model_name} in this trail, this one last. Since the previous "
        f"run (#{previous.seq}, {(previous.recorded_at or '')[:10]}, version {previous.model_version}), "
    )
    if trend.same_data_as_previous:
        return text + "the input files are identical (same sha256): the same sample, so no change is tested."
    return text + f"{trend.n_significant} of {tested} tested changes are significant."


def _panels(trend: Trend, labels: list[str]) -> list[TrendPanel]:
    index = {run.run_id: i for i, run in enumerate(trend.runs)}
    colours: dict[tuple[str, ...], int] = {}
    for series in trend.series:
        colours.setdefault(tuple(series.slicing), len(colours))
    by_metric: dict[str, list[TrendSeries]] = {}
    for series in trend.series:
        by_metric.setdefault(series.metric, []).append(series)
    panels = []
    for metric, all_series in by_metric.items():
        # Draw the slicings that matter most: a significant change, a failure now, then the policy's order.
        ranked = sorted(all_series, key=lambda s: (not _significant(s), s.points[-1].status != "fail"))
        chosen = {id(s) for s in ranked[:MAX_LINES]}
        shown = [s for s in all_series if id(s) in chosen]  # drawn in the slicings' order, like the legend
        thresholds: list[float | None] = [None] * len(labels)
        for series in shown:
            for point in series.points:
                thresholds[index[point.run_id]] = round_number(point.threshold)
        panels.append(
            TrendPanel(
                key=metric,
                metric_label=metric_label(metric),
                higher_is_better=all_series[0].direction == "higher_is_better",
                run_labels=labels,
                thresholds=thresholds,
                lines=[_line(series, index, len(labels), colours[tuple(series.slicing)]) for series in shown],
                n_hidden=len(all_series) - len(shown),
            )
        )
    return panels


def _significant(series: TrendSeries) -> bool:
    return series.change is not None and series.change.significant


def _line(series: TrendSeries, index: dict[str, int], n_runs: int, colour: int) -> TrendLine:
    marks: list[TrendMark | None] = [None] * n_runs
    for point in series.points:
        i = index[point.run_id]
        marks[i] = TrendMark(
            value=round_number(point.value),
            ci_low=round_number(point.ci_low),
            ci_high=round_number(point.ci_high),
            failed=point.status == "fail",
            current=i == n_runs - 1,
        )
    return TrendLine(slicing_key(series.slicing), colour, marks)


def _change_row(series: TrendSeries, change: TrendChange) -> ChangeRow:
    delta = change.delta
    higher = series.direction == "higher_is_better"
    worse = delta is not None and (delta < 0 if higher else delta > 0)
    before, after = _mark(change.previous_status), _mark(change.status)
    return ChangeRow(
        metric_label=metric_label(series.metric),
        slicing_label=slicing_key(series.slicing),
        previous_text=fmt(change.previous_value),
        value_text=fmt(change.value),
        delta_text=fmt_signed(delta),
        ci_text=interval_text(change.ci_low, change.ci_high),
        p_text=fmt_p(change.p_value_adjusted),
        tested=change.tested,
        significant=change.significant,
        worse=worse,
        status_text=after if before == after else f"{before} → {after}",
        status_changed=before != after,
        note=change.reason or "",
    )


def _mark(status: str | None) -> str:
    return STATUS_MARKS.get(status or "", "–")
