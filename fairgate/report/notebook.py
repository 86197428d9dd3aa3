"""The audit as a notebook shows it (``AuditResult._repr_html_``).

The verdict, the results that fail with their intervals, what was not judged and why, and the report files
when they are known.

Plain HTML built as text (no template engine in the engine's package), every value escaped once, here; the
numbers, intervals, metric names and group labels come from the one formatter, :mod:`fairgate.report.format`,
so a notebook reads the same figures as the PDF and the CLI.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from html import escape
from pathlib import Path

from fairgate.document.document import AuditDocument
from fairgate.document.results import PolicyResult
from fairgate.report.format import (
    STATUS_MARKS,
    UNDECIDED_STATUSES,
    estimate_text,
    fmt,
    group_label,
    interval_text,
    labels_of,
    metric_label,
    slicing_key,
    value_labels,
    visible_text,
)

#: The verdict's colour on its badge (an unknown verdict is grey).
_VERDICT_COLOURS = {"pass": "#1a7f37", "fail": "#cf222e", "insufficient": "#9a6700"}
_CELL = "padding:2px 8px;text-align:left;border-bottom:1px solid #ddd"


def audit_html(document: AuditDocument, files: Mapping[str, str | Path] | None = None) -> str:
    """The document as one HTML fragment (a ``<div>``), for Jupyter's rich display."""
    with value_labels(labels_of(document.policy)):
        failing = [r for r in document.results if r.status == "fail"]
        undecided = [r for r in document.results if r.status in UNDECIDED_STATUSES]
        parts = [_headline(document)]
        if failing:
            parts.append(_table("Failing results", _FAILING_COLUMNS, [_failing_row(r) for r in failing]))
        if undecided:
            parts.append(_table("Not judged", _UNDECIDED_COLUMNS, [_undecided_row(r) for r in undecided]))
        parts.append(_files(files or {}))
    return f'<div class="fairgate-audit">{"".join(parts)}</div>'


def _headline(document: AuditDocument) -> str:
    detail = document.verdict_detail
    verdict = str(document.verdict)
    colour = _VERDICT_COLOURS.get(verdict, "#57606a")
    badge = (
        f'<span style="color:#fff;background:{colour};padding:2px 8px;border-radius:4px">{_e(verdict.upper())}</span>'
    )
    model = f"{document.model.name} (version {document.model.version})"
    judged = detail.n_judged if detail.n_judged is not None else detail.n_results
    counts = f"{detail.n_failed} of {judged} judged results fail; {detail.n_results} results"
    return (
        f'<p><b>fairgate audit</b> <span class="verdict" data-verdict="{_e(verdict)}">{badge}</span> '
        f"model {_e(model)}, {document.n_rows:,} rows, run {_e(document.run_id)}</p><p>{_e(counts)}</p>"
    )


_FAILING_COLUMNS = ("metric", "slicing", "value [interval]", "decided on", "threshold", "worst group")
_UNDECIDED_COLUMNS = ("metric", "slicing", "status", "value [interval]", "why")


def _failing_row(result: PolicyResult) -> list[str]:
    return [
        metric_label(result.metric),
        slicing_key(result.slicing),
        estimate_text(result.value, result.ci_low, result.ci_high),
        interval_text(result.decision_ci_low, result.decision_ci_high),
        fmt(result.threshold),
        group_label(result.worst_group, result.slicing) if result.worst_group else "",
    ]


def _undecided_row(result: PolicyResult) -> list[str]:
    return [
        metric_label(result.metric),
        slicing_key(result.slicing),
        STATUS_MARKS.get(result.status, result.status),
        estimate_text(result.value, result.ci_low, result.ci_high),
        result.reason or result.unavailable or "",
    ]


def _table(title: str, columns: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    head = "".join(f'<th style="{_CELL}">{_e(c)}</th>' for c in columns)
    body = "".join("<tr>" + "".join(f'<td style="{_CELL}">{_e(cell)}</td>' for cell in row) + "</tr>" for row in rows)
    return (
        f'<table style="border-collapse:collapse" data-title="{_e(title)}"><caption style="text-align:left">'
        f"<b>{_e(title)}</b></caption><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )


def _files(files: Mapping[str, str | Path]) -> str:
    """The report files, linked (a relative link: the notebook's folder is the usual root of a file link)."""
    if not files:
        return "<p>report files: not written (fairgate audit or fairgate.report writes them)</p>"
    items = "".join(
        f'<li>{_e(kind)}: <a href="{_e(Path(path).as_posix())}">{_e(str(path))}</a></li>'
        for kind, path in files.items()
    )
    return f"<p>report files:</p><ul>{items}</ul>"


def _e(text: object) -> str:
    """Text for HTML: hidden characters made visible, then ``& < > " '`` escaped."""
    return escape(visible_text(str(text)), quote=True)
