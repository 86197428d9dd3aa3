"""The regression report's charts: residual by prediction decile and prediction CDFs per group, as SVG text.

They read only the view model (``fairgate.report.regression``), where small groups are already suppressed, and
share ``tasks.render.charts``' style, palette and SVG output.
"""

from __future__ import annotations

from fairgate.report.regression import RegressionSection, RegressionView
from tasks.render.charts import (
    FAIL,
    MUTED,
    chart_figure,
    series_colour,
    set_margins,
    set_wrapped_title,
    shorten,
    to_svg,
)

SIZE = (3.5, 2.6)


def residual_chart(section: RegressionSection) -> str | None:
    """Mean residual against mean prediction, per prediction decile and group, with the intervals as bands."""
    if not section.residuals:
        return None
    with chart_figure(*SIZE) as (fig, (ax,)):
        ax.axhline(0.0, color=MUTED, linestyle=":", linewidth=0.8)
        for i, series in enumerate(section.residuals):
            colour = series_colour(i)
            if section.banded:  # more bands than a few overprint each other: the table has the intervals
                ax.fill_between(series.x, series.low, series.high, color=colour, alpha=0.08, linewidth=0)
            ax.plot(
                series.x,
                series.y,
                color=colour,
                linewidth=1.2,
                marker="o",
                markersize=2.4,
                label=f"{shorten(series.label, 20)} (n={series.n:,})",
            )
        ax.set_xlabel("Mean prediction in the decile", fontsize=6.5)
        ax.set_ylabel("Mean residual (prediction − outcome)", fontsize=6.5)
        top = set_wrapped_title(ax, f"Residual by prediction decile, {section.key}", SIZE[0])
        if section.banded:
            ax.legend(loc="best", fontsize=5.4)
            set_margins(fig, left=0.5, bottom=0.4, top=top)
        else:  # many groups: the legend beside the axes, never over the lines
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=5.0, frameon=False)
            set_margins(fig, left=0.5, bottom=0.4, top=top, right=1.45)
        return to_svg(fig)


def cdf_chart(section: RegressionSection) -> str | None:
    """Each group's distribution of predictions (empirical CDF from the cube's histogram), the largest KS gap marked."""
    if not section.cdfs:
        return None
    with chart_figure(*SIZE) as (fig, (ax,)):
        for i, series in enumerate(section.cdfs):
            ax.step(
                series.x,
                series.y,
                where="post",
                color=series_colour(i),
                linewidth=1.1,
                label=f"{shorten(series.label, 20)} (n={series.n:,})",
            )
        # Only where some group's CDF moves: the grid also spans the outcomes, often far wider.
        lows = [x for s in section.cdfs for x, y in zip(s.x, s.y, strict=True) if y > 0.0]
        highs = [next((x for x, y in zip(s.x, s.y, strict=True) if y >= 1.0), s.x[-1]) for s in section.cdfs if s.x]
        if lows and highs:
            pad = 0.03 * (max(highs) - min(lows))
            ax.set_xlim(min(lows) - pad, max(highs) + pad)
        ax.set_ylim(0, 1.01)
        if section.ks_mark is not None:
            at, whose = section.ks_mark
            # Named in the legend, not beside the line: there the text ran past the axes or over the curves.
            label = f"largest KS gap:\n{shorten(whose, 24)} vs rest"
            ax.axvline(at, color=FAIL, linestyle="--", linewidth=0.9, label=label)
        ax.set_xlabel("Prediction", fontsize=6.5)
        ax.set_ylabel("Share of the group predicted at most x", fontsize=6.5)
        top = set_wrapped_title(ax, f"Distribution of predictions, {section.key}", SIZE[0])
        if len(section.cdfs) <= 3:  # a CDF starts at 0 on the left: a short legend fits the upper left
            ax.legend(loc="upper left", fontsize=5.8)
            set_margins(fig, left=0.5, bottom=0.4, top=top)
        else:  # many groups: beside the axes, never over the curves (as the residual chart's)
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=5.0, frameon=False)
            set_margins(fig, left=0.5, bottom=0.4, top=top, right=1.45)
        return to_svg(fig)


def regression_charts(view: RegressionView) -> dict[str, str | None]:
    """Every regression chart of the view, keyed ``residuals:<slicing>`` and ``cdf:<slicing>`` (SVG text)."""
    charts: dict[str, str | None] = {}
    for section in view.sections:
        for name, draw in (("residuals", residual_chart), ("cdf", cdf_chart)):
            svg = draw(section)
            if svg is not None:
                charts[f"{name}:{section.key}"] = svg
    return charts
