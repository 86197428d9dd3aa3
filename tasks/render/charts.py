"""Charts for the report, drawn with matplotlib from the view model and returned as SVG text.

They read only the view model, where small cells are already suppressed, so no chart can show a group (or a
calibration bin) under the minimum cell size. Text stays text in the SVG (``svg.fonttype: none``): the PDF is
searchable and the fonts are the report's local ones.
"""

from __future__ import annotations

import io
import re
import textwrap
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display: charts are files, never windows

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.cm import ScalarMappable
from matplotlib.colors import LinearSegmentedColormap
from matplotlib.figure import Figure

from fairgate.report import Breakdown, CurveSet, Heatmap, SlicingSection
from fairgate.report.figures import SPARSE_BINS, chart_rows, threshold_line
from fairgate.report.model import Cell, Curve

# Okabe-Ito: distinguishable with the common colour-vision deficiencies, and in greyscale print.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]
INK, MUTED, GRID, FAIL, PASS = "#1f2933", "#6b7280", "#e5e7eb", "#b42318", "#067647"
MAX_SERIES = 8  # curves per chart: more are unreadable; the tables carry the rest
MAX_BARS = 24

#: The look of every chart (the trend charts' TREND_STYLE is this with smaller type).
CHART_STYLE: dict[str, Any] = {
    "svg.fonttype": "none",
    "svg.hashsalt": "fairgate",  # stable element ids: identical input gives identical SVG
    "font.family": "DejaVu Sans",
    "font.size": 7.5,
    "axes.edgecolor": MUTED,
    "axes.labelcolor": INK,
    "axes.titlesize": 8.5,
    "axes.titleweight": "bold",
    "axes.titlelocation": "left",
    # The title on the axes' top edge, said here: left unset, matplotlib measures every tick label of the axes
    # to see whether the title must clear labels at the top (charts have none there) -- a sixth of a chart's time.
    "axes.titley": 1.0,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": GRID,
    "grid.linewidth": 0.6,
    "xtick.color": MUTED,
    "ytick.color": MUTED,
    "legend.frameon": False,
    "legend.fontsize": 6.8,
    "figure.dpi": 100,
}


@contextmanager
def chart_figure(
    width: float, height: float, ncols: int = 1, *, nrows: int = 1, width_ratios: list[float] | None = None
) -> Iterator[tuple[Figure, list[Axes]]]:
    """A figure of ``nrows`` × ``ncols`` axes in the report's style (row by row), closed when the block ends."""
    with plt.rc_context(CHART_STYLE):  # type: ignore[arg-type]
        fig, axes = plt.subplots(nrows, ncols, figsize=(width, height), squeeze=False, width_ratios=width_ratios)
        try:
            yield fig, [ax for row in axes for ax in row]
        finally:
            plt.close(fig)


def to_svg(fig: Figure, *, tight: bool = False) -> str:
    """The figure as SVG text. Charts set their margins themselves: a "tight" bounding box costs a second
    draw (about 40% of the rendering time), so only the one-off breakdown chart uses it."""
    buffer = io.StringIO()
    fig.savefig(
        buffer,
        format="svg",
        bbox_inches="tight" if tight else None,
        metadata={"Date": None, "Creator": "fairgate"},
    )
    text = buffer.getvalue()
    return lean_svg(text[text.index("<svg") :])  # drop the XML prolog and doctype: the SVG is embedded


_METADATA = re.compile(r"\s*<metadata>.*?</metadata>", re.DOTALL)
_STYLE_ATTRIBUTE = re.compile(r'\bstyle="([^"]*)"')
_PIXEL_FONT_SIZE = re.compile(r'font-size="([0-9.]+)px"')
_UNIVERSAL_RULE = re.compile(r'<style type="text/css">\*\{([^{}<]*)\}</style>')


def _presentation_attributes(declarations: str) -> str:
    pairs = (part.split(":", 1) for part in declarations.split(";") if ":" in part)
    return " ".join(f'{name.strip()}="{value.strip()}"' for name, value in pairs)


