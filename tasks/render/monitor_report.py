"""Render the monitoring document as an HTML/PDF report: windows and drift streams as small multiples.

Reads only the monitoring JSON document (``fairgate monitor run`` writes it); the view model is
``fairgate.report.monitoring``. Charts are matplotlib SVG in the trend section's style (``tasks.render.trend_charts``),
the page is ``reports/monitoring.html.j2`` with the report's CSS, and the PDF is rendered offline like the audit
report's (``tasks.render.report``): everything is rendered before anything is written.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display: charts are files, never windows

import matplotlib.pyplot as plt
import numpy as np

from fairgate.report.monitoring import MonitoringView, NightPanel, WindowPanel, build_monitoring_view
from fairgate.report.monitoring_labels import LabelsView, build_labels_view
from tasks.outputs import output_stem, write_atomic
from tasks.render.charts import FAIL, INK, PALETTE, to_svg
from tasks.render.report import html_to_pdf, svg_data_uri, template_environment, write_text_atomic
from tasks.render.trend_charts import HEIGHT, TITLE_CHARS, TREND_STYLE, WIDTH, legend_chart

TICKS = {"since deployment": "all"}  # the narrow chart's tick; the table names it in full
NIGHT_WIDTH, NIGHT_HEIGHT = 3.4, 1.9  # inches: two night charts side by side on an A4 page, legend below


def monitoring_charts(view: MonitoringView) -> dict[str, str]:
    """SVG text of every chart: ``window:<metric>``, ``change:<metric:slicing>``, ``load:<metric:slicing>``."""
    charts = {f"window:{p.key}": window_chart(p) for p in view.window_panels if p.lines}
    if charts:
        charts["window:legend"] = legend_chart(view.legend)
    for panel in view.night_panels:
        if panel.series:
            charts[f"change:{panel.key}"] = change_chart(panel)
            charts[f"load:{panel.key}"] = load_chart(panel)
    return charts


def window_chart(panel: WindowPanel) -> str:
    """One metric over the windows: per slicing its value and interval, its baseline value as a dotted line,
    the threshold dashed, a red ring where the window fails, a filled marker where its change is significant."""
    windows = len(panel.window_labels)
    x = np.arange(windows, dtype=float)
    spread = min(0.3, 0.08 * len(panel.lines))
    offsets = np.linspace(-spread / 2, spread / 2, len(panel.lines)) if len(panel.lines) > 1 else [0.0]
    with plt.rc_context(TREND_STYLE):  # type: ignore[arg-type]
        fig, ax = plt.subplots(figsize=(WIDTH, HEIGHT))
        try:
            if panel.threshold is not None:
                ax.axhline(panel.threshold, color=INK, linestyle="--", linewidth=0.9, zorder=2.5)
            for line, offset in zip(panel.lines, offsets, strict=True):
                colour = PALETTE[line.colour % len(PALETTE)]
                if line.baseline is not None:
                    ax.axhline(line.baseline, color=colour, linestyle=":", linewidth=0.9, zorder=1.5)
                at = [(float(x[j] + offset), m) for j, m in enumerate(line.marks) if m and m.value is not None]
                if not at:
                    continue
                values = [float(m.value or 0.0) for _, m in at]
                ax.plot([p for p, _ in at], values, color=colour, linewidth=0.9, zorder=3)
                for (p, m), value in zip(at, values, strict=True):
                    if m.ci_low is not None and m.ci_high is not None:
                        ax.vlines(p, m.ci_low, m.ci_high, color=colour, linewidth=1.0, alpha=0.75, zorder=2)
                    face = colour if m.significant else "white"
                    ax.scatter([p], [value], s=12, color=colour, facecolors=face, linewidths=0.9, zorder=4)
                    if m.failed:
                        ax.scatter([p], [value], s=38, facecolors="none", edgecolors=FAIL, linewidths=1.1, zorder=5)
            ax.set_xticks(x, [TICKS.get(label, label) for label in panel.window_labels])
            ax.set_xlim(-0.5, windows - 0.5)
            direction = "higher is better" if panel.higher_is_better else "lower is better"
            ax.set_title(
                f"{textwrap.fill(panel.metric_label, TITLE_CHARS)}\n{direction}", fontsize=6.8, linespacing=1.1
            )
            ax.tick_params(labelsize=5.6)
            fig.subplots_adjust(left=0.2, right=0.97, bottom=0.2, top=0.72)
            return to_svg(fig)
        finally:
            plt.close(fig)


def change_chart(panel: NightPanel) -> str:
    """Each stream's nightly change against the baseline with its band; 0 is the baseline; alerts ringed."""
    return _night_chart(panel, "change against baseline", lambda s: (s.estimate, s.band_low, s.band_high), 0.0)


