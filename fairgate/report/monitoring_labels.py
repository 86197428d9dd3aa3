"""The monitoring report's labels section: rows without labels yet, and earlier estimates against their labels.

Windows over rows without labels yet (estimated results marked apart) and earlier estimates checked against their
labels with the running coverage.

Built from the monitoring document's ``estimated_windows``, ``label_free`` and ``estimate_checks``; rendered by
``reports/partials/monitoring_labels.html.j2`` after the monitoring section.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fairgate.monitoring.headline import window_words
from fairgate.report.format import fmt, interval_text, metric_label

#: The status words of an estimated result: never the measured ones, so they cannot be read as measured.
ESTIMATED_STATUS = {"pass": "EST. PASS", "fail": "EST. FAIL", "inconclusive": "EST. INCONCLUSIVE"}


@dataclass(frozen=True)
class EstimatedRow:
    """One result of a window over rows without labels yet: measured (label-free) or estimated."""

    window: str
    metric_label: str
    slicing_label: str
    value_text: str
    ci_text: str
    status: str
    estimated: bool
    note: str


@dataclass(frozen=True)
class CheckRow:
    """One earlier estimate against the value the period's labels gave."""

    period: str
    metric_label: str
    slicing_label: str
    estimate_text: str
    ci_text: str
    measured_text: str
    covered: bool


@dataclass(frozen=True)
class LabelsView:
    """What the labels section shows; ``shown`` is False when the night has neither estimates nor checks."""

    shown: bool
    rows: list[EstimatedRow]
    verdicts: list[str]  # each estimated window's verdict in words
    method_text: str
    reference_text: str
    rule_text: str
    checks: list[CheckRow]
    coverage_text: str


def build_labels_view(document: Mapping[str, Any]) -> LabelsView:
    """The labels section of one monitoring document."""
    windows = list(document.get("estimated_windows") or [])
    label_free = document.get("label_free") or {}
    checks = document.get("estimate_checks") or {}
    level = float(document.get("confidence_level") or 0.95)
    rows = [_row(w, r) for w in windows for r in w.get("results") or []]
    judged = label_free.get("estimated_results") == "judge"
    rule = (
        "Estimated results count in the windows' verdict and the exit code (policy labels.estimated_results: judge)."
        if judged
        else "Estimated results are shown apart and never counted in a verdict, the exit code or an alarm (policy "
        "labels.estimated_results: report_only); the measured label-free results of these rows count as usual."
    )
    reference = label_free.get("reference_run_id")
    reference_text = (
        f"Scores calibrated per group on the labelled audit {reference}."
        if reference
        else str(label_free.get("reference_note") or "")
    )
    return LabelsView(
        shown=bool(windows or checks),
        rows=rows,
        verdicts=[_verdict(w) for w in windows if not w.get("same_as")],
        method_text=str(label_free.get("method_text") or ""),
        reference_text=reference_text,
        rule_text=rule if windows else "",
        checks=[_check(c, r) for c in checks.get("checks") or [] for r in c.get("results") or []],
        coverage_text=_coverage_text(checks.get("coverage") or {}, checks.get("n_checks") or 0, level),
    )


def _title(window: Mapping[str, Any]) -> str:
    same = f" = {window_words(str(window['same_as']))}" if window.get("same_as") else ""
    return f"{window_words(str(window['window']))}{same}"


def _row(window: Mapping[str, Any], result: Mapping[str, Any]) -> EstimatedRow:
    estimated = bool(result.get("estimated"))
    status = str(result.get("status") or "–")
    reasons = result.get("estimate_reasons") or {}
    note = "; ".join(why if group in why else f"{group}: {why}" for group, why in reasons.items())
    if result.get("value") is None and not note:
        note = str(result.get("status_reason") or result.get("reason") or "")
    return EstimatedRow(
        window=_title(window),
        metric_label=metric_label(result["metric"]),
        slicing_label=", ".join(result.get("slicing") or []) or "overall",
        value_text=fmt(result.get("value")),
        ci_text=interval_text(result.get("ci_low"), result.get("ci_high")),
        status=ESTIMATED_STATUS.get(status, status) if estimated else status,
        estimated=estimated,
        note=note,
    )


def _verdict(window: Mapping[str, Any]) -> str:
    verdict = str(window.get("verdict") or "nothing judged").upper()
    return f"{_title(window)} ({window['periods']} period(s), {window['rows']:,} rows without labels yet): {verdict}"


def _check(check: Mapping[str, Any], result: Mapping[str, Any]) -> CheckRow:
    return CheckRow(
        period=str(check.get("period_start")),
        metric_label=metric_label(result["metric"]),
        slicing_label=", ".join(result.get("slicing") or []) or "overall",
        estimate_text=fmt(result.get("value")),
        ci_text=interval_text(result.get("ci_low"), result.get("ci_high")),
        measured_text=fmt(result.get("measured")),
        covered=bool(result.get("covered")),
    )


def _coverage_text(coverage: Mapping[str, Any], n_checks: int, level: float) -> str:
    """The running coverage in words: covered / compared, the share and its Wilson interval."""
    compared = int(coverage.get("n_compared") or 0)
    if not compared:
        return ""
    share = f"{fmt(coverage.get('rate'))}, {level:.0%} Wilson interval "
    share += interval_text(coverage.get("ci_low"), coverage.get("ci_high"))
    return (
        f"Running coverage of the estimates: {coverage.get('n_covered')} of {compared} intervals held the value the "
        f"labels later gave ({share}), over {n_checks} period(s) checked; the intervals are {level:.0%} intervals."
    )
