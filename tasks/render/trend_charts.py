"""The trend's small multiples: one chart per judged metric, its slicings' values and intervals per run.

Drawn with matplotlib from the view model (``fairgate.report.trend``) and returned as SVG text, like
``tasks/render/charts.py``: text stays text, so the PDF is searchable.
"""

from __future__ import annotations

from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display: charts are files, never windows

import textwrap

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.lines import Line2D

from fairgate.report.trend_model import TrendPanel, TrendView
from tasks.render.charts import CHART_STYLE, FAIL, INK, PALETTE, to_svg

WIDTH, HEIGHT = 1.6, 1.5  # inches: five charts side by side on an A4 page (one row for a usual policy), one legend
TITLE_CHARS = 22  # a metric name wraps to fit the narrow chart

# The small charts' style (smaller type than the audit report's charts, a horizontal grid only).
TREND_STYLE: dict[str, Any] = {
    **CHART_STYLE,
    "font.size": 7.0,
    "axes.titlesize": 8.0,
    "axes.grid.axis": "y",
    "legend.fontsize": 6.3,
}


def trend_charts(trend: TrendView | None) -> dict[str, str]:
    """SVG text of each metric's chart (``trend:<metric>``) and of their shared legend (``trend:legend``); none
    for a first run (nothing to compare)."""
    if trend is None or trend.first_run:
        return {}
    charts = {f"trend:{panel.key}": trend_chart(panel) for panel in trend.panels if panel.lines}
    if charts:
        charts["trend:legend"] = legend_chart(trend.legend)
    return charts


def legend_chart(slicings: list[str]) -> str:
    """One legend for every trend chart: a slicing has the same colour in each."""
    handles = [
        Line2D([], [], color=PALETTE[i % len(PALETTE)], marker="o", markersize=3.2, linewidth=0.9, label=label)
        for i, label in enumerate(slicings)
    ]
    handles.append(Line2D([], [], color=INK, linestyle="--", linewidth=0.9, label="threshold"))
    handles.append(
        Line2D([], [], color=FAIL, marker="o", markerfacecolor="none", linestyle="", markersize=5.5, label="failed")
    )
    columns = min(len(handles), 5)
    rows = -(-len(handles) // columns)
    with plt.rc_context(TREND_STYLE):  # type: ignore[arg-type]
        fig = plt.figure(figsize=(7.0, 0.12 + 0.17 * rows))
        try:
            fig.legend(handles=handles, loc="center left", ncol=columns, handlelength=1.6, columnspacing=1.4)
            return to_svg(fig)
        finally:
            plt.close(fig)


def trend_chart(panel: TrendPanel) -> str:
    """One metric over the runs: per slicing a point and interval per run, the threshold as a dashed step,
    and a red ring where that run failed the result."""
    runs = len(panel.run_labels)
    x = np.arange(runs, dtype=float)
    spread = min(0.3, 0.08 * len(panel.lines))  # slicings side by side at each run, so intervals do not overlap
    offsets = np.linspace(-spread / 2, spread / 2, len(panel.lines)) if len(panel.lines) > 1 else [0.0]
    with plt.rc_context(TREND_STYLE):  # type: ignore[arg-type]
        fig, ax = plt.subplots(figsize=(WIDTH, HEIGHT))
        try:
            _threshold(ax, x, panel.thresholds)
            for line, offset in zip(panel.lines, offsets, strict=True):
                colour = PALETTE[line.colour % len(PALETTE)]
                at = [(float(x[j] + offset), m.value, m) for j, m in enumerate(line.marks) if m and m.value is not None]
                if not at:
                    continue
                ax.plot(
                    [p for p, _, _ in at],
                    [v for _, v, _ in at],
                    color=colour,
                    linewidth=0.9,
                    marker="o",
                    markersize=3.2,
                    label=line.slicing_label,
                    zorder=3,
                )
                for p, _, m in at:
                    if m.ci_low is not None and m.ci_high is not None:
                        ax.vlines(p, m.ci_low, m.ci_high, color=colour, linewidth=1.0, alpha=0.75, zorder=2)
                failed = [(p, v) for p, v, m in at if m.failed]
                if failed:
                    ax.scatter(
                        [p for p, _ in failed],
                        [v for _, v in failed],
                        s=38,
                        facecolors="none",
                        edgecolors=FAIL,
                        linewidths=1.1,
                        zorder=4,
                    )
            ax.set_xticks(x, panel.run_labels)
            ax.set_xlim(-0.5, runs - 0.5)
            direction = "higher is better" if panel.higher_is_better else "lower is better"
            title = textwrap.fill(panel.metric_label, TITLE_CHARS)
            ax.set_title(f"{title}\n{direction}", fontsize=6.8, linespacing=1.1)
            ax.tick_params(labelsize=5.8)
            # Room for a three-line title whatever the metric, so the five plots' axes line up.
            fig.subplots_adjust(left=0.2, right=0.97, bottom=0.13, top=0.72)
            return to_svg(fig)
        finally:
            plt.close(fig)


def _threshold(ax: Any, x: np.ndarray, thresholds: list[float | None]) -> None:
    """The threshold each run judged against, a dashed segment per run (it may change with the policy)."""
    label: str | None = "threshold"
    for p, t in zip(x, thresholds, strict=True):
        if t is not None:
            # Above the grid (z 1.5), below the points.
            ax.hlines(t, p - 0.45, p + 0.45, color=INK, linestyle="--", linewidth=0.9, label=label, zorder=2.5)
            label = None