def lean_svg(svg: str) -> str:
    """The same drawing in less for a renderer to parse: no RDF metadata; every ``style="a: b; c: d"`` written as
    the presentation attributes ``a="b" c="d"`` (WeasyPrint parses a style attribute as CSS, an attribute not);
    matplotlib's one ``*{stroke-linejoin; stroke-linecap}`` rule as inherited attributes of the root, where an
    element's own attribute still overrides them (a stylesheet rule would beat a presentation attribute, so an SVG
    with any other stylesheet keeps its style attributes).

    >>> print(lean_svg('<svg a="1"><defs><style type="text/css">*{stroke-linejoin: round}</style></defs>'
    ...                '<path style="fill: #fff; stroke-width: 0.8"/><text style="font-size: 7.5px">x</text></svg>'))
    ... # doctest: +NORMALIZE_WHITESPACE
    <svg font-size="16" stroke-linejoin="round" a="1"><defs></defs><path fill="#fff" stroke-width="0.8"/><text
    font-size="7.5">x</text></svg>
    """
    svg = _METADATA.sub("", svg, count=1)
    rule = _UNIVERSAL_RULE.search(svg)
    if rule is not None:
        svg = svg[: rule.start()] + svg[rule.end() :]
        svg = svg.replace("<svg ", f"<svg {_presentation_attributes(rule.group(1))} ", 1)
    if "<style" in svg:
        return svg
    svg = _STYLE_ATTRIBUTE.sub(lambda match: _presentation_attributes(match.group(1)), svg)
    # Font sizes as plain numbers (user units are pixels), and the initial 16 px said on the root: WeasyPrint
    # reads a number at once, where "7.5px" or its default "1em" costs it a failed float() on every node.
    svg = _PIXEL_FONT_SIZE.sub(r'font-size="\1"', svg)
    svg = _IDENTITY_ROTATION.sub("", svg)
    return _unwrap_groups(svg).replace("<svg ", '<svg font-size="16" ', 1)


_IDENTITY_ROTATION = re.compile(r' transform="rotate\(-?0 [-0-9.e]+ [-0-9.e]+\)"')
_REFERENCE = re.compile(r"#([^\"'()\s]+)")
_GROUP_TAG = re.compile(r'\s*<g((?: id="[^"]*")?)>|\s*<g\b[^>]*>|\s*</g>')


def _unwrap_groups(svg: str) -> str:
    """The same drawing without matplotlib's bare groups: every artist sits in a ``<g id="...">`` (a tick in
    three), which draws nothing of its own but costs a renderer a graphics state per group. A group whose only
    attribute is an id nobody refers to gives its children its place; an axes keeps its group (its id names the
    axes), and so does every group with another attribute (a clip, a transform).

    >>> _unwrap_groups('<svg><g id="a"><g id="axes_1"><g><path/></g></g></g><g clip-path="x"><path/></g></svg>')
    '<svg><g id="axes_1"><path/></g><g clip-path="x"><path/></g></svg>'
    """
    referenced = set(_REFERENCE.findall(svg))  # ids named elsewhere (url(#...), href="#...")
    kept: list[bool] = []
    parts: list[str] = []
    start = 0
    for match in _GROUP_TAG.finditer(svg):
        tag = match.group(0)
        if tag.endswith("</g>"):
            keep = kept.pop()
        elif tag.endswith("/>"):
            continue
        else:
            name = (match.group(1) or "")[5:-1]
            keep = match.group(1) is None or name.startswith("axes_") or name in referenced
            kept.append(keep)
        parts.append(svg[start : match.start()])
        if keep:
            parts.append(tag)
        start = match.end()
    parts.append(svg[start:])
    return "".join(parts)


def set_margins(
    fig: Figure,
    *,
    left: float,
    bottom: float,
    top: float = 0.3,
    right: float = 0.12,
    wspace: float | None = None,
    hspace: float | None = None,
) -> None:
    """Margins in inches (labels need absolute room, whatever the figure's size)."""
    width, height = fig.get_size_inches()
    fig.subplots_adjust(
        left=min(0.6, left / width),
        right=1 - right / width,
        bottom=min(0.6, bottom / height),
        top=1 - top / height,
        wspace=wspace,
        hspace=hspace,
    )


def _label_inches(labels: list[str], size: float = 7.5) -> float:
    """Rough width of the longest tick label at ``size`` points (DejaVu Sans is about 0.6 em per char)."""
    return max((len(label) for label in labels), default=0) * size * 0.6 / 72


