"""The ranking pages of the report: who gets the top of the lists, and how much attention each group receives.

Per slicing, each group's share of the items and of the top-k positions, its top-k rate, mean exposure, mean
relevance and exposure per relevance, with intervals; the exposure curve (each group's cumulative share of all
exposure along the positions, against its share of the items) and the top-k share chart; the summaries across
groups as the policy names them.

Pure view model (plain dataclasses, numbers rounded, small groups suppressed); charts are drawn in
tasks/render/ranking_charts.py from :class:`ExposureChart` and :class:`ShareChart` data, the template is
``reports/partials/ranking.html.j2``.
"""

from __future__ import annotations

from dataclasses import dataclass

from fairgate.document.common import Estimate
from fairgate.document.document import AuditDocument
from fairgate.document.groups import GroupEntry
from fairgate.document.ranking import RankingBlock, RankingSummary
from fairgate.report.format import estimate_text, fmt, fmt_count, fmt_share, group_label, metric_label, slicing_key
from fairgate.report.model import GlossaryRow
from fairgate.report.results import redact
from fairgate.report.selection import failure_labels, select_groups
from fairgate.report.suppress import Suppression

#: A group under this share of the items is small: its curves and bars are drawn again on their own scale (on the
#: large groups' 0-to-1 scale a group of 2% of the items lies flat on the axis, whatever its ranking).
SMALL_SHARE = 0.1

_DISCOUNTS = {
    "log2": "1 / log2(1 + rank) (DCG's discount, Singh & Joachims 2018)",
    "reciprocal": "1 / rank",
    "rbp": "patience^(rank − 1) (rank-biased precision)",
}


@dataclass(frozen=True)
class GroupRow:
    """One group of a slicing: size, shares and metrics as texts."""

    group_label: str
    n_text: str
    population_share: str
    top_k_share: str
    top_k_rate: str
    mean_exposure: str
    mean_relevance: str
    exposure_per_relevance: str
    suppressed: bool
    sufficient: bool


@dataclass(frozen=True)
class ExposureChart:
    """Data of a slicing's exposure curves (tasks/render/ranking_charts.py): per group, positions and shares."""

    key: str
    title: str
    groups: list[str]
    positions: list[int]  # the last position pools every later one
    pooled_from: int
    share_at_position: list[list[float | None]]
    cumulative_exposure: list[list[float | None]]
    population_share: list[float | None]


@dataclass(frozen=True)
class ShareChart:
    """Data of a slicing's top-k share chart: per group, its population share and its share of each top k."""

    key: str
    title: str
    groups: list[str]
    cutoffs: list[int]
    population_share: list[float | None]
    top_k_share: list[list[float | None]]  # [k][group]


@dataclass(frozen=True)
class SlicingPage:
    """One slicing's ranking page."""

    key: str
    label: str
    anchor: str
    intersection: bool
    rows: list[GroupRow]
    pdf_rows: list[GroupRow]  # the PDF's: every group named in a failure, then the largest (one selection rule)
    exposure_chart: ExposureChart | None
    share_chart: ShareChart | None
    n_groups: int
    n_hidden_in_pdf: int
    chart_note: str = ""  # what the charts draw, and which groups are drawn again on their own scale


@dataclass(frozen=True)
class SummaryCell:
    """One summary on one slicing: value and interval, the lowest and highest group, a note mark."""

    value_text: str
    worst: str
    best: str
    note: int | None  # the number of its note under the table (why there is no value or interval)


@dataclass(frozen=True)
class SummaryRow:
    """One summary across groups (a metric at a cut-off) on every slicing."""

    metric_label: str
    cells: list[SummaryCell]


@dataclass(frozen=True)
class RankingPages:
    """Everything the ranking partial shows."""

    settings_text: str
    judged_k: int
    pages: list[SlicingPage]
    slicings: list[str]  # the summary table's columns
    summaries: list[SummaryRow]
    notes: list[str]  # the summary table's notes, numbered from 1
    glossary: list[GlossaryRow]


