"""Charts of the ranking report's pages, drawn with matplotlib from the view model (as tasks/render/charts.py).

Per slicing: the exposure curves (each group's cumulative share of all exposure along the rank positions, its
share of the items as a dotted level) and the top-k share chart (each group's share of the top k beside its
share of all items).
"""

from __future__ import annotations

import numpy as np

from fairgate.report.ranking import ExposureChart, RankingPages, ShareChart
from tasks.render.charts import MUTED, chart_figure, series_colour, set_margins, shorten, to_svg


def ranking_charts(pages: RankingPages) -> dict[str, str | None]:
    """Two charts per slicing, keyed as the template names them."""
    out: dict[str, str | None] = {}
    for page in pages.pages:
        if page.exposure_chart is not None:
            out[f"rank-exposure:{page.key}"] = exposure_chart(page.exposure_chart)
        if page.share_chart is not None:
            out[f"rank-share:{page.key}"] = share_chart(page.share_chart)
    return out


def exposure_chart(chart: ExposureChart) -> str | None:
    """Left: share of the items at each position; right: cumulative share of all exposure, to the end."""
    if not chart.groups:
        return None
    positions = np.array(chart.positions, dtype=float)
    with chart_figure(7.2, 2.5, ncols=2) as (fig, axes):
        share_ax, exposure_ax = axes
        for g, label in enumerate(chart.groups):
            colour = series_colour(g)
            share = np.array([np.nan if v is None else v for v in chart.share_at_position[g]])
            cumulative = np.array([np.nan if v is None else v for v in chart.cumulative_exposure[g]])
            # The last point pools every later position: drawn apart, as a marker, not joined to the curve.
            share_ax.plot(positions[:-1], share[:-1], color=colour, linewidth=1.1, label=shorten(label, 22))
            share_ax.plot(positions[-1:], share[-1:], color=colour, marker="o", markersize=2.5, linestyle="none")
            exposure_ax.plot(positions, cumulative, color=colour, linewidth=1.1)
            population = chart.population_share[g]
            if population is not None:
                share_ax.axhline(population, color=colour, linewidth=0.7, linestyle=":")
                exposure_ax.axhline(population, color=colour, linewidth=0.7, linestyle=":")
        share_ax.set_title("Share of the items at each position")
        share_ax.set_xlabel(f"rank position (last point: {chart.pooled_from} and later)")
        share_ax.set_ylim(0, 1)
        exposure_ax.set_title("Cumulative share of all exposure")
        exposure_ax.set_xlabel("rank position (dotted: share of all items)")
        exposure_ax.set_ylim(0, 1)
        # Beneath both charts, never over the curves (the largest group's runs along the top).
        ncols = min(4, len(chart.groups))
        rows = -(-len(chart.groups) // ncols)
        fig.legend(loc="lower center", fontsize=6, ncols=ncols, frameon=False)
        set_margins(fig, left=0.4, bottom=0.45 + 0.13 * rows, top=0.3, wspace=0.25)
        return to_svg(fig)


def share_chart(chart: ShareChart) -> str | None:
    """Grouped bars per group: share of all items, then share of each top k."""
    if not chart.groups:
        return None
    series = [("all items", chart.population_share)] + [
        (f"top {k}", shares) for k, shares in zip(chart.cutoffs, chart.top_k_share, strict=True)
    ]
    x = np.arange(len(chart.groups))
    bar = 0.8 / len(series)
    with chart_figure(7.2, 2.2) as (fig, axes):
        ax = axes[0]
        for s, (label, values) in enumerate(series):
            heights = [np.nan if v is None else v for v in values]
            colour = MUTED if s == 0 else series_colour(s - 1)
            ax.bar(x - 0.4 + bar * (s + 0.5), heights, bar * 0.92, color=colour, label=label)
        # An intersection's name a line per attribute: side by side, "White · Male (2)" ran into its neighbour.
        ax.set_xticks(x, [shorten(g, 30).replace(" · ", "\n") for g in chart.groups], fontsize=6)
        ax.set_ylabel("share")
        ax.set_title("Each group's share of all items and of the top positions")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=6, frameon=False)  # beside the bars
        set_margins(fig, left=0.5, bottom=0.45, top=0.3, right=0.9)
        return to_svg(fig)
