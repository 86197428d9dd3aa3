"""The multiclass pages of the report: confusion matrices as heat tables, per-class rates with intervals.

Per slicing, each group's confusion matrix and its one-vs-rest rates per class; the per-class summaries beside
the judged worst case.

Pure view model (plain dataclasses, numbers rounded, small groups suppressed); charts are drawn in
tasks/render/kind_charts.py from :class:`RateChart` data, the template is ``reports/partials/multiclass.html.j2``.
"""

from __future__ import annotations

from dataclasses import dataclass

from fairgate.document.document import AuditDocument
from fairgate.document.multiclass import ClassSummaryValue, MulticlassBlock, MulticlassGroup
from fairgate.report.format import estimate_text, fmt, fmt_count, fmt_share, group_label, metric_label, slicing_key
from fairgate.report.model import GlossaryRow
from fairgate.report.selection import failure_labels, select_groups
from fairgate.report.suppress import Suppression

#: The rates the report shows per class (the document holds more), with their short names.
SHOWN_RATES = {
    "selection_rate": "Predicted share",
    "true_positive_rate": "TPR (recall)",
    "false_positive_rate": "FPR",
}


@dataclass(frozen=True)
class HeatCell:
    """One cell of a confusion matrix: its count, its share of the true class's row, a shade 0..1."""

    text: str
    share_text: str
    shade: float
    diagonal: bool


@dataclass(frozen=True)
class ConfusionView:
    """One group's confusion matrix (rows true class, columns predicted class)."""

    group_label: str
    n_text: str
    accuracy_text: str
    rows: list[list[HeatCell]]
    suppressed: bool


@dataclass(frozen=True)
class RateRow:
    """One group's rate per class: value and interval texts."""

    group_label: str
    n_text: str
    cells: list[str]
    suppressed: bool
    sufficient: bool


@dataclass(frozen=True)
class RateTable:
    """One rate (e.g. predicted share) of every group of a slicing, per class."""

    rate: str
    label: str
    rows: list[RateRow]  # every group (the HTML)
    pdf_rows: list[RateRow]  # an intersection's largest groups only (the PDF)


@dataclass(frozen=True)
class RateChart:
    """Data of a slicing's per-class rate chart (tasks/render/kind_charts.py): per group and class, value, bounds."""

    key: str
    title: str
    classes: list[str]
    rates: list[str]  # the shown rates' labels
    groups: list[str]
    # values[rate][group][class] = (value, low, high); None where undefined or suppressed
    values: list[list[list[tuple[float, float, float] | None]]]


@dataclass(frozen=True)
class SlicingPage:
    """One slicing's multiclass page."""

    key: str
    label: str
    anchor: str
    intersection: bool
    confusions: list[ConfusionView]
    tables: list[RateTable]
    chart: RateChart | None
    n_groups: int
    n_hidden_in_pdf: int


@dataclass(frozen=True)
class SummaryRow:
    """One summary on one slicing: the value per class and the judged worst case."""

    metric_label: str
    slicing_label: str
    per_class: list[str]
    worst_text: str
    worst_class: str


@dataclass(frozen=True)
class MulticlassPages:
    """Everything the multiclass partial shows."""

    classes: list[str]
    adverse_text: str
    pages: list[SlicingPage]
    summaries: list[SummaryRow]
    glossary: list[GlossaryRow]


def multiclass_pages(document: AuditDocument, suppression: Suppression) -> MulticlassPages:
    """The multiclass pages of a ``task: multiclass`` document."""
    block = document.multiclass
    if block is None:
        raise ValueError("a multiclass document needs its multiclass block")
    slicings = [list(s) for s in document.slicings if s]
    pages = [_page(block, slicing, suppression, failure_labels(document.results, slicing)) for slicing in slicings]
    adverse = block.adverse_classes
    adverse_text = (
        f"Adverse classes: {', '.join(adverse)}. Rules named adverse.<metric> judge the decision 'not an adverse "
        "class' as a binary decision (its selection rate is the share not predicted adverse)."
        if adverse
        else "No adverse classes are declared: every class is judged on its own (one-vs-rest)."
    )
    return MulticlassPages(
        classes=list(block.classes),
        adverse_text=adverse_text,
        pages=pages,
        summaries=[_summary_row(s, block.classes) for s in block.summaries if s.slicing],
        glossary=_glossary(block),
    )


def _page(block: MulticlassBlock, slicing: list[str], suppression: Suppression, named: set[str]) -> SlicingPage:
    groups = [g for g in block.groups if g.slicing == slicing]
    key = slicing_key(slicing)
    intersection = len(slicing) > 1
    shown = groups
    if intersection:  # one rule: the groups named in a failure, then the largest; the HTML lists all
        chosen = select_groups(
            groups,
            label=lambda g: group_label(g.group, slicing),
            size=lambda g: g.n,
            hidden=lambda g: _hidden(g, suppression),
            named=named,
        )
        # A withheld group named in a failure, or among the largest, keeps its row (its rates "–", as the
        # single-attribute tables show it): the table never leaves out the group a failure is about.
        largest = sorted(groups, key=lambda g: -(g.n or 0.0))[:LARGEST_KEPT]
        kept = [
            g
            for g in groups
            if _hidden(g, suppression) and (group_label(g.group, slicing) in named or any(g is x for x in largest))
        ]
        shown = [g for g in groups if any(g is x for x in (*chosen, *kept))]
    confusions = [] if intersection else [_confusion(g, block.classes, suppression) for g in groups]
    tables = [
        RateTable(
            rate,
            label,
            [_rate_row(g, rate, suppression) for g in groups],
            [_rate_row(g, rate, suppression) for g in shown],
        )
        for rate, label in SHOWN_RATES.items()
    ]
    chart = _chart(key, slicing, shown, block.classes, suppression)
    return SlicingPage(
        key=key,
        label=key,
        anchor="mc-" + "-".join(slicing),
        intersection=intersection,
        confusions=confusions,
        tables=tables,
        chart=chart,
        n_groups=len(groups),
        n_hidden_in_pdf=len(groups) - len(shown),
    )


