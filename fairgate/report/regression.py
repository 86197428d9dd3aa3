"""The report's view model of a ``task: regression`` audit: per-slicing group tables, residual and CDF plots.

Each slicing with attributes gets a section: its judged results; a table per group of mean prediction, mean
label, mean residual (prediction - label), MAE, RMSE and R^2 with their bootstrap intervals; the residual by
prediction decile per group (the data of a residual plot); the groups' prediction CDFs with the largest
Kolmogorov-Smirnov gap marked; and each group's distances to the rest with their error bounds. Groups the
document's small-cell suppression hides (``fairgate.report.suppress``) appear in no table and no plot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from fairgate.document.document import AuditDocument
from fairgate.document.groups import GroupEntry
from fairgate.document.regression import DistanceEntry, RegressionBlock, RegressionGroup
from fairgate.policy.outcomes import Outcomes
from fairgate.report.format import estimate_text, fmt, fmt_p, group_label, metric_label, round_number, slicing_key
from fairgate.report.model import Cell, GlossaryRow, ResultRow
from fairgate.report.results import result_row, with_units
from fairgate.report.sections import cell
from fairgate.report.selection import failure_labels, select_groups
from fairgate.report.suppress import Suppression

#: The group table's columns (document metric names) and their headings.
TABLE_COLUMNS = (
    ("mean_prediction", "Mean prediction"),
    ("mean_label", "Mean outcome"),
    ("mean_residual", "Mean residual"),
    ("mean_absolute_error", "MAE"),
    ("root_mean_squared_error", "RMSE"),
    ("r2_score", "R²"),
)
#: The report's terms (the judged metrics are described by the catalogue in the frame's glossary).
GLOSSARY = [
    GlossaryRow("Residual", "prediction − outcome", "positive: the model predicted more than the person reached"),
    GlossaryRow("Mean residual", "mean of (prediction − outcome) in a group", "the group's bias: 0 is unbiased"),
    GlossaryRow("MAE / RMSE", "mean |residual| / √(mean residual²)", "a group's typical error, in outcome units"),
    GlossaryRow("R²", "1 − Σ residual² / Σ (outcome − group mean)²", "share of the group's outcome variance explained"),
    GlossaryRow(
        "KS distance",
        "max over x of |F_group(x) − F_rest(x)|",
        "how far apart two groups' distributions of predictions are (0: identical, 1: disjoint)",
    ),
    GlossaryRow(
        "Wasserstein-1 distance",
        "∫ |F_group(x) − F_rest(x)| dx",
        "how far predictions would have to move to match the other distribution, in prediction units",
    ),
    GlossaryRow(
        "Bounded group loss",
        "max over groups of the loss",
        "no group's error may exceed the policy's limit (Agarwal, Dudik & Wu 2019)",
    ),
]
#: Series per plot: more are unreadable (the tables carry every group).
MAX_SERIES = 8
#: Up to this many groups the residual chart draws each one's interval as a band; more would overprint each other
#: (the table gives every group's interval).
BANDED_SERIES = 3


@dataclass(frozen=True)
class RegressionRow:
    """One group of a slicing's table; sizes and values hidden when suppressed."""

    label: str
    n_text: str
    suppressed: bool
    sufficient: bool
    is_reference: bool
    cells: list[Cell]


@dataclass(frozen=True)
class Series:
    """One group's line in a plot: x, y and (for residuals) the interval ends; rounded."""

    label: str
    n: int
    x: list[float]
    y: list[float]
    low: list[float] = field(default_factory=list)
    high: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class DistanceRow:
    """One group's prediction distribution against the rest's: KS and W1 with their histogram error bounds."""

    label: str
    against: str
    ks_text: str
    ks_bound_text: str
    ks_p_text: str
    w1_text: str
    w1_bound_text: str
    sufficient: bool


@dataclass(frozen=True)
class RegressionSection:
    """One slicing of a regression audit as the report shows it."""

    key: str
    anchor: str
    failed: bool
    results: list[ResultRow]
    column_labels: list[str]
    groups: list[RegressionRow]
    residuals: list[Series]  # mean residual by prediction decile, per visible group (largest first)
    cdfs: list[Series]  # prediction CDF per visible group (largest first)
    ks_mark: tuple[float, str] | None  # where the largest judged KS gap is, and whose it is
    distances: list[DistanceRow]  # largest KS distance first
    n_suppressed: int
    n_insufficient: int
    omitted: list[str]  # visible groups not drawn (beyond MAX_SERIES)
    banded: bool = True  # the residual chart draws interval bands (at most BANDED_SERIES groups)


