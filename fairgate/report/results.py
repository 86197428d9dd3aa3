"""Result rows: each judged policy result as the report shows it, with its gap, badge and reason."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import replace

from fairgate.document.document import AuditDocument
from fairgate.document.results import PolicyResult
from fairgate.engine.tasks import metric_units
from fairgate.policy.outcomes import Outcomes
from fairgate.report.format import (
    STATUS_MARKS,
    fmt,
    group_label,
    interval_text,
    policy_metric_label,
    round_number,
    slicing_key,
)
from fairgate.report.model import ResultRow
from fairgate.report.suppress import Suppression


def result_row(result: PolicyResult, suppression: Suppression, words: Outcomes | None = None) -> ResultRow:
    """One policy result as a row: rounded numbers, threshold and gap texts, groups named unless suppressed."""
    slicing = list(result.slicing)
    # Rounded once, from the document's values: the texts from them, the view's numbers (charts) beside them.
    value, threshold = round_number(result.value), round_number(result.threshold)
    low, high = round_number(result.ci_low), round_number(result.ci_high)
    higher = result.direction == "higher_is_better"
    gap_text, severity = _gap(result.value, result.threshold, higher)

    return ResultRow(
        metric=result.metric,
        metric_label=policy_metric_label(result.metric, words or Outcomes()),
        slicing=slicing,
        slicing_label=slicing_key(slicing),
        value=value,
        value_text=fmt(result.value),
        ci_text=interval_text(result.ci_low, result.ci_high),
        ci_low=low,
        ci_high=high,
        threshold=threshold,
        threshold_text=("≥ " if higher else "≤ ") + fmt(result.threshold) if threshold is not None else "–",
        status=result.status,
        mark=("EST. " if result.estimated else "") + STATUS_MARKS.get(result.status, result.status.upper()),
        reason=redact(status_reason(result), slicing, suppression),
        uncertain=result.uncertain,
        critical=result.critical,
        gap_text=gap_text,
        worst_group=suppression.name(slicing, result.worst_group),
        best_group=suppression.name(slicing, result.best_group),
        excluded="; ".join(group_label(g, slicing) for g in result.excluded_groups),
        override_reasons=list(result.override_reasons),
        severity=severity,
        severity_text=_severity_text(severity, threshold),
        judged_note=estimated_note(result) or judged_note(result),
        estimated=bool(result.estimated),
        detectable_text=detectable_text(result.detectable_disparity, higher),
        withheld_why=suppression.why_withheld(slicing, result.worst_group, result.best_group)
        if result.status == "fail"
        else "",
    )


def detectable_text(detectable: float | None, higher_is_better: bool) -> str:
    """The disparity a result would have caught with 80% power, in words.

    A violation lies below a threshold that higher values pass, above one that lower values pass.

    >>> detectable_text(0.15882, False), detectable_text(0.72110, True), detectable_text(None, False)
    ('0.159 or more', '0.721 or less', '')
    """
    if detectable is None or not math.isfinite(detectable):
        return ""
    return f"{fmt(detectable)} or {'less' if higher_is_better else 'more'}"


def estimated_note(result: PolicyResult) -> str:
    """An estimated result's note: not measured, and what it was calibrated on."""
    if not result.estimated:
        return ""
    reference = f"audit {result.reference_run_id}" if result.reference_run_id else "no labelled audit (none found)"
    return f"estimated from the scores before the labels arrived (calibrated on {reference}); not measured"


def judged_note(result: PolicyResult) -> str:
    """On an inferred (proxy) attribute: which estimate the gate judged, with the measured (attenuated) one.

    >>> from types import SimpleNamespace as S
    >>> judged_note(S(judged="corrected", naive=S(value=0.1012, ci_low=0.081, ci_high=0.127)))
    'judged: attenuation-corrected; as measured (attenuated): 0.101 [0.081–0.127]'
    """
    if result.judged is None or result.naive is None:
        return ""
    naive = result.naive
    ci = interval_text(naive.ci_low, naive.ci_high)
    measured = fmt(naive.value) + (f" [{ci}]" if ci else "")
    if result.judged == "corrected":
        return f"judged: attenuation-corrected; as measured (attenuated): {measured}"
    return "judged: as measured (attenuated, no correction): it can fail, never pass"