def set_wrapped_title(ax: Any, text: str, width_in: float) -> float:
    """Set a left-aligned title wrapped to the figure's width; returns the top margin it needs (inches)."""
    lines = textwrap.wrap(text, max(20, int(width_in * 13)))
    ax.set_title("\n".join(lines))
    return 0.18 + 0.15 * len(lines)


def shorten(label: str, width: int = 28) -> str:
    """``label`` cut to ``width`` characters with an ellipsis (a chart's axis or legend has no room for more)."""
    return label if len(label) <= width else label[: width - 1] + "…"


#: ROC and calibration charts sit side by side under a group table: small, square-ish, legend inside.
CURVE_SIZE = (3.4, 2.35)
#: The curve charts' y-axis titles wrap to fit the figure's height (2.35 in at 6.5 pt: some 40 characters a
#: line), in up to three lines, with the left margin to hold them: a longer title was clipped at both ends.
Y_LABEL_WIDTH = 40
Y_LABEL_MARGIN = 0.68
#: The x-axis titles wrap to the axes' width (3.4 in less the margins, at 6.5 pt): centred under the axes, a
#: wider line ran past the figure's right edge and was clipped ("... among those who reoffen").
X_LABEL_WIDTH = int((CURVE_SIZE[0] - Y_LABEL_MARGIN - 0.12) * 72 / (6.5 * 0.6)) - 4


def _x_label(ax: Axes, label: str, default: str) -> float:
    """Set a curve chart's x-axis title wrapped to the axes' width; returns the bottom margin it needs (inches)."""
    text = _axis(label, default, X_LABEL_WIDTH)
    ax.set_xlabel(text, fontsize=6.5)
    return 0.28 + 0.12 * (text.count("\n") + 1)


def roc_chart(curves: CurveSet) -> str | None:
    """ROC curves by group (largest groups first), with the chance diagonal."""
    if not curves.curves:
        return None
    with chart_figure(*CURVE_SIZE) as (fig, (ax,)):
        ax.plot([0, 1], [0, 1], color=MUTED, linestyle=":", linewidth=0.8)
        for i, curve in enumerate(curves.curves[:MAX_SERIES]):
            ax.plot(
                curve.x, curve.y, color=series_colour(i), linewidth=1.3, label=f"{shorten(curve.label)} (n={curve.n:,})"
            )
        ax.set(xlim=(0, 1), ylim=(0, 1.01))
        bottom = _x_label(ax, curves.x_label, "False positive rate")
        ax.set_ylabel(_axis(curves.y_label, "True positive rate", Y_LABEL_WIDTH), fontsize=6.5)
        top = set_wrapped_title(ax, f"ROC by {curves.key}", CURVE_SIZE[0])
        ax.legend(loc="lower right")
        set_margins(fig, left=Y_LABEL_MARGIN, bottom=bottom, top=top)
        return to_svg(fig)


def _axis(label: str, default: str, width: int = 62) -> str:
    """An axis title in the policy's outcome words (the view's), wrapped to fit beside a small chart."""
    return "\n".join(textwrap.wrap(label or default, width))


def calibration_chart(curves: CurveSet) -> str | None:
    """Reliability curves by group: observed favourable fraction against mean score, per score bin.

    A group with fewer bins than a curve needs is drawn as open dots without a line and named as such in the
    legend; groups left out are named in the caption (the view model's ``omitted``), so none disappears.
    """
    if not curves.curves:
        return None
    with chart_figure(*CURVE_SIZE) as (fig, (ax,)):
        ax.plot([0, 1], [0, 1], color=MUTED, linestyle=":", linewidth=0.8, label="perfect calibration")
        for i, curve in enumerate(curves.curves[:MAX_SERIES]):
            _reliability_line(ax, curve, series_colour(i))
        ax.set(xlim=(0, 1), ylim=(0, 1.01))
        bottom = _x_label(ax, curves.x_label, "Mean score of the favourable outcome")
        ax.set_ylabel(_axis(curves.y_label, "Observed fraction favourable", Y_LABEL_WIDTH), fontsize=6.5)
        top = set_wrapped_title(ax, f"Calibration by {curves.key}", CURVE_SIZE[0])
        ax.legend(loc="upper left")
        set_margins(fig, left=Y_LABEL_MARGIN, bottom=bottom, top=top)
        return to_svg(fig)


