"""Charts of the ranking report's pages, drawn with matplotlib from the view model (as tasks/render/charts.py).

Per slicing: the exposure curves (each group's share of the items at each rank position and its cumulative
share of all exposure, its share of the items as a dotted level) and the top-k share chart (each group's share
of the top k beside its share of all items). Groups under :data:`SMALL_SHARE` of the items are drawn again on
their own scale (a second row of curves, a second panel of bars) beside the large ones: on the large groups'
0-to-1 scale a group of 2% of the items lies flat on the axis, whatever its ranking.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes

from fairgate.report.format import fmt_share
from fairgate.report.ranking import SMALL_SHARE, ExposureChart, RankingPages, ShareChart, small_groups
from tasks.render.charts import MUTED, chart_figure, series_colour, set_margins, shorten, to_svg

#: The ends a small groups' scale is rounded up to (a share; the panel's top is the first above every value).
_SCALE_TOPS = (0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0)
#: The small groups' panels say so in their titles.
SMALL_TITLE = f"Groups under {fmt_share(SMALL_SHARE)} of the items (own scale)"


def ranking_charts(pages: RankingPages) -> dict[str, str | None]:
    """Two charts per slicing, keyed as the template names them."""
    out: dict[str, str | None] = {}
    for page in pages.pages:
        if page.exposure_chart is not None:
            out[f"rank-exposure:{page.key}"] = exposure_chart(page.exposure_chart)
        if page.share_chart is not None:
            out[f"rank-share:{page.key}"] = share_chart(page.share_chart)
    return out


def scale_top(values: Sequence[float | None]) -> float:
    """The top of a small groups' panel: the first of :data:`_SCALE_TOPS` above every value drawn in it.

    >>> scale_top([0.004, None, 0.021]), scale_top([0.28]), scale_top([None])
    (0.05, 0.3, 1.0)
    """
    drawn = [v for v in values if v is not None and np.isfinite(v)]
    peak = max(drawn, default=1.0) * 1.05
    return next((top for top in _SCALE_TOPS if top >= peak), 1.0)


def exposure_chart(chart: ExposureChart) -> str | None:
    """Left: share of the items at each position; right: cumulative share of all exposure, to the end.

    A second row draws the small groups alone on their own scale (each panel's top in its title).
    """
    if not chart.groups:
        return None
    large, small = small_groups(chart.population_share)
    rows = [large, small] if small else [large]
    with chart_figure(7.2, 0.6 + 2.0 * len(rows), ncols=2, nrows=len(rows)) as (fig, axes):
        for row, members in enumerate(rows):
            share_ax, exposure_ax = axes[2 * row : 2 * row + 2]
            for g in members:
                _exposure_curves(share_ax, exposure_ax, chart, g, legend=True)
            values = [v for g in members for v in (*chart.share_at_position[g], chart.population_share[g])]
            cumulative = [v for g in members for v in (*chart.cumulative_exposure[g], chart.population_share[g])]
            tops = (scale_top(values), scale_top(cumulative)) if row else (1.0, 1.0)
            share_ax.set_title(SMALL_TITLE if row else "Share of the items at each position")
            exposure_ax.set_title(SMALL_TITLE if row else "Cumulative share of all exposure")
            share_ax.set_ylim(0, tops[0])
            exposure_ax.set_ylim(0, tops[1])
        pooled = any(shares[-1] is not None for shares in chart.share_at_position)  # no list that long: no point
        axes[-2].set_xlabel(f"rank position (last point: {chart.pooled_from} and later)" if pooled else "rank position")
        axes[-1].set_xlabel("rank position (dotted: share of all items)")
        # Beneath the charts, never over the curves (the largest group's runs along the top).
        ncols = min(4, len(chart.groups))
        legend_rows = -(-len(chart.groups) // ncols)
        fig.legend(loc="lower center", fontsize=6, ncols=ncols, frameon=False)
        set_margins(fig, left=0.4, bottom=0.45 + 0.13 * legend_rows, top=0.3, wspace=0.25, hspace=0.5)
        return to_svg(fig)


def _exposure_curves(share_ax: Axes, exposure_ax: Axes, chart: ExposureChart, g: int, *, legend: bool) -> None:
    """One group's two curves and its dotted share of the items, in its series colour."""
    colour = series_colour(g)
    positions = np.array(chart.positions, dtype=float)
    share = np.array([np.nan if v is None else v for v in chart.share_at_position[g]])
    cumulative = np.array([np.nan if v is None else v for v in chart.cumulative_exposure[g]])
    label = shorten(chart.groups[g], 22) if legend else None
    # The last point pools every later position: drawn apart, as a marker, not joined to the curve.
    share_ax.plot(positions[:-1], share[:-1], color=colour, linewidth=1.1, label=label)
    share_ax.plot(positions[-1:], share[-1:], color=colour, marker="o", markersize=2.5, linestyle="none")
    exposure_ax.plot(positions, cumulative, color=colour, linewidth=1.1)
    population = chart.population_share[g]
    if population is not None:
        share_ax.axhline(population, color=colour, linewidth=0.7, linestyle=":")
        exposure_ax.axhline(population, color=colour, linewidth=0.7, linestyle=":")


def share_chart(chart: ShareChart) -> str | None:
    """Grouped bars per group: share of all items, then share of each top k; small groups in a panel of their own."""
    if not chart.groups:
        return None
    series = [("all items", chart.population_share)] + [
        (f"top {k}", shares) for k, shares in zip(chart.cutoffs, chart.top_k_share, strict=True)
    ]
    large, small = small_groups(chart.population_share)
    panels = [large, small] if small else [large]
    ratios = [max(len(members), 3.0) for members in panels]
    with chart_figure(7.2, 2.2, ncols=len(panels), width_ratios=ratios) as (fig, axes):
        for p, (ax, members) in enumerate(zip(axes, panels, strict=True)):
            bar = 0.8 / len(series)
            x = np.arange(len(members))
            for s, (label, values) in enumerate(series):
                heights = np.array([np.nan if values[g] is None else values[g] for g in members], dtype=float)
                colour = MUTED if s == 0 else series_colour(s - 1)
                ax.bar(x - 0.4 + bar * (s + 0.5), heights, bar * 0.92, color=colour, label=label if p == 0 else None)
            # An intersection's name a line per attribute: side by side, "White · Male (2)" ran into its neighbour.
            ax.set_xticks(x, [shorten(chart.groups[g], 30).replace(" · ", "\n") for g in members], fontsize=6)
            if p:
                ax.set_ylim(0, scale_top([v for _, values in series for v in (values[g] for g in members)]))
                ax.set_title(SMALL_TITLE)
        axes[0].set_ylabel("share")
        axes[0].set_title("Share of all items and of the top k")
        fig.legend(loc="upper right", fontsize=6, ncols=len(series), frameon=False)
        set_margins(fig, left=0.5, bottom=0.45, top=0.45, right=0.12, wspace=0.25)
        return to_svg(fig)