def with_units(rows: list[ResultRow], document: AuditDocument) -> list[ResultRow]:
    """The rows with the unit each threshold, gap and detectable disparity is in (none for a rate, share or ratio).

    The units are the core's (:func:`~fairgate.engine.tasks.metric_units`).
    """
    units = metric_units(document.task, document.policy if isinstance(document.policy, Mapping) else None)
    out = []
    for row in rows:
        suffix = units.get(row.metric)
        if suffix and row.threshold is not None:
            gap = row.gap_text and f"{row.gap_text} {suffix}"
            detectable = row.detectable_text.replace(" or ", f" {suffix} or ", 1)  # "1.733 SD of ZFYA or more"
            row = replace(
                row, threshold_text=f"{row.threshold_text} {suffix}", gap_text=gap, detectable_text=detectable
            )
        out.append(row)
    return out


def status_reason(result: PolicyResult) -> str:
    """Why a result is neither pass nor fail: the engine's reason, else what it could not compute."""
    if result.status in ("pass", "fail"):
        return result.reason or ""
    if result.reason:
        return result.reason
    if result.unavailable:
        return result.unavailable
    if result.status == "insufficient_data":
        return "too few people in the groups to compute the metric"
    return ""


def redact(text: str, slicing: list[str], suppression: Suppression) -> str:
    """``text`` (an engine reason) with every suppressed group of the slicing, and its count, unnamed.

    The engine names groups by the one group name, through the policy's value labels, followed by a count in
    brackets ("rests on fewer than min_events=10 people in Asian · Female (2)"): a report must not print either
    for a group it suppresses.
    """
    key = tuple(slicing)
    for (where, group_key), _ in suppression.sizes.items():
        if where != key or not text:
            continue
        group = json.loads(group_key)
        if not suppression.hides(slicing, group):
            continue
        label = group_label(group, slicing)
        # The label ends where a count, a separator or the sentence follows (not inside a longer value).
        pattern = r"(?<![^\s;,(])" + re.escape(label) + r"(?: \([0-9.,eE+-]+\))?(?=[,:;).]| \(|$| and | in )"
        text = re.sub(pattern, _HIDDEN, text)
    return re.sub(f"{_HIDDEN}(?:[,;] {_HIDDEN})+", lambda m: f"{m.group(0).count(_HIDDEN)} {_HIDDEN_MANY}", text)


_HIDDEN = "a group whose rates are withheld"
_HIDDEN_MANY = "groups whose rates are withheld"


def _severity_text(severity: float, threshold: float | None) -> str:
    """The gap as a multiple of the threshold, for a result past it.

    >>> _severity_text(7.0513, 0.1), _severity_text(-0.2, 0.1), _severity_text(0.05, 0.0)
    ('7.05 × the threshold', '', '')
    """
    if severity <= 0 or not threshold:
        return ""
    return f"{fmt(severity, 2)} × the threshold"


def _gap(value: float | None, threshold: float | None, higher: bool) -> tuple[str, float]:
    """How far past (or inside) the threshold the value is, as text, and its severity (relative gap)."""
    if value is None or threshold is None or not math.isfinite(value) or not math.isfinite(threshold):
        return "", 0.0
    gap = (threshold - value) if higher else (value - threshold)
    severity = gap / abs(threshold) if threshold else gap
    if gap > 0:
        return f"{'below' if higher else 'above'} the threshold by {fmt(abs(gap))}", severity
    return f"within the threshold by {fmt(abs(gap))}", severity
