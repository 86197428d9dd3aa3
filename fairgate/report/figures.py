"""The data behind the report's charts: curves per slicing, intersection heatmaps and group-size breakdowns."""

from __future__ import annotations

from collections.abc import Sequence

from fairgate.document.diagnostics import CalibrationCurve, RocCurve
from fairgate.report.format import base_metrics, group_label, metric_label, round_number, slicing_key
from fairgate.report.model import Breakdown, Curve, CurveSet, Heatmap, ResultRow, SlicingSection
from fairgate.report.suppress import SlicingKey, Suppression


def curve_sets(
    curves: Sequence[RocCurve | CalibrationCurve], suppression: Suppression, axes: tuple[str, str] = ("", "")
) -> list[CurveSet]:
    """One set of curves per slicing; suppressed groups (and calibration bins under k people) are dropped.

    ``axes``: the x and y axis titles in the policy's outcome words.
    """
    sets: dict[SlicingKey, CurveSet] = {}
    for item in curves:
        slicing = tuple(item.slicing)
        current = sets.setdefault(slicing, CurveSet(slicing_key(slicing), [], 0, *axes))
        if suppression.hides(slicing, item.group):
            sets[slicing] = CurveSet(current.key, current.curves, current.n_hidden + 1, *axes)
            continue
        xs, ys = _points(item, suppression.min_cell_size)
        current.curves.append(
            Curve(
                group_label(item.group, slicing),
                [round_number(x) or 0.0 for x in xs],
                [round_number(y) or 0.0 for y in ys],
                int(suppression.size(slicing, item.group) or 0),
            )
        )
    return list(sets.values())


def _points(item: RocCurve | CalibrationCurve, k: int) -> tuple[list[float], list[float]]:
    if isinstance(item, RocCurve):
        return item.fpr, item.tpr
    # Reliability: bins with fewer than k people are cells too, so they are dropped.
    xs: list[float] = []
    ys: list[float] = []
    for b in item.bins:
        if b.n >= k and b.mean_score is not None and b.fraction_positive is not None:
            xs.append(b.mean_score)
            ys.append(b.fraction_positive)
    return xs, ys


def heatmaps(sections: list[SlicingSection], results: list[ResultRow]) -> list[Heatmap]:
    """One heatmap per intersection, of the base metric of its worst result (a failure if there is one)."""
    out = []
    for section in sections:
        if not section.intersection or not section.groups:
            continue
        candidates = sorted(
            (r for r in results if tuple(r.slicing) == tuple(section.attributes)),
            key=lambda r: (r.status != "fail", -r.severity),
        )
        base = next((b for r in candidates for b in base_metrics(r.metric) if b in section.metric_names), None)
        if base is None and "selection_rate" in section.metric_names:
            base = "selection_rate"
        if base is None:
            continue
        worst = next((r for r in candidates if base in base_metrics(r.metric)), None)
        out.append(_heatmap(section, base, metric_label(worst.metric) if worst else metric_label(base)))
    return out


def _heatmap(section: SlicingSection, base: str, label: str) -> Heatmap:
    col = section.metric_names.index(base)
    first, rest = section.attributes[0], section.attributes[1:]

    def column_of(group: dict[str, str]) -> str:
        return " · ".join(group[a] for a in rest)

    row_labels = sorted({g.group[first] for g in section.groups})
    col_labels = sorted({column_of(g.group) for g in section.groups})
    values: list[list[float | None]] = [[None] * len(col_labels) for _ in row_labels]
    suppressed = [[False] * len(col_labels) for _ in row_labels]
    for g in section.groups:
        i, j = row_labels.index(g.group[first]), col_labels.index(column_of(g.group))
        suppressed[i][j] = g.suppressed
        values[i][j] = None if g.suppressed else g.cells[col].value
    return Heatmap(section.key, label, base, row_labels, col_labels, values, suppressed)


def breakdowns(sections: list[SlicingSection]) -> list[Breakdown]:
    """Group sizes and shares per single attribute (suppressed sizes stay None)."""
    out = []
    for section in sections:
        if section.intersection or not section.attributes:
            continue
        known = sum(g.n or 0 for g in section.groups)
        total = known if known else 1
        out.append(
            Breakdown(
                section.key,
                [g.label for g in section.groups],
                [g.n for g in section.groups],
                [None if g.n is None else round(g.n / total, 4) for g in section.groups],
            )
        )
    return out