def _reliability_line(ax: Axes, curve: Curve, colour: str) -> None:
    if len(curve.x) < SPARSE_BINS:
        label = f"{shorten(curve.label)} (n={curve.n:,}, {len(curve.x)} bin{'s' if len(curve.x) > 1 else ''})"
        ax.plot(
            curve.x,
            curve.y,
            linestyle="none",
            marker="o",
            markersize=4,
            markerfacecolor="white",
            markeredgecolor=colour,
            label=label,
        )
        return
    ax.plot(curve.x, curve.y, color=colour, linewidth=1.2, marker="o", markersize=2.5, label=shorten(curve.label))


def series_colour(i: int) -> str:
    """The colour of the ``i``-th series: the palette in order, again from its start after its last colour."""
    return PALETTE[i % len(PALETTE)]


_RATE_PANELS = (
    ("selection_rate", "Selection rate"),
    ("false_positive_rate", "False positive rate"),
    ("false_negative_rate", "False negative rate"),
)


def rates_chart(section: SlicingSection, phrases: Mapping[str, str] | None = None) -> str | None:
    """Selection and error rates by group with CI bars and the policy threshold line, one panel per rate.

    ``phrases``: what each rate counts in the policy's outcome words (ReportView.rate_phrases), under its title.
    """
    panels = [(m, t) for m, t in _RATE_PANELS if m in section.metric_names]
    titles = {m: "\n".join([t, *textwrap.wrap((phrases or {}).get(m, ""), 30)]) for m, t in panels}
    lines = max((title.count("\n") for title in titles.values()), default=0)
    rows = chart_rows(section, MAX_BARS)
    if not panels or not rows:
        return None
    # A group left out of the judgement (under the minimum group size) is starred and grey, as in the tables.
    labels = [shorten(g.label, 22) + ("" if g.sufficient else " *") for g in rows]
    with chart_figure(7.2, 0.62 + 0.155 * len(rows) + 0.14 * lines, ncols=len(panels)) as (fig, axes):
        for ax, (metric, _) in zip(axes, panels, strict=True):
            cells = [g.cells[section.metric_names.index(metric)] for g in rows]
            _rate_panel(ax, cells, titles[metric], [not g.sufficient for g in rows])
            _draw_threshold(ax, threshold_line(section, metric))
            ax.set_yticklabels(labels if ax is axes[0] else [])
            if ax is axes[0]:
                for tick, out in zip(ax.get_yticklabels(), rows, strict=True):
                    tick.set_color(MUTED if not out.sufficient else INK)
        set_margins(fig, left=0.2 + _label_inches(labels), bottom=0.42, top=0.25 + 0.14 * lines, wspace=0.12)
        return to_svg(fig)


def _rate_panel(ax: Axes, cells: list[Cell], title: str, left_out: list[bool]) -> None:
    """One rate by group: the point and its interval (groups top to bottom, as in the table); a group left out
    of the judgement drawn as an open grey point."""
    y = np.arange(len(cells))

    def arm(c: Cell, end: float | None) -> float:
        return 0.0 if end is None or c.value is None else abs(end - c.value)

    for out in (False, True):
        idx = [i for i, o in enumerate(left_out) if o is out]
        if not idx:
            continue
        x = np.array([np.nan if cells[i].value is None else cells[i].value for i in idx])
        xerr = [[arm(cells[i], cells[i].ci_low) for i in idx], [arm(cells[i], cells[i].ci_high) for i in idx]]
        ax.errorbar(
            x,
            y[idx],
            xerr=xerr,
            fmt="o",
            color=MUTED if out else PALETTE[0],
            markerfacecolor="white" if out else PALETTE[0],
            ecolor="#cbd5e1" if out else "#94a3b8",
            elinewidth=1.4,
            capsize=0,
            markersize=3.2,
        )
    ax.set_xlim(0, 1)
    ax.set_xticks([0, 0.25, 0.5, 0.75, 1])
    ax.set_xticklabels(["0", "", "0.5", "", "1"])
    ax.set_ylim(len(cells) - 0.5, -0.5)
    ax.set_yticks(y)
    ax.set_title(title, fontsize=7.5)
    ax.grid(axis="y", visible=False)