def ranking_pages(document: AuditDocument, suppression: Suppression) -> RankingPages:
    """The ranking pages of a ``task: ranking`` document."""
    block = document.ranking
    if block is None:
        raise ValueError("a ranking document needs its ranking block")
    cutoffs = ", ".join(str(k) for k in block.top_k)
    settings = (
        f"{fmt_count(document.n_rows)} ranked items in {fmt_count(block.n_lists)} lists. Exposure of a position: "
        f"{_discount_text(block)}. Top-k cut-offs: {cutoffs}; the top-k rate rules judge k = {block.judged_k}. "
        f"Intervals: cluster bootstrap of whole lists ({block.bootstrap_buckets} clusters)."
    )
    pages = [_page(document, block, list(s), suppression) for s in document.slicings if s]
    slicings = [list(s) for s in document.slicings if s]
    notes: list[str] = []
    return RankingPages(
        settings_text=settings,
        judged_k=block.judged_k,
        pages=pages,
        slicings=[slicing_key(s) for s in slicings],
        summaries=_summary_rows(block.summaries, slicings, notes, suppression),
        notes=notes,
        glossary=_glossary(block),
    )


def _discount_text(block: RankingBlock) -> str:
    text = _DISCOUNTS.get(block.discount, block.discount)
    return text.replace("patience", f"{block.patience:g}") if block.patience is not None else text


def _estimate_text(estimate: Estimate | None) -> str:
    if estimate is None:
        return "undefined"
    return estimate_text(estimate.value, estimate.ci_low, estimate.ci_high)


def _hidden(group: GroupEntry, suppression: Suppression) -> bool:
    return bool(group.suppressed) or suppression.hides(list(group.slicing), group.group)


def _row(group: GroupEntry, k: int, suppression: Suppression) -> GroupRow:
    label = group_label(group.group, list(group.slicing))
    if _hidden(group, suppression):
        dash = "–"
        return GroupRow(label, "suppressed", dash, dash, dash, dash, dash, dash, True, group.sufficient)
    m = group.metrics
    return GroupRow(
        group_label=label,
        n_text=fmt_count(group.n),
        population_share=fmt(m["population_share"].value),
        top_k_share=fmt(m[f"top_{k}_share"].value),
        top_k_rate=_estimate_text(m.get(f"top_{k}_rate")),
        mean_exposure=_estimate_text(m.get("mean_exposure")),
        mean_relevance=_estimate_text(m.get("mean_relevance")),
        exposure_per_relevance=_estimate_text(m.get("exposure_per_relevance")),
        suppressed=False,
        sufficient=group.sufficient,
    )


def _page(document: AuditDocument, block: RankingBlock, slicing: list[str], suppression: Suppression) -> SlicingPage:
    groups = [g for g in document.groups if g.slicing == slicing]
    key = slicing_key(slicing)
    intersection = len(slicing) > 1
    # One rule for the PDF's table and charts: the groups named in a failure, then the largest.
    shown = select_groups(
        groups,
        label=lambda g: group_label(g.group, slicing),
        size=lambda g: g.n,
        hidden=lambda g: _hidden(g, suppression),
        named=failure_labels(document.results, slicing),
    )
    return SlicingPage(
        key=key,
        label=key,
        anchor="rank-" + "-".join(slicing),
        intersection=intersection,
        rows=[_row(g, block.judged_k, suppression) for g in groups],
        pdf_rows=[_row(g, block.judged_k, suppression) for g in shown] if intersection else [],
        exposure_chart=_exposure_chart(key, block, slicing, shown),
        share_chart=_share_chart(key, block, slicing, shown),
        n_groups=len(groups),
        n_hidden_in_pdf=len(groups) - len(shown) if intersection else 0,
        chart_note=_chart_note(shown, slicing),
    )


def small_groups(population_share: list[float | None]) -> tuple[list[int], list[int]]:
    """The large and the small groups' indexes (under :data:`SMALL_SHARE` of the items).

    All large when either part would be empty (a second panel of every group, or of none, says nothing more).

    >>> small_groups([0.5, 0.4, 0.02, None]), small_groups([0.05, 0.03])
    (([0, 1, 3], [2]), ([0, 1], []))
    """
    small = [g for g, share in enumerate(population_share) if share is not None and share < SMALL_SHARE]
    large = [g for g in range(len(population_share)) if g not in small]
    return (large, small) if large and small else (list(range(len(population_share))), [])


def _chart_note(shown: list[GroupEntry], slicing: list[str]) -> str:
    """The charts' caption: the dotted levels, and the small groups drawn again on their own scale."""
    if len(shown) < 2:
        return ""
    _, small = small_groups([g.metrics["population_share"].value for g in shown])
    note = "Dotted lines: each group's share of all items (a group ranked as often as it appears follows its line)."
    if not small:
        return note
    names = ", ".join(group_label(shown[g].group, slicing) for g in small)
    return (
        f"{note} The groups under {fmt_share(SMALL_SHARE)} of the items ({names}) are drawn again on their own "
        "scale, the top of which each panel's axis shows: the second row of curves and the right-hand bars."
    )


