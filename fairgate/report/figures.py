"""The data behind the report's charts: curves per slicing, intersection heatmaps and group-size breakdowns."""

from __future__ import annotations

from collections.abc import Sequence

from fairgate.document.diagnostics import CalibrationCurve, RocCurve
from fairgate.engine.metric_labels import in_sentence, metric_words
from fairgate.report.format import base_metrics, group_label, metric_label, round_number, slicing_key
from fairgate.report.model import Breakdown, Curve, CurveSet, GroupRow, Heatmap, ResultRow, SlicingSection
from fairgate.report.selection import failure_labels, select_groups
from fairgate.report.suppress import SlicingKey, Suppression

#: Curves per chart: more are unreadable; the tables carry the rest (and the caption names who is left out).
MAX_CURVES = 8
#: A reliability curve from fewer bins than this is drawn but named as sparse: it is a few dots, not a curve.
SPARSE_BINS = 3


def curve_sets(
    curves: Sequence[RocCurve | CalibrationCurve],
    suppression: Suppression,
    axes: tuple[str, str] = ("", ""),
    results: Sequence[ResultRow] = (),
) -> list[CurveSet]:
    """One set of curves per slicing, largest groups first, saying which groups are left out and why.

    Suppressed groups, groups without a score bin of k people and groups past MAX_CURVES are not drawn; each
    set names them (``omitted``) so no group silently disappears. ``axes``: the x and y axis titles in the
    policy's outcome words.
    """
    grouped: dict[SlicingKey, list[RocCurve | CalibrationCurve]] = {}
    for item in curves:
        grouped.setdefault(tuple(item.slicing), []).append(item)
    return [
        _curve_set(slicing, items, suppression, axes, failure_labels(results, slicing))
        for slicing, items in grouped.items()
    ]


def _curve_set(
    slicing: SlicingKey,
    items: list[RocCurve | CalibrationCurve],
    suppression: Suppression,
    axes: tuple[str, str],
    named: set[str],
) -> CurveSet:
    k = suppression.min_cell_size
    hidden = [i for i in items if suppression.hides(slicing, i.group)]
    drawn: list[Curve] = []
    sparse: list[str] = []
    omitted: list[str] = []
    # One selection rule (fairgate.report.selection): the groups named in a failure, then the largest, among
    # the groups with a curve to draw.
    drawable = [i for i in items if not suppression.hides(slicing, i.group) and _points(i, k)[0]]
    chosen = select_groups(
        drawable,
        label=lambda i: group_label(i.group, slicing),
        size=lambda i: suppression.size(slicing, i.group),
        named=named,
        limit=MAX_CURVES,
    )
    visible = sorted(
        (i for i in items if not suppression.hides(slicing, i.group)),
        key=lambda i: -(suppression.size(slicing, i.group) or 0),
    )
    for item in visible:
        label = group_label(item.group, slicing)
        n = int(suppression.size(slicing, item.group) or 0)
        xs, ys = _points(item, k)
        if not xs:
            omitted.append(f"{label} (n={n:,}): no score bin holds {k} people")
        elif not any(item is c for c in chosen):
            omitted.append(f"{label} (n={n:,}): not among the groups named in a failure or the largest")
        else:
            if isinstance(item, CalibrationCurve) and len(xs) < SPARSE_BINS:
                sparse.append(f"{label} (n={n:,}): {len(xs)} bin(s) of {k}+ people")
            drawn.append(Curve(label, [round_number(x) or 0.0 for x in xs], [round_number(y) or 0.0 for y in ys], n))
    if hidden:
        omitted.append(
            f"{len(hidden)} suppressed group(s) (rates withheld by the small-cell rule stated with the summary)"
        )
    return CurveSet(slicing_key(slicing), drawn, len(hidden), *axes, sparse=sparse, omitted=omitted)


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
    """One heatmap per intersection, all of ONE rate on one 0-1 colour scale so they compare at a glance.

    The rate is the component through which the most severe intersectional failure runs: for a metric over
    several rates (equalized odds: TPR and FPR) the one whose spread across the judged groups is the widest,
    which is the one that sets the metric's value.
    """
    intersections = [s for s in sections if s.intersection and s.groups]
    if not intersections:
        return []
    base, worst = _heatmap_rate(intersections, results)
    if base is None:
        return []
    note = _component_note(base, worst)
    return [_heatmap(s, base, metric_label(base), note) for s in intersections if base in s.metric_names]


def _heatmap_rate(sections: list[SlicingSection], results: list[ResultRow]) -> tuple[str | None, ResultRow | None]:
    keys = {tuple(s.attributes): s for s in sections}
    candidates = sorted(
        (r for r in results if tuple(r.slicing) in keys),
        key=lambda r: (r.status != "fail", -r.severity),
    )
    for result in candidates:
        section = keys[tuple(result.slicing)]
        bases = [b for b in base_metrics(result.metric) if b in section.metric_names]
        if bases:
            return max(bases, key=lambda b: _spread(section, b)), result
    shared = all("selection_rate" in s.metric_names for s in sections)
    return ("selection_rate" if shared else None), None


def _spread(section: SlicingSection, base: str) -> float:
    """Max minus min of a rate over the judged (sufficient, visible) groups of a section."""
    col = section.metric_names.index(base)
    values = [v for g in section.groups if g.sufficient and not g.suppressed and (v := g.cells[col].value) is not None]
    return max(values) - min(values) if len(values) > 1 else 0.0


