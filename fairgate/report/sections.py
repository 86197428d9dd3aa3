"""One section per slicing: its results and its by-group table, with small groups suppressed."""

from __future__ import annotations

from collections.abc import Sequence

from fairgate.document.common import Estimate
from fairgate.document.document import AuditDocument
from fairgate.document.groups import GroupEntry
from fairgate.engine.labels import group_key
from fairgate.report.format import (
    TABLE_METRICS,
    base_metrics,
    fmt,
    fmt_count,
    group_label,
    interval_text,
    metric_label,
    round_number,
    slicing_key,
    value_label,
)
from fairgate.report.model import PDF_ROW_LIMIT, SUPPRESSED, Cell, GroupRow, ResultRow, SlicingSection
from fairgate.report.selection import LARGE_SHARE as LARGE_SHARE  # re-exported: the binary tables' rule
from fairgate.report.selection import failure_labels, select_groups
from fairgate.report.suppress import (
    COUNT_NAMES,
    GroupKey,
    SlicingKey,
    Suppression,
    confusion_counts,
    groups_by_slicing,
)


def sections(document: AuditDocument, results: list[ResultRow], suppression: Suppression) -> list[SlicingSection]:
    """The sections in the document's slicing order; slicings without groups or results are left out."""
    by_slicing = groups_by_slicing(document.groups)
    references = reference_groups(document)
    order = [tuple(s) for s in document.slicings] or list(by_slicing)
    out = []
    for slicing in order:
        rows = by_slicing.get(slicing, [])
        section_results = [r for r in results if tuple(r.slicing) == slicing]
        if rows or section_results:
            reference = references.get(slicing)
            out.append(section(slicing, rows, section_results, suppression, reference, document.weighted))
    return out


def reference_groups(document: AuditDocument) -> dict[SlicingKey, GroupKey]:
    """The reference group of each slicing, as the comparisons name it."""
    refs: dict[SlicingKey, GroupKey] = {}
    for comparison in document.comparisons:
        if comparison.reference:
            refs.setdefault(tuple(comparison.slicing), group_key(comparison.reference))
    return refs


#: The confusion counts beside the rates, favourable outcome = positive.
COUNT_LABELS = ["TP", "FP", "TN", "FN"]


def section(
    slicing: SlicingKey,
    rows: Sequence[GroupEntry],
    results: list[ResultRow],
    suppression: Suppression,
    reference: GroupKey | None,
    weighted: bool = False,
) -> SlicingSection:
    """The section of one slicing: its results, and its groups largest first."""
    metric_names = _table_metrics(slicing, rows, results)
    hidden = suppression.hidden.get(slicing, set())
    group_rows = [
        _group_row(entry, slicing, metric_names, group_key(entry.group) in hidden, suppression, reference)
        for entry in sorted(rows, key=lambda r: -(r.n or 0.0))
    ]
    named = failure_labels(results, slicing)
    highlight = group_rows if len(group_rows) <= PDF_ROW_LIMIT else furthest(group_rows, PDF_ROW_LIMIT, named)
    anchor = "s-" + "-".join("".join(c if c.isalnum() else "_" for c in a) for a in slicing)
    return SlicingSection(
        key=slicing_key(slicing),
        anchor=anchor,
        attributes=list(slicing),
        intersection=len(slicing) > 1,
        results=results,
        metric_names=metric_names,
        metric_labels=[metric_label(m) for m in metric_names],
        groups=group_rows,
        n_suppressed=sum(g.suppressed for g in group_rows),
        n_insufficient=sum(not g.sufficient and not g.suppressed for g in group_rows),
        failed=any(r.status == "fail" for r in results),
        highlight=highlight,
        count_labels=COUNT_LABELS if any(g.counts for g in group_rows) else [],
        counts_note=(
            "Counts are weighted sums scaled to the Kish effective size n (weights make raw sums a different unit)."
            if weighted
            else "Counts are people: TP and FP predicted favourable, TN and FN not (positive = favourable)."
        ),
    )