@dataclass(frozen=True)
class RegressionView:
    """Everything the regression pages need."""

    sections: list[RegressionSection]
    residual_definition: str
    grid_text: str
    bins_text: str
    distance_method: str
    interval_note: str
    worst_losses: list[tuple[str, str, str, str]]  # metric, slicing, value with interval, group
    min_cell_size: int
    glossary: list[GlossaryRow] = field(default_factory=list)


def regression_pages(document: AuditDocument, suppression: Suppression) -> RegressionView:
    """The regression pages of a ``task: regression`` document (the report frame's entry point)."""
    view = regression_view(document, suppression)
    if view is None:
        raise ValueError("a regression document needs its regression block")
    return view


def regression_view(
    document: AuditDocument,
    suppression: Suppression,
    *,
    words: Outcomes | None = None,
    results: Sequence[ResultRow] | None = None,
) -> RegressionView | None:
    """The regression pages of a document (None for a document of another task)."""
    block = document.regression
    if block is None:
        return None
    rows = (
        list(results)
        if results is not None
        else with_units([result_row(r, suppression, words) for r in document.results], document)
    )
    sections = [
        _section(document, block, list(slicing), rows, suppression)
        for slicing in document.slicings
        if slicing  # the whole population has nothing to compare
    ]
    grid = block.grid
    source = "the policy's regression.histogram_range" if grid.range_from == "histogram_range" else "the data"
    return RegressionView(
        sections=sections,
        residual_definition=f"residual = {block.residual}: a positive mean residual means the model over-predicts",
        grid_text=(
            f"{grid.bins:,} equal bins of width {grid.width:.3g} over [{fmt(grid.low, 2)}, {fmt(grid.high, 2)}] "
            f"(range from {source})"
        ),
        bins_text=", ".join(fmt(e, 2) for e in block.prediction_bins),
        distance_method=block.distance_method,
        interval_note=(
            f"Group intervals: {int(document.confidence_level * 100)}% percentile intervals of a stratified cluster "
            f"bootstrap ({document.n_bootstrap:,} replicates over {block.bootstrap_buckets} hash buckets per cell)."
        ),
        min_cell_size=suppression.min_cell_size,
        glossary=GLOSSARY,
        worst_losses=[
            (
                metric_label(w.metric.removeprefix("worst_group_")),
                slicing_key(w.slicing),
                estimate_text(w.value, w.ci_low, w.ci_high, "()"),
                suppression.name(w.slicing, w.group),
            )
            for w in block.worst_group_losses
            if w.slicing
        ],
    )


def _group_rows(
    entries: list[GroupEntry], slicing: list[str], reference_group: dict[str, str] | None, suppression: Suppression
) -> list[RegressionRow]:
    """The slicing's table rows, largest group first; a suppressed group keeps its row with its values hidden."""
    rows = []
    for g in entries:
        hidden = suppression.hides(slicing, g.group)
        rows.append(
            RegressionRow(
                label=group_label(g.group, slicing),
                n_text=suppression.size_text(slicing, g.group, g.n),
                suppressed=hidden,
                sufficient=g.sufficient,
                is_reference=g.group == reference_group,
                cells=[cell(g.metrics.get(name)) if not hidden else Cell("") for name, _ in TABLE_COLUMNS],
            )
        )
    return rows


def _distance_row(d: DistanceEntry, slicing: list[str]) -> DistanceRow:
    """One group's distributional distances from everyone else, with their error bounds and p-value."""
    return DistanceRow(
        label=group_label(d.group, slicing),
        against="everyone else",
        ks_text=fmt(d.ks_distance),
        ks_bound_text=f"± {fmt(d.ks_error_bound, 4)}",
        ks_p_text=fmt_p(d.ks_p_value),
        w1_text=fmt(d.wasserstein_distance),
        w1_bound_text=f"± {fmt(d.wasserstein_error_bound, 4)}",
        sufficient=d.sufficient,
    )


