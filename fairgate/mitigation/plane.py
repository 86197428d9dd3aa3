"""The accuracy-fairness plane of a comparison: each model as one point, and the Pareto set among them.

x is one judged fairness metric at its worst slicing (the largest value of a lower-is-better metric, the
smallest of a higher-is-better one, over the slicings compared), y is overall accuracy. A model is on the
Pareto frontier when no other model compared is at least as fair and at least as accurate, and strictly
better in one of the two. Reads the comparison result of :func:`fairgate.mitigation.compare.compare_candidates`.

>>> result = {"candidates": [
...     {"name": "a", "decision": "promote", "accuracy": {"baseline": 0.70, "candidate": 0.72},
...      "changes": [{"metric": "m", "slicing": ["g"], "direction": "lower_is_better",
...                   "baseline": 0.10, "candidate": 0.05}]},
...     {"name": "b", "decision": "do_not_promote", "accuracy": {"baseline": 0.70, "candidate": 0.69},
...      "changes": [{"metric": "m", "slicing": ["g"], "direction": "lower_is_better",
...                   "baseline": 0.10, "candidate": 0.08}]}]}
>>> plane = accuracy_fairness_plane(result)
>>> [(p["name"], p["x"], p["y"], p["pareto"]) for p in plane["points"]]
[('baseline', 0.1, 0.7, False), ('a', 0.05, 0.72, True), ('b', 0.08, 0.69, False)]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fairgate.errors import PolicyError

BASELINE = "baseline"


def accuracy_fairness_plane(result: Mapping[str, Any], metric: str | None = None) -> dict[str, Any] | None:
    """The plane's points (baseline first), with the Pareto set marked; None when no metric is defined.

    ``metric`` names the x axis; by default the first judged metric with a defined value for every model,
    lower-is-better metrics first (a disparity reads more naturally on an axis than a ratio).

    Raises
    ------
    PolicyError
        When ``metric`` is not among the compared metrics.
    """
    candidates = list(result["candidates"])
    rows = [row for row in candidates[0]["changes"]] if candidates else []
    compared = list(dict.fromkeys(row["metric"] for row in rows))
    if metric is not None and metric not in compared:
        raise PolicyError(f"--plane-metric {metric!r} is not a compared metric; compared: {compared}")
    direction_of = {row["metric"]: row["direction"] for row in rows}
    order = [metric] if metric else sorted(compared, key=lambda m: direction_of[m] != "lower_is_better")
    for name in order:
        points = _points(candidates, name, direction_of[name])
        if points is not None:
            return {"metric": name, "direction": direction_of[name], "points": _mark_pareto(points, direction_of[name])}
    return None


def _points(candidates: Sequence[Mapping[str, Any]], metric: str, direction: str) -> list[dict[str, Any]] | None:
    baseline_x = _worst([r["baseline"] for r in candidates[0]["changes"] if r["metric"] == metric], direction)
    baseline_y = candidates[0]["accuracy"]["baseline"]
    if baseline_x is None or baseline_y is None:
        return None
    points = [{"name": BASELINE, "role": "baseline", "x": baseline_x, "y": baseline_y, "decision": None}]
    for entry in candidates:
        x = _worst([r["candidate"] for r in entry["changes"] if r["metric"] == metric], direction)
        y = entry["accuracy"]["candidate"]
        if x is None or y is None:
            return None
        points.append({"name": entry["name"], "role": "candidate", "x": x, "y": y, "decision": entry["decision"]})
    return points


def _worst(values: Sequence[float | None], direction: str) -> float | None:
    """The metric's worst value over its slicings; None when any slicing's value is undefined."""
    if not values or any(v is None for v in values):
        return None
    defined = [float(v) for v in values if v is not None]
    return max(defined) if direction == "lower_is_better" else min(defined)


def _mark_pareto(points: list[dict[str, Any]], direction: str) -> list[dict[str, Any]]:
    """Each point with ``pareto``: no other point is at least as good on both axes and better on one."""
    sign = 1.0 if direction == "lower_is_better" else -1.0  # fairness as "smaller is better" on x

    def dominates(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
        ax, bx = sign * float(a["x"]), sign * float(b["x"])
        ay, by = float(a["y"]), float(b["y"])
        return ax <= bx and ay >= by and (ax < bx or ay > by)

    return [{**p, "pareto": not any(dominates(q, p) for q in points if q is not p)} for p in points]