def _table_metrics(slicing: SlicingKey, rows: Sequence[GroupEntry], results: list[ResultRow]) -> list[str]:
    present = {m for r in rows for m in r.metrics}
    names = [m for m in TABLE_METRICS if m in present]
    if len(slicing) > 1:
        # Intersections can hold hundreds of groups: their tables keep the metrics the policy judges (and the
        # selection rate), which is what a reviewer compares there; the attribute tables carry the rest.
        judged = {"selection_rate"} | {b for r in results for b in base_metrics(r.metric)}
        names = [m for m in names if m in judged]
    return names


def _group_row(
    entry: GroupEntry,
    slicing: SlicingKey,
    metric_names: list[str],
    suppressed: bool,
    suppression: Suppression,
    reference: GroupKey | None,
) -> GroupRow:
    # A hidden group hides its rates and counts together (a rate with the size is a count); its size too unless
    # the suppression publishes it. One label, whatever the reason: "n < k" would tell which hidden groups are not.
    size_hidden = suppressed and suppression.hides_size(slicing, entry.group)
    if suppressed:
        cells = [Cell(SUPPRESSED) for _ in metric_names]
        n_text = SUPPRESSED if size_hidden else fmt_count(entry.n)
        values: list[float | None] = list(confusion_counts(entry)) or [None] * len(COUNT_NAMES)  # a read-back JSON
        counts = [
            SUPPRESSED if value is None or suppression.hides_count(slicing, entry.group, name) else fmt_count(value)
            for name, value in zip(COUNT_NAMES, values, strict=True)
        ]
    else:
        cells = [cell(entry.metrics.get(m)) for m in metric_names]
        n_text = fmt_count(entry.n)
        counts = [fmt_count(c) for c in confusion_counts(entry)]
    return GroupRow(
        label=group_label(entry.group, slicing),
        group={str(a): value_label(str(a), v) for a, v in entry.group.items()},
        n=None if size_hidden or entry.n is None else round(entry.n),
        n_text=n_text,
        suppressed=suppressed,
        sufficient=entry.sufficient,
        is_reference=reference == group_key(entry.group),
        cells=cells,
        counts=counts,
    )


def cell(estimate: Estimate | None) -> Cell:
    """A table cell: the rounded value and its interval."""
    if estimate is None:
        return Cell(fmt(None))
    value, low, high = (round_number(x) for x in (estimate.value, estimate.ci_low, estimate.ci_high))
    # The texts are rounded once from the document's values; the rounded numbers are for the charts.
    ci = interval_text(estimate.ci_low, estimate.ci_high, None)
    return Cell(fmt(estimate.value), ci, value, low, high)


def furthest(rows: list[GroupRow], limit: int, named: set[str] | frozenset[str] = frozenset()) -> list[GroupRow]:
    """The visible groups the PDF lists for a large slicing, furthest from the median of any metric column first.

    The one selection rule (:func:`fairgate.report.selection.select_groups`): every group named in a failure
    and every large group, then the ``limit`` furthest from the median. When all visible groups fit, they keep
    their size order.
    """
    visible = [g for g in rows if not g.suppressed]
    if len(visible) <= limit:
        return visible
    n_columns = len(visible[0].cells) if visible else 0
    medians = []
    for j in range(n_columns):
        values = sorted(v for g in visible if (v := g.cells[j].value) is not None)
        medians.append(values[len(values) // 2] if values else None)

    def distance(g: GroupRow) -> float:
        gaps = [
            abs(c.value - m) for c, m in zip(g.cells, medians, strict=True) if c.value is not None and m is not None
        ]
        return max(gaps, default=0.0)

    return select_groups(
        visible, label=lambda g: g.label, size=lambda g: g.n, named=named, limit=limit, priority=lambda g: -distance(g)
    )