def _section(
    document: AuditDocument,
    block: RegressionBlock,
    slicing: list[str],
    results: list[ResultRow],
    suppression: Suppression,
) -> RegressionSection:
    key = slicing_key(slicing)
    entries = sorted(
        (g for g in document.groups if g.slicing == slicing), key=lambda g: (-(g.n or 0.0), group_label(g.group))
    )
    rows = _group_rows(entries, slicing, _reference_of(document, slicing), suppression)
    visible = [g for g in entries if not suppression.hides(slicing, g.group)]
    # One selection rule for the charts: the groups named in a failure, then the largest.
    chosen = select_groups(
        visible,
        label=lambda g: group_label(g.group, slicing),
        size=lambda g: g.n,
        named=failure_labels(document.results, slicing),
        limit=MAX_SERIES,
    )
    drawn = [g for g in visible if any(g is c for c in chosen)]
    extra = {tuple(sorted(g.group.items())): g for g in block.groups if g.slicing == slicing}
    smallest = suppression.min_cell_size
    residuals = [
        _residual_series(g, extra.get(tuple(sorted(g.group.items()))), slicing, smallest) for g in drawn if g.sufficient
    ]
    cdfs = [_cdf_series(g, extra.get(tuple(sorted(g.group.items()))), block, slicing) for g in drawn]
    mine = [r for r in results if r.slicing == slicing]
    distances = [
        d
        for d in block.distances
        if d.slicing == slicing and d.against == "rest" and not suppression.hides(slicing, d.group)
    ]
    judged = [d for d in distances if d.sufficient and d.ks_distance is not None and d.ks_at is not None]
    worst = max(judged, key=lambda d: d.ks_distance or 0.0, default=None)
    return RegressionSection(
        key=key,
        anchor="regression-" + "-".join(slicing),
        failed=any(r.status == "fail" for r in mine),
        results=mine,
        column_labels=[label for _, label in TABLE_COLUMNS],
        groups=rows,
        residuals=[s for s in residuals if s is not None],
        cdfs=[s for s in cdfs if s is not None],
        ks_mark=(worst.ks_at, group_label(worst.group, slicing)) if worst and worst.ks_at is not None else None,
        distances=[_distance_row(d, slicing) for d in sorted(distances, key=lambda d: -(d.ks_distance or 0.0))],
        n_suppressed=sum(r.suppressed for r in rows),
        n_insufficient=sum(not r.sufficient and not r.suppressed for r in rows),
        omitted=[group_label(g.group, slicing) for g in visible if not any(g is d for d in drawn)],
        banded=sum(s is not None for s in residuals) <= BANDED_SERIES,
    )


def _reference_of(document: AuditDocument, slicing: list[str]) -> dict[str, str] | None:
    """The slicing's reference group: the one its comparisons were made against (None without comparisons)."""
    found = next((c.reference for c in document.comparisons if c.slicing == slicing), None)
    return dict(found) if found is not None else None


def _residual_series(entry: object, extra: RegressionGroup | None, slicing: list[str], smallest: int) -> Series | None:
    """A group's mean residual per prediction decile; deciles under the minimum cell size are not drawn."""
    if extra is None:
        return None
    bins = [
        b
        for b in extra.binned
        if b.mean_prediction is not None and b.mean_residual is not None and b.n >= max(smallest, 2)
    ]
    if not bins:
        return None
    n = getattr(entry, "n", None) or 0.0
    return Series(
        label=group_label(extra.group, slicing),
        n=round(n),
        x=[_r(b.mean_prediction) for b in bins],
        y=[_r(b.mean_residual) for b in bins],
        low=[_r(b.ci_low if b.ci_low is not None else b.mean_residual) for b in bins],
        high=[_r(b.ci_high if b.ci_high is not None else b.mean_residual) for b in bins],
    )


def _cdf_series(
    entry: object, extra: RegressionGroup | None, block: RegressionBlock, slicing: list[str]
) -> Series | None:
    if extra is None or all(v is None for v in extra.cdf):
        return None
    n = getattr(entry, "n", None) or 0.0
    points = [(x, v) for x, v in zip(block.cdf_points, extra.cdf, strict=True) if v is not None]
    return Series(
        label=group_label(extra.group, slicing), n=round(n), x=[_r(x) for x, _ in points], y=[_r(v) for _, v in points]
    )


def _r(value: float | None) -> float:
    rounded = round_number(value, 5)
    return 0.0 if rounded is None else rounded
