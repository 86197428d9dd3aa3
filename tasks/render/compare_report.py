"""The comparison report: the ``fairgate compare`` document as HTML (Jinja2) and PDF (WeasyPrint).

Reads only the comparison document. The view model is ``fairgate/report/comparison.py``; the accuracy-fairness
plane is drawn here (matplotlib, SVG data URI). Files go beside the comparison JSON, named after it, each
written atomically and only once every requested format has rendered (a failure leaves no partial report).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from matplotlib.ticker import MaxNLocator, StrMethodFormatter
from prefect import task
from prefect.cache_policies import NO_CACHE

from fairgate.report.comparison import ComparisonView, comparison_view
from tasks.compare import comparison_path
from tasks.outputs import write_atomic
from tasks.render.charts import FAIL, INK, MUTED, PALETTE, PASS, chart_figure, set_margins, set_wrapped_title, to_svg
from tasks.render.report import html_to_pdf, svg_data_uri, template_environment

PLANE_SIZE = (5.4, 3.1)


def plane_chart(view: ComparisonView) -> str | None:
    """Accuracy against the plane's metric: the baseline, each candidate, the Pareto frontier through them."""
    if not view.plane:
        return None
    with chart_figure(*PLANE_SIZE) as (fig, (ax,)):
        front = sorted((p for p in view.plane if p.pareto), key=lambda p: p.x)
        ax.plot([p.x for p in front], [p.y for p in front], color=PALETTE[0], linewidth=1.2, label="Pareto frontier")
        for point in view.plane:
            if point.role == "baseline":
                ax.scatter([point.x], [point.y], marker="s", s=40, color=INK, label="baseline", zorder=3)
            else:
                colour = PASS if point.decision == "promote" else FAIL
                ax.scatter([point.x], [point.y], marker="o", s=26, color=colour, zorder=3)
            ax.annotate(point.name[:32], (point.x, point.y), xytext=(4, 3), textcoords="offset points", fontsize=5.6)
        ax.scatter([], [], marker="o", color=PASS, label="promotable candidate")
        ax.scatter([], [], marker="o", color=FAIL, label="not promoted")
        better = "lower" if view.plane_direction == "lower_is_better" else "higher"
        ax.set_xlabel(f"{view.plane_metric}, worst slicing ({better} is fairer)", fontsize=6.5)
        ax.set_ylabel("accuracy", fontsize=6.5)
        ax.grid(color=MUTED, alpha=0.2, linewidth=0.5)
        ax.margins(x=0.25, y=0.12)  # room for the points' names
        ax.yaxis.set_major_locator(MaxNLocator(nbins=6, steps=[1, 2, 5, 10]))  # ticks exact at 3 decimals
        ax.yaxis.set_major_formatter(StrMethodFormatter("{x:.3f}"))  # 3 decimals, as the tables print accuracy
        top = set_wrapped_title(ax, "Accuracy-fairness plane of the compared models", PLANE_SIZE[0])
        ax.legend(loc="best")
        set_margins(fig, left=0.7, bottom=0.4, top=top)  # room for the ticks and the axis label
        return to_svg(fig)


def render_comparison_html(view: ComparisonView, chart: str | None) -> str:
    """The comparison report as one self-contained HTML page."""
    template = template_environment().get_template("comparison.html.j2")
    return template.render(view=view, plane_chart=None if chart is None else svg_data_uri(chart))


def comparison_report_files(
    document: Mapping[str, Any], out_dir: Path, formats: Sequence[str], min_cell_size: int = 10
) -> dict[str, str]:
    """Render the requested formats (``html``, ``pdf``) and write them beside the comparison JSON
    (``min_cell_size``: the policy's ``reporting.min_cell_size``)."""
    wanted = [f for f in ("html", "pdf") if f in formats]
    if not wanted:
        return {}
    view = comparison_view(document, min_cell_size)
    html = render_comparison_html(view, plane_chart(view))
    rendered = {"html": html.encode("utf-8")} if "html" in wanted else {}
    if "pdf" in wanted:
        rendered["pdf"] = html_to_pdf(html)
    stem = comparison_path(out_dir, str(document["run_id"])).with_suffix("")
    return {kind: str(write_atomic(stem.with_suffix(f".{kind}"), data)) for kind, data in rendered.items()}


@task(name="write comparison report", cache_policy=NO_CACHE)
def write_comparison_report(
    document: dict[str, Any], out_dir: Path, formats: list[str], min_cell_size: int = 10
) -> dict[str, str]:
    """Prefect task: the comparison report's files (no retries: rendering is deterministic)."""
    return comparison_report_files(document, out_dir, formats, min_cell_size)