def load_chart(panel: NightPanel) -> str:
    """Each stream's CUSUM statistic as a share of its threshold: it alerts at 1 (the dashed line)."""
    return _night_chart(panel, "detector statistic / threshold", lambda s: (s.load, None, None), 1.0)


def _night_chart(panel: NightPanel, what: str, values: Any, reference: float) -> str:
    with plt.rc_context(TREND_STYLE):  # type: ignore[arg-type]
        fig, ax = plt.subplots(figsize=(NIGHT_WIDTH, NIGHT_HEIGHT))
        try:
            ax.axhline(reference, color=INK, linestyle="--", linewidth=0.8, zorder=2.5)
            for series in panel.series:
                colour = PALETTE[series.colour % len(PALETTE)]
                y, low, high = values(series)
                x = np.arange(len(y))
                if low is not None:
                    ax.fill_between(x, low, high, color=colour, alpha=0.12, linewidth=0, zorder=1)
                marker = "o" if len(y) < 3 else None  # a night or two: a line alone would not show
                ax.plot(x, y, color=colour, linewidth=0.8, marker=marker, markersize=3, label=series.group, zorder=3)
                if low is not None and len(y) < 3:
                    ax.vlines(x, low, high, color=colour, linewidth=0.8, zorder=2)
                if series.alert_nights:
                    hit = series.alert_nights
                    ax.scatter(
                        x[hit], np.asarray(y)[hit], s=30, facecolors="none", edgecolors=FAIL, linewidths=1.1, zorder=5
                    )
            nights = panel.series[0].nights
            ticks = sorted({0, len(nights) - 1, *range(0, len(nights), max(1, len(nights) // 3))})
            ax.set_xticks(ticks, [nights[i][5:] for i in ticks])  # MM-DD
            ax.tick_params(labelsize=5.6)
            title = textwrap.fill(f"{panel.metric_label} · {panel.slicing_label}", 40)
            ax.set_title(f"{title}\n{what}", fontsize=6.6, linespacing=1.1)
            fig.legend(loc="lower left", fontsize=5.4, ncol=3, handlelength=1.2, columnspacing=0.8, borderaxespad=0.2)
            rows = -(-len(panel.series) // 3)
            fig.subplots_adjust(left=0.1, right=0.98, bottom=0.12 + 0.075 * rows, top=0.8)
            return to_svg(fig)
        finally:
            plt.close(fig)


def render_monitoring_html(
    view: MonitoringView, charts: Mapping[str, str], *, full_tables: bool = True, labels: LabelsView | None = None
) -> str:
    """The monitoring report as one self-contained HTML page (charts as data URIs); ``labels``: the section on
    rows without labels yet and earlier estimates checked (fairgate/report/monitoring_labels.py)."""
    template = template_environment().get_template("monitoring.html.j2")
    labels = labels or build_labels_view({})
    return template.render(view=view, charts=dict(charts), full_tables=full_tables, labels=labels)


def render_monitoring_report(document: dict[str, Any], out_dir: Path, formats: Iterable[str]) -> dict[str, Path]:
    """Render the requested formats ("html", "pdf") of one monitoring document into ``out_dir``.

    Returns the written paths by format, named like the document: ``monitoring_<model>_<version>_<run>_<night>``.
    """
    wanted = set(formats) & {"html", "pdf"}
    if not wanted:
        return {}
    view = build_monitoring_view(document)
    charts = {key: svg_data_uri(svg) for key, svg in monitoring_charts(view).items()}
    labels = build_labels_view(document)
    html = render_monitoring_html(view, charts, labels=labels) if "html" in wanted else ""
    pdf = (
        html_to_pdf(render_monitoring_html(view, charts, full_tables=False, labels=labels)) if "pdf" in wanted else None
    )
    stem = _stem(document)
    out: dict[str, Path] = {}
    if "html" in wanted:
        out["html"] = write_text_atomic(Path(out_dir) / f"{stem}.html", html)
    if pdf is not None:
        out["pdf"] = write_atomic(Path(out_dir) / f"{stem}.pdf", pdf)
    return out


def _stem(document: Mapping[str, Any]) -> str:
    """The monitoring document's own file name rule (``tasks.monitor.document_path``), without ``.json``."""
    return f"{output_stem(document).replace('fairness_', 'monitoring_', 1)}_{document.get('night')}"
