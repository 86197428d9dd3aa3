"""A metric's trend across runs as inline SVG, drawn on the server (no script, no library): per slicing a line
through the recorded values, each run's interval as a vertical bar, the policy's threshold dashed, failing
results as red rings. Text is escaped; the page's CSP allows no script anyway."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

WIDTH, HEIGHT = 760, 300
LEFT, RIGHT, TOP, BOTTOM = 56, 170, 16, 40
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#17becf")
FAIL = "#c62828"
Scale = Callable[[float], float]


@dataclass(frozen=True)
class TrendPoint:
    """One run's recorded result of a metric on one slicing."""

    run: int  # position of the run on the x axis (0 = oldest shown)
    value: float | None
    low: float | None
    high: float | None
    failed: bool


def _finite(*values: float | None) -> list[float]:
    return [v for v in values if v is not None and math.isfinite(v)]


def _range(series: dict[str, list[TrendPoint]], thresholds: Sequence[float | None]) -> tuple[float, float]:
    values = _finite(*thresholds)
    for points in series.values():
        for p in points:
            values += _finite(p.value, p.low, p.high)
    low, high = (min(values), max(values)) if values else (0.0, 1.0)
    pad = (high - low) * 0.08 or 0.05
    return low - pad, high + pad


def ticks(low: float, high: float) -> list[float]:
    """Round values for the axis between ``low`` and ``high``: steps of 1, 2 or 5 times a power of ten.

    >>> ticks(0.034, 1.069)
    [0.2, 0.4, 0.6, 0.8, 1.0]
    """
    raw = (high - low) / 8
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(low / step)
    return [round(k * step, 10) for k in range(first, math.floor(high / step) + 1)]


def trend_svg(
    title: str, runs: Sequence[str], series: dict[str, list[TrendPoint]], thresholds: Sequence[float | None]
) -> str:
    """The chart: ``runs`` are the x labels (oldest first), ``series`` the points per slicing label."""
    y0, y1 = _range(series, thresholds)
    span = max(len(runs) - 1, 1)

    def x(i: float) -> float:
        return LEFT + (WIDTH - LEFT - RIGHT) * (i / span if len(runs) > 1 else 0.5)

    def y(v: float) -> float:
        return TOP + (HEIGHT - TOP - BOTTOM) * (1 - (v - y0) / (y1 - y0))

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" '
        f'role="img" aria-label="{escape(title)}" class="trend">',
        f'<rect x="{LEFT}" y="{TOP}" width="{WIDTH - LEFT - RIGHT}" height="{HEIGHT - TOP - BOTTOM}" fill="#fafafa" '
        'stroke="#ccc"/>',
    ]
    for v in ticks(y0, y1):
        out.append(f'<text x="{LEFT - 6}" y="{y(v) + 4:.1f}" text-anchor="end" font-size="11">{v:g}</text>')
        out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#e4e4e4"/>')
    for i, label in enumerate(runs):
        out.append(
            f'<text x="{x(i):.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle" font-size="11">'
            f"{escape(label)}</text>"
        )
    out.append(
        f'<text x="{(LEFT + WIDTH - RIGHT) / 2}" y="{HEIGHT - 6}" text-anchor="middle" font-size="11">'
        "run (sequence number in the trail), oldest first</text>"
    )
    out += _threshold_path(thresholds, x, y)
    for n, (label, points) in enumerate(series.items()):
        out += _series(label, points, COLOURS[n % len(COLOURS)], n, x, y)
    out.append("</svg>")
    return "\n".join(out)


def _threshold_path(thresholds: Sequence[float | None], x: Scale, y: Scale) -> list[str]:
    steps = [(i, t) for i, t in enumerate(thresholds) if t is not None and math.isfinite(t)]
    if not steps:
        return []
    d = " ".join(f"{'M' if k == 0 else 'L'}{x(i):.1f},{y(t):.1f}" for k, (i, t) in enumerate(steps))
    return [f'<path d="{d}" fill="none" stroke="#555" stroke-dasharray="5,4"><title>threshold</title></path>']


def _series(label: str, points: list[TrendPoint], colour: str, n: int, x: Scale, y: Scale) -> list[str]:
    out = []
    drawn = [p for p in points if p.value is not None and math.isfinite(p.value)]
    for p in points:
        if p.low is not None and p.high is not None and math.isfinite(p.low) and math.isfinite(p.high):
            out.append(
                f'<line x1="{x(p.run):.1f}" x2="{x(p.run):.1f}" y1="{y(p.low):.1f}" y2="{y(p.high):.1f}" '
                f'stroke="{colour}" stroke-opacity="0.45" stroke-width="3"/>'
            )
    if drawn:
        d = " ".join(
            f"{'M' if k == 0 else 'L'}{x(p.run):.1f},{y(p.value):.1f}"
            for k, p in enumerate(drawn)
            if p.value is not None
        )
        out.append(f'<path d="{d}" fill="none" stroke="{colour}" stroke-width="1.6"/>')
    for p in drawn:
        assert p.value is not None
        ring = f' stroke="{FAIL}" stroke-width="2"' if p.failed else ""
        out.append(
            f'<circle cx="{x(p.run):.1f}" cy="{y(p.value):.1f}" r="4" fill="{colour}"{ring}>'
            f"<title>{escape(label)}: {p.value:.4f}</title></circle>"
        )
    ly = TOP + 14 + 18 * n
    out.append(
        f'<line x1="{WIDTH - RIGHT + 12}" x2="{WIDTH - RIGHT + 30}" y1="{ly - 4}" y2="{ly - 4}" '
        f'stroke="{colour}" stroke-width="2"/>'
    )
    out.append(f'<text x="{WIDTH - RIGHT + 36}" y="{ly}" font-size="11">{escape(label)}</text>')
    return out