def _component_note(base: str, worst: ResultRow | None) -> str:
    if worst is None:
        return f"{metric_label(base)}: no intersectional metric is judged, so the selection rate is shown."
    bases = base_metrics(worst.metric)
    why = f", the component that sets {in_sentence(worst.metric_label)}" if len(bases) > 1 else ""
    status = "fails" if worst.status == "fail" else "is the worst result"
    return (
        f"Every intersection shows {metric_words(base)}{why} ({in_sentence(worst.metric_label)} {status} on "
        f"{worst.slicing_label}), on one 0–1 colour scale."
    )


def _heatmap(section: SlicingSection, base: str, label: str, note: str) -> Heatmap:
    col = section.metric_names.index(base)
    first, rest = section.attributes[0], section.attributes[1:]

    def column_of(group: dict[str, str]) -> str:
        return " · ".join(group[a] for a in rest)

    row_labels = sorted({g.group[first] for g in section.groups})
    col_labels = sorted({column_of(g.group) for g in section.groups})
    values: list[list[float | None]] = [[None] * len(col_labels) for _ in row_labels]
    suppressed = [[False] * len(col_labels) for _ in row_labels]
    excluded = [[False] * len(col_labels) for _ in row_labels]
    for g in section.groups:
        i, j = row_labels.index(g.group[first]), col_labels.index(column_of(g.group))
        suppressed[i][j] = g.suppressed
        excluded[i][j] = not g.sufficient and not g.suppressed
        values[i][j] = None if g.suppressed else g.cells[col].value
    return Heatmap(section.key, label, base, row_labels, col_labels, values, suppressed, excluded, note)


def threshold_line(section: SlicingSection, metric: str) -> tuple[float, str] | None:
    """Where a group's rate would breach the policy, given the judged groups (drawn as a dashed line).

    Selection rate: the ratio threshold times the highest rate (four-fifths rule), or the highest rate minus a
    difference threshold. Error rates: the lowest rate plus the difference threshold. Only the groups the
    judgement rests on count (large enough and shown): a group left out of the judgement, however extreme its
    rate, does not move the line, or judged groups would look as if they breach.
    """
    if metric not in section.metric_names:
        return None
    col = section.metric_names.index(metric)
    values = [v for g in section.groups if g.sufficient and not g.suppressed and (v := g.cells[col].value) is not None]
    if not values:
        return None
    aliases = {metric, "true_positive_rate"} if metric == "false_negative_rate" else {metric}
    for result in section.results:
        if result.threshold is None or not aliases & set(base_metrics(result.metric)):
            continue
        if result.metric.endswith("_ratio"):
            return max(values) * result.threshold, f"{result.threshold:g} × highest judged"
        if metric == "selection_rate":
            return max(values) - result.threshold, f"highest judged − {result.threshold:g}"
        return min(values) + result.threshold, f"lowest judged + {result.threshold:g}"
    return None


def chart_rows(section: SlicingSection, limit: int) -> list[GroupRow]:
    """The groups a chart of the section draws, by the one selection rule: named in a failure, then the largest."""
    return select_groups(
        section.groups,
        label=lambda g: g.label,
        size=lambda g: g.n,
        hidden=lambda g: g.suppressed,
        named=failure_labels(section.results, section.attributes),
        limit=limit,
    )


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


def curves_notes(roc: list[CurveSet], calibration: list[CurveSet], min_cell_size: int) -> list[str]:
    """The notes of the PDF's curves block, across the page under its two rows: what the charts leave out.

    A caption per chart, a third of the page wide, squeezes them into a narrow column. The score-bin rule is
    said once; a group left out of both an attribute's ROC and calibration charts, once.
    """
    out = (
        [f"Calibration charts: score bins with fewer than {min_cell_size} people are not drawn."] if calibration else []
    )
    keys = list(dict.fromkeys(c.key for c in (*roc, *calibration)))
    for key in keys:
        parts: list[str] = []
        for kind, sets in (("ROC", roc), ("calibration", calibration)):
            for curves in (c for c in sets if c.key == key):
                if curves.sparse:
                    parts.append(
                        f"drawn as dots on the {kind} chart (too few people for a curve): " + "; ".join(curves.sparse)
                    )
                if curves.omitted:
                    parts.append("not drawn: " + "; ".join(curves.omitted))
        if parts:
            out.append(f"{key}: " + "; ".join(dict.fromkeys(parts)) + ".")
    return out


def chart_captions(
    roc: list[CurveSet], calibration: list[CurveSet], maps: list[Heatmap], min_cell_size: int
) -> dict[str, str]:
    """What each chart leaves out or marks, keyed as the charts are ("calibration:race", "heatmap:race × sex")."""
    out: dict[str, str] = {}
    for kind, sets in (("roc", roc), ("calibration", calibration)):
        for curves in sets:
            parts = []
            if kind == "calibration":
                parts.append(f"Score bins with fewer than {min_cell_size} people are not drawn.")
            if curves.sparse:
                parts.append("Too few people for a curve, drawn as dots: " + "; ".join(curves.sparse) + ".")
            if curves.omitted:
                parts.append("Not drawn: " + "; ".join(curves.omitted) + ".")
            if parts:
                out[f"{kind}:{curves.key}"] = " ".join(parts)
    for heatmap in maps:
        # Maps of more than 60 cells carry no numbers (charts.heatmap_chart): grey cells and red dots then.
        texts = len(heatmap.row_labels) * len(heatmap.col_labels) <= 60
        marks = [
            f"grey{' ·' if texts else ''}: rates withheld (the small-cell rule stated with the summary)",
            f"grey{' –' if texts else ''}: undefined (the group has no one the rate counts, e.g. no positives)",
        ]
        if any(any(row) for row in heatmap.excluded):
            marks.append(
                f"{'*' if texts else 'red dot'}: below the minimum group size, shown but left out of the judgement"
            )
        out[f"heatmap:{heatmap.key}"] = f"{heatmap.component_note} " + "; ".join(marks) + "."
    return out