#: An intersection's largest groups the PDF lists even when their rates are withheld.
LARGEST_KEPT = 3


def _hidden(group: MulticlassGroup, suppression: Suppression) -> bool:
    return bool(group.suppressed) or suppression.hides(list(group.slicing), group.group)


def _size_text(group: MulticlassGroup, suppression: Suppression) -> str:
    """A hidden group's size: printed when the suppression publishes it (only a count of it is hidden)."""
    return suppression.size_text(list(group.slicing), group.group, None if group.suppressed else group.n)


def _confusion(group: MulticlassGroup, classes: list[str], suppression: Suppression) -> ConfusionView:
    label = group_label(group.group, list(group.slicing))
    if _hidden(group, suppression) or group.confusion is None:
        return ConfusionView(label, _size_text(group, suppression), "–", [], True)
    rows = []
    peak = max((v or 0.0 for row in group.confusion for v in row), default=0.0) or 1.0
    for i, row in enumerate(group.confusion):
        total = sum(v or 0.0 for v in row)
        rows.append(
            [
                HeatCell(
                    text=fmt_count(value or 0.0),
                    share_text=fmt_share((value or 0.0) / total) if total else "–",
                    shade=round((value or 0.0) / peak, 3),
                    diagonal=i == j,
                )
                for j, value in enumerate(row)
            ]
        )
    return ConfusionView(label, fmt_count(group.n or 0), fmt(group.accuracy.value), rows, False)


def _rate_row(group: MulticlassGroup, rate: str, suppression: Suppression) -> RateRow:
    label = group_label(group.group, list(group.slicing))
    if _hidden(group, suppression):
        return RateRow(label, _size_text(group, suppression), ["–" for _ in group.rates[rate]], True, group.sufficient)
    cells = []
    for estimate in group.rates[rate]:
        cells.append(estimate_text(estimate.value, estimate.ci_low, estimate.ci_high))
    return RateRow(label, fmt_count(group.n or 0), cells, False, group.sufficient)


def _chart(
    key: str, slicing: list[str], groups: list[MulticlassGroup], classes: list[str], suppression: Suppression
) -> RateChart:
    """The per-class rate bars of the groups whose rates are shown.

    A withheld group has no bars, nor a legend entry: the tables list it with its rates "–".
    """
    groups = [g for g in groups if not _hidden(g, suppression)]
    values = []
    for rate in SHOWN_RATES:
        per_group = []
        for group in groups:
            hidden = _hidden(group, suppression)
            per_group.append(
                [
                    None
                    if hidden or e.value is None
                    else (e.value, e.ci_low if e.ci_low is not None else e.value, e.ci_high or e.value)
                    for e in group.rates[rate]
                ]
            )
        values.append(per_group)
    return RateChart(
        key=key,
        title=f"Per-class rates by {key}",
        classes=list(classes),
        rates=list(SHOWN_RATES.values()),
        groups=[group_label(g.group, slicing) for g in groups],
        values=values,
    )


def _value_text(value: ClassSummaryValue) -> str:
    return estimate_text(value.value, value.ci_low, value.ci_high)


def _summary_row(summary: object, classes: list[str]) -> SummaryRow:
    from fairgate.document.multiclass import ClassSummaryEntry

    assert isinstance(summary, ClassSummaryEntry)
    return SummaryRow(
        metric_label=metric_label(summary.metric),
        slicing_label=slicing_key(list(summary.slicing)),
        per_class=[_value_text(summary.by_class[c]) if c in summary.by_class else "–" for c in classes],
        worst_text=_value_text(summary.worst),
        worst_class=summary.worst_class or "–",
    )


def _glossary(block: MulticlassBlock) -> list[GlossaryRow]:
    return [
        GlossaryRow("Confusion matrix", "counts n(true i, predicted j)", "row: the true class; column: the prediction"),
        GlossaryRow("Predicted share of c", "n(predicted c) / n", "the share of the group the model put in class c"),
        GlossaryRow(
            "TPR (recall) of c", "n(true c, predicted c) / n(true c)", "of those truly in c, the share predicted c"
        ),
        GlossaryRow(
            "FPR of c", "n(true not c, predicted c) / n(true not c)", "of those not in c, the share predicted c"
        ),
        GlossaryRow(
            "Worst case over classes",
            "max over c of the summary of c",
            "the judged value: the largest gap (smallest ratio) over the classes "
            f"{', '.join(block.classes)}, with a simultaneous interval over all classes",
        ),
    ]