def _exposure_chart(key: str, block: RankingBlock, slicing: list[str], shown: list[GroupEntry]) -> ExposureChart | None:
    curves = {tuple(sorted(c.group.items())): c for c in block.curves if c.slicing == slicing}
    picked = [(g, curves.get(tuple(sorted(g.group.items())))) for g in shown]
    picked = [(g, c) for g, c in picked if c is not None]
    if len(picked) < 2:
        return None
    positions = picked[0][1].positions  # type: ignore[union-attr]
    return ExposureChart(
        key=key,
        title=f"Exposure along the ranking by {key}",
        groups=[group_label(g.group, slicing) for g, _ in picked],
        positions=positions,
        pooled_from=positions[-1],
        share_at_position=[_rounded(c.share_at_position) for _, c in picked],  # type: ignore[union-attr]
        cumulative_exposure=[_rounded(c.cumulative_exposure_share) for _, c in picked],  # type: ignore[union-attr]
        population_share=[_round(g.metrics["population_share"].value) for g, _ in picked],
    )


def _share_chart(key: str, block: RankingBlock, slicing: list[str], shown: list[GroupEntry]) -> ShareChart | None:
    if len(shown) < 2:
        return None
    return ShareChart(
        key=key,
        title=f"Share of the top k and of all items by {key}",
        groups=[group_label(g.group, slicing) for g in shown],
        cutoffs=list(block.top_k),
        population_share=[_round(g.metrics["population_share"].value) for g in shown],
        top_k_share=[[_round(g.metrics[f"top_{k}_share"].value) for g in shown] for k in block.top_k],
    )


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _rounded(values: list[float | None]) -> list[float | None]:
    return [_round(v) for v in values]


def _summary_rows(
    summaries: list[RankingSummary], slicings: list[list[str]], notes: list[str], suppression: Suppression
) -> list[SummaryRow]:
    """One row per (metric, cut-off), one cell per slicing; reasons become numbered notes (each text once)."""
    keys = list(dict.fromkeys((s.metric, s.k) for s in summaries))
    found = {(s.metric, s.k, tuple(s.slicing)): s for s in summaries}
    rows = []
    for metric, k in keys:
        label = metric_label(metric) + (f" (k = {k})" if k is not None else "")
        cells = [
            _summary_cell(found.get((metric, k, tuple(slicing))), slicing, notes, suppression) for slicing in slicings
        ]
        rows.append(SummaryRow(label, cells))
    return rows


def _summary_cell(
    summary: RankingSummary | None, slicing: list[str], notes: list[str], suppression: Suppression
) -> SummaryCell:
    if summary is None:
        return SummaryCell("–", "–", "–", None)
    value = estimate_text(summary.value, summary.ci_low, summary.ci_high)
    note = None
    if summary.reason:
        reason = redact(summary.reason, slicing, suppression)  # a suppressed group is not named in a note
        if reason not in notes:
            notes.append(reason)
        note = notes.index(reason) + 1

    worst, best = suppression.name(slicing, summary.worst_group), suppression.name(slicing, summary.best_group)
    return SummaryCell(value_text=value, worst=worst, best=best, note=note)


def _glossary(block: RankingBlock) -> list[GlossaryRow]:
    k = block.judged_k
    return [
        GlossaryRow("Exposure of a position", _discount_text(block), "the attention a reader gives that position"),
        GlossaryRow("Population share", "items of the group / all items", "the group's share of everyone ranked"),
        GlossaryRow(
            f"Top-{k} share", f"items of the group at rank ≤ {k} / all items at rank ≤ {k}", "who holds the top"
        ),
        GlossaryRow(
            f"Top-{k} rate",
            f"items of the group at rank ≤ {k} / items of the group",
            "the chance a member of the group is placed in the top k of its list (a selection rate)",
        ),
        GlossaryRow("Mean exposure", "sum of the group's exposure / its items", "average attention per member"),
        GlossaryRow(
            "Exposure per relevance",
            "sum of the group's exposure / sum of its relevance",
            "attention per unit of merit; equal across groups when exposure is proportional to merit",
        ),
        GlossaryRow(
            "Exposure curve",
            "cumulative exposure of the group up to a position / all exposure",
            "ends at the group's exposure share; a fair ranking keeps it near the population share",
        ),
    ]