def _draw_threshold(ax: Axes, line: tuple[float, str] | None) -> None:
    """The threshold as a dashed line; its rule is said under the axis, where it covers no point or label."""
    if line is None or not 0 <= line[0] <= 1:
        return
    ax.axvline(line[0], color=FAIL, linestyle="--", linewidth=0.9)
    ax.set_xlabel(f"dashed: threshold, {line[1]}", fontsize=5.8, color=FAIL)


#: Heatmaps share one scale: rates from 0 to 1, light to dark, so equal colours mean equal rates everywhere.
HEATMAP_COLOURS = LinearSegmentedColormap.from_list("fairgate", ["#f0f9ff", "#0072B2", "#0b2545"]).with_extremes(
    bad="#d1d5db"
)
_COLUMN_WRAP = 12  # characters per line of a column label
#: Steps of a heatmap's colour bar (the cells keep the map's 256 colours): 64 vector steps of under half a
#: millimetre read as a smooth gradient, and cost WeasyPrint a quarter of the 256 it drew before.
COLOUR_BAR_STEPS = 64


def heatmap_chart(heatmap: Heatmap, min_cell_size: int, phrases: Mapping[str, str] | None = None) -> str | None:
    """One rate over an intersection on the shared 0-1 scale; suppressed cells grey with "<k", undefined "–",
    groups left out of the judgement starred. Column labels wrap (and turn when there are many)."""
    if not heatmap.row_labels or not heatmap.col_labels:
        return None
    rows, cols = len(heatmap.row_labels), len(heatmap.col_labels)
    data = np.array([[np.nan if v is None else v for v in row] for row in heatmap.values], dtype=float)
    row_labels = [shorten(r, 22) for r in heatmap.row_labels]
    col_labels = ["\n".join(textwrap.wrap(shorten(c, 3 * _COLUMN_WRAP), _COLUMN_WRAP)) for c in heatmap.col_labels]
    rotated = cols > 6
    left = 0.2 + _label_inches(row_labels)
    bottom = 0.2 + (
        _label_inches([c.replace("\n", " ") for c in col_labels]) * 0.72
        if rotated
        else 0.14 * max(c.count("\n") + 1 for c in col_labels)
    )
    width = min(7.2, left + max(0.62 * cols, 2.0) + 1.0)  # + colour bar
    height = min(9.0, bottom + 0.45 + 0.24 * rows)
    with chart_figure(width, height) as (fig, (ax,)):
        # pcolormesh, not imshow: one vector quad per cell, where imshow would embed a raster image.
        mesh = ax.pcolormesh(
            np.ma.masked_invalid(data), cmap=HEATMAP_COLOURS, vmin=0, vmax=1, edgecolors="white", linewidth=0.6
        )
        _heatmap_axes(ax, row_labels, col_labels, rotated)
        if rows * cols <= 60:  # values in the cells while they stay legible (and cheap to draw)
            _heatmap_values(ax, heatmap, data, min_cell_size)
        else:  # too many cells for text: groups left out of the judgement get a dot (one collection: cheap)
            _excluded_dots(ax, heatmap)
        title = f"{heatmap.metric_label} over {heatmap.key}"
        if phrase := (phrases or {}).get(heatmap.base_metric):  # the rate in the policy's outcome words
            title = f"{title}: {phrase}"
        head = set_wrapped_title(ax, title, width - 1.0)
        set_margins(fig, left=left, bottom=bottom, top=head, right=0.1)
        _colour_bar(fig, mesh, ax, heatmap.metric_label)
        return to_svg(fig)


def _heatmap_axes(ax: Axes, row_labels: list[str], col_labels: list[str], rotated: bool) -> None:
    ax.grid(False)
    ax.set_xlim(0, len(col_labels))
    ax.set_ylim(len(row_labels), 0)
    ax.set_xticks(np.arange(len(col_labels)) + 0.5)
    ax.set_xticklabels(
        [c.replace("\n", " ") for c in col_labels] if rotated else col_labels,
        rotation=45 if rotated else 0,
        ha="right" if rotated else "center",
        rotation_mode="anchor" if rotated else "default",
        fontsize=6.5,
    )
    ax.set_yticks(np.arange(len(row_labels)) + 0.5)
    ax.set_yticklabels(row_labels)
    ax.tick_params(length=0)


