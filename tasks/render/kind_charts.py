"""Charts of the non-binary reports' own pages, drawn with matplotlib from their view models (as
tasks/render/charts.py).

One table dispatches on the report's task; each kind registers the function drawing its charts, which returns
SVG text by the chart's key in the template.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from fairgate.report import ReportView
from fairgate.report.multiclass import MulticlassPages, RateChart
from tasks.render.charts import MUTED, chart_figure, series_colour, set_margins, shorten, to_svg
from tasks.render.ranking_charts import ranking_charts
from tasks.render.regression_charts import regression_charts


def multiclass_charts(pages: MulticlassPages) -> dict[str, str | None]:
    """One chart per slicing: per-class rates by group, one panel per rate, intervals as error bars."""
    return {f"mc-rates:{page.key}": rate_chart(page.chart) for page in pages.pages if page.chart is not None}


def rate_chart(chart: RateChart) -> str | None:
    """Grouped bars: x the classes, one bar per group, one panel per rate (predicted share, TPR, FPR)."""
    if not chart.groups:
        return None
    n_groups = len(chart.groups)
    # The legend sits under the panels, three groups a row: room for a whole intersection's name
    # ("African-American · Female"), which four a row cut short.
    legend_rows = -(-n_groups // 3)
    width, height = 7.2, 2.0 + 0.16 * legend_rows
    positions = np.arange(len(chart.classes))
    bar = 0.8 / n_groups
    with chart_figure(width, height, ncols=len(chart.rates)) as (fig, axes):
        for ax, rate, per_group in zip(axes, chart.rates, chart.values, strict=True):
            for g, (label, values) in enumerate(zip(chart.groups, per_group, strict=True)):
                x = positions - 0.4 + bar * (g + 0.5)
                heights = [v[0] if v is not None else np.nan for v in values]
                low = [max(v[0] - v[1], 0.0) if v is not None else 0.0 for v in values]
                high = [max(v[2] - v[0], 0.0) if v is not None else 0.0 for v in values]
                ax.bar(x, heights, bar * 0.92, color=series_colour(g), label=shorten(label, 38))
                ax.errorbar(x, heights, yerr=[low, high], fmt="none", ecolor=MUTED, elinewidth=0.7, capsize=1.2)
            ax.set_xticks(positions, [shorten(c, 12) for c in chart.classes])
            ax.set_ylim(0, 1)
            ax.set_title(rate)
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower center", ncols=min(3, n_groups), fontsize=6.5)
        set_margins(fig, left=0.35, bottom=0.3 + 0.16 * legend_rows, top=0.35, wspace=0.25)
        return to_svg(fig)


#: Each kind's chart function, from its pages' view model.
KIND_CHARTS: dict[str, Callable[[Any], dict[str, str | None]]] = {
    "multiclass": multiclass_charts,
    "regression": regression_charts,
    "ranking": ranking_charts,
}


def kind_charts(view: ReportView) -> dict[str, str | None]:
    """The charts of a non-binary report's own pages (none for a binary report)."""
    if view.task not in KIND_CHARTS:  # binary's charts are the shared ones (tasks/render/charts.py)
        return {}
    return KIND_CHARTS[view.task](view.kind_pages)
