"""The fairness-accuracy frontier of group thresholds as an SVG chart for the report.

Reads the thresholds document (``tasks.mitigation.thresholds.ThresholdMitigation.to_dict()``): the sweep, its Pareto
points, the audited model and the chosen (fitted) point; the policy threshold of the bounded metric is drawn
as a vertical line, so the reader sees where the frontier crosses into "pass" and what that costs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fairgate.report.format import metric_label
from tasks.render.charts import FAIL, INK, MUTED, PALETTE, PASS, chart_figure, set_margins, set_wrapped_title, to_svg

FRONTIER_SIZE = (4.6, 2.8)


def frontier_chart(document: Mapping[str, Any], *, threshold: float | None = None) -> str:
    """Accuracy against the metric's gap: sweep, Pareto front, the audited model and the chosen point."""
    curve = document["frontier"]
    metric = str(document.get("metric", curve["constraint"]))
    with chart_figure(*FRONTIER_SIZE) as (fig, (ax,)):
        ax.scatter(
            [p["gap"] for p in curve["points"]],
            [p["accuracy"] for p in curve["points"]],
            s=9,
            color=MUTED,
            label="thresholds at each tolerance",
            zorder=2,
        )
        front = curve["pareto"]
        ax.plot(
            [p["gap"] for p in front],
            [p["accuracy"] for p in front],
            color=PALETTE[0],
            linewidth=1.4,
            marker="o",
            markersize=2.5,
            label="Pareto frontier",
            zorder=3,
        )
        current = curve["current"]
        ax.scatter(
            [current["gap"]], [current["accuracy"]], s=36, marker="s", color=FAIL, label="audited model", zorder=4
        )
        after = document["after_expected"]
        ax.scatter(
            [after["gap"]], [after["accuracy"]], s=46, marker="*", color=PASS, label="chosen thresholds", zorder=5
        )
        if threshold is not None:
            ax.axvline(threshold, color=INK, linestyle=":", linewidth=0.8, label=f"policy threshold {threshold:g}")
        ax.set_xlabel(f"{metric_label(metric)} (lower is fairer)", fontsize=6.5)
        ax.set_ylabel("accuracy", fontsize=6.5)
        ax.set_xlim(left=0)
        title = f"Fairness-accuracy frontier of group thresholds ({metric_label(metric)})"
        top = set_wrapped_title(ax, title, FRONTIER_SIZE[0])
        ax.legend(loc="best")  # lower right hid the audited model on COMPAS
        set_margins(fig, left=0.55, bottom=0.4, top=top)
        return to_svg(fig)


def frontier_svg(frontier: Mapping[str, Any]) -> str:
    """The chart of a proposed mitigation's ``frontier`` block (the sweep, ``chosen`` point and ``threshold``)."""
    chart_input = {"metric": frontier["metric"], "frontier": frontier, "after_expected": frontier["chosen"]}
    return frontier_chart(chart_input, threshold=frontier["threshold"])
