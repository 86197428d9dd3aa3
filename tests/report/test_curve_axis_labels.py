"""The ROC and calibration charts' axis titles stay inside the figure (a long one was clipped at its edge)."""

from __future__ import annotations

from typing import Any

import pytest

from fairgate.report.model import Curve, CurveSet
from tasks.render import charts

_LONG_X = "FPR – not flagged high-risk among those who went on to reoffend within two years of screening"


def _curves() -> CurveSet:
    curve = Curve(label="African-American", n=3696, x=[0.0, 0.3, 0.6, 1.0], y=[0.0, 0.5, 0.8, 1.0])
    return CurveSet(key="race", curves=[curve], n_hidden=0, x_label=_LONG_X, y_label="TPR – not flagged high-risk")


@pytest.mark.parametrize("chart", [charts.roc_chart, charts.calibration_chart])
def test_the_x_axis_title_fits_inside_the_figure(chart: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    measured: list[tuple[float, float, float, float]] = []

    def measure(fig: Any, **_: Any) -> str:
        fig.canvas.draw()
        (ax,) = fig.axes
        box = ax.xaxis.label.get_window_extent(fig.canvas.get_renderer())
        measured.append((box.x0, box.x1, box.y0, fig.bbox.width))
        return "<svg/>"

    monkeypatch.setattr(charts, "to_svg", measure)
    assert chart(_curves()) == "<svg/>"
    (x0, x1, y0, width) = measured[0]
    assert x0 >= 0
    assert x1 <= width
    assert y0 >= 0  # a second line of the title has room under the ticks