def _heatmap_values(ax: Axes, heatmap: Heatmap, data: np.ndarray, min_cell_size: int) -> None:
    for i in range(data.shape[0]):
        for j in range(data.shape[1]):
            if heatmap.suppressed[i][j]:
                # Not "<k": a cell hidden so that a small one cannot be derived may be larger.
                text, color = "·", MUTED
            elif np.isnan(data[i, j]):
                text, color = "–", MUTED
            else:
                text = f"{data[i, j]:.2f}"
                color = "white" if data[i, j] > 0.6 else INK
                if heatmap.excluded and heatmap.excluded[i][j]:
                    text += "*"
            ax.text(j + 0.5, i + 0.5, text, ha="center", va="center", fontsize=6.3, color=color)


def _excluded_dots(ax: Axes, heatmap: Heatmap) -> None:
    cells = [(j + 0.5, i + 0.5) for i, row in enumerate(heatmap.excluded) for j, out in enumerate(row) if out]
    if cells:
        xs, ys = zip(*cells, strict=True)
        ax.scatter(xs, ys, s=9, color=FAIL, marker="o", edgecolors="white", linewidths=0.5)


def _colour_bar(fig: Figure, mesh: Any, ax: Axes, label: str) -> None:
    bar = ScalarMappable(norm=mesh.norm, cmap=HEATMAP_COLOURS.resampled(COLOUR_BAR_STEPS))
    colorbar = fig.colorbar(bar, ax=ax, shrink=0.8, pad=0.02)
    colorbar.set_label(label, fontsize=6.5)
    if colorbar.solids is not None:
        colorbar.solids.set_rasterized(False)  # matplotlib rasterizes long colour bars; keep vectors
        colorbar.solids.set_edgecolor("face")  # no hairlines between the bar's vector steps


def share_text(share: float | None) -> str:
    """A group's share of the people as a whole percentage; a small non-empty group reads "<1%", never "0%".

    >>> share_text(0.5697), share_text(0.0044), share_text(0.0), share_text(None)
    ('57%', '<1%', '0%', '–')
    """
    if share is None:
        return "–"
    return "<1%" if 0 < share < 0.005 else f"{share:.0%}"


def breakdown_chart(breakdowns: list[Breakdown], min_cell_size: int) -> str | None:
    """Who was evaluated: group sizes per attribute; suppressed groups are shown as such, without a bar."""
    items = [b for b in breakdowns if b.labels]
    if not items:
        return None
    tallest = max(len(b.labels) for b in items)
    with chart_figure(7.2, 0.5 + 0.12 * min(tallest, MAX_BARS), ncols=len(items)) as (fig, axes):
        for ax, b in zip(axes, items, strict=True):
            labels = b.labels[:MAX_BARS]
            counts = [c if c is not None else 0 for c in b.counts[:MAX_BARS]]
            y = np.arange(len(labels))
            ax.set_axisbelow(True)  # the grid behind the bars and their texts
            ax.barh(y, counts, color=PALETTE[0], height=0.65)
            top = max(counts) if counts and max(counts) > 0 else 1
            for yi, count, share in zip(y, b.counts[:MAX_BARS], b.shares[:MAX_BARS], strict=True):
                # Not "<k": a group hidden with a small one (complementary suppression) may be larger.
                text = "suppressed" if count is None else f"{count:,} ({share_text(share)})"
                inside = count is not None and count >= top * 0.7  # a long bar carries its text: no overprint
                ax.text(
                    (count or 0) - top * 0.02 if inside else (count or 0) + top * 0.02,
                    float(yi),
                    text,
                    va="center",
                    ha="right" if inside else "left",
                    fontsize=6.3,
                    color="white" if inside else INK,
                )
            ax.set_yticks(y)
            ax.set_yticklabels([shorten(label, 20) for label in labels])
            ax.set_ylim(len(labels) - 0.5, -0.5)
            ax.set_xlim(0, top * 1.45)
            ax.set_title(b.attribute)
            ax.grid(axis="y", visible=False)
            ax.tick_params(axis="x", labelsize=6)
        fig.subplots_adjust(wspace=0.75)  # room for long group names beside the previous panel's bar labels
        return to_svg(fig, tight=True)
