"""The trend of one model's judged results over its audits, and the change since the previous run.

Each judged (metric, slicing) gets its series over the last runs (value, interval, threshold, status) and the
change from the previous run that judged it, with a test of "the two runs measure the same disparity":

* The two runs are independent samples (different people, or the same people on different days), so the
  standard error of the change is sqrt(se_prev² + se_now²), and z = change / se is compared with the normal
  distribution (two-sided). Under "no change" the two values are draws of one statistic, so their difference
  is symmetric about 0 even where the statistic itself (a range over groups) is skewed.
* Each run's standard error is the bootstrap standard deviation of its value, which the document records
  (``standard_error``, schema 1.2) and the trail keeps in the hashed document. For a run recorded before that,
  it is recovered from the stored interval: the half on the side where the disparity grows (never folded at
  "no disparity") over the normal quantile of the run's level. The stored intervals are simultaneous (a max-t
  critical value, at least the normal one), so that recovery errs towards not flagging.
* The changes of one run are one family: Holm's step-down keeps the chance of flagging any change when nothing
  changed at most ``alpha`` (``statistics.significance_level``).
* Two runs over identical input files (same sha256) are the same sample: their change is shown, not tested.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy import special

from fairgate.engine.stats import holm, z_value
from fairgate.monitoring.history import History, PastResult, PastRun
from fairgate.policy.core import Policy

DEFAULT_LEVEL = 0.95  # the level of a past run's intervals when the trail does not say
FIRST_RUN = "first audit of this model in this trail"
METHOD = (
    "Change since the previous run: a two-sided z-test of the difference of two independent runs, with each "
    "run's bootstrap standard error (for a run recorded before fairgate stored it: recovered from its "
    "interval, which errs towards not flagging); significant when the Holm-adjusted p-value over the run's "
    "changes is at most {alpha:g}; the change's interval is at {level:.0%}, not adjusted. Runs over identical "
    "input files are the same sample and are not tested."
)
SAME_DATA = "same input files as the previous run (identical sha256): the same sample, no change to test"

Key = tuple[str, tuple[str, ...]]


def standard_error(
    value: float | None,
    ci_low: float | None,
    ci_high: float | None,
    confidence_level: float | None,
    *,
    direction: str | None,
) -> float | None:
    """The standard error of a judged value recovered from its interval; None when the interval cannot give one.

    The half of the interval on the side where the disparity grows (above for ``lower_is_better``, below for
    ``higher_is_better``), divided by the normal quantile of the interval's level.

    >>> round(standard_error(0.10, 0.0, 0.1392, 0.95, direction="lower_is_better"), 4)
    0.02
    >>> round(standard_error(0.80, 0.7216, 1.0, 0.95, direction="higher_is_better"), 4)
    0.04
    >>> standard_error(0.1, None, None, 0.95, direction="lower_is_better") is None
    True
    """
    if value is None or ci_low is None or ci_high is None:
        return None
    half = (value - ci_low) if direction == "higher_is_better" else (ci_high - value)
    if not (math.isfinite(half) and half > 0):
        return None
    return half / z_value(confidence_level or DEFAULT_LEVEL)


def change_test(
    previous: float, current: float, se_previous: float, se_current: float, alpha: float
) -> dict[str, float]:
    """Change, its standard error, z, two-sided p-value and the (1 - alpha) interval of the change.

    >>> t = change_test(0.10, 0.16, 0.02, 0.02, 0.05)
    >>> round(t["delta"], 3), round(t["z"], 3), round(t["p_value"], 4)
    (0.06, 2.121, 0.0339)
    """
    delta = current - previous
    se = math.hypot(se_previous, se_current)
    z = delta / se
    half = z_value(1.0 - alpha) * se
    return {
        "delta": delta,
        "standard_error": se,
        "z": z,
        "p_value": float(2.0 * special.ndtr(-abs(z))),  # norm.sf, as scipy computes it
        "ci_low": delta - half,
        "ci_high": delta + half,
    }


def build_trend(document: Mapping[str, Any], history: History, *, max_runs: int, alpha: float) -> dict[str, Any]:
    """The ``trend`` block of the audit document: the current run after the model's earlier runs.

    Parameters
    ----------
    document
        The current audit document (not yet in the trail).
    history
        The model's earlier runs, oldest first (``tasks.store.model_history``).
    max_runs
        The series hold at most this many runs, the current one included (``reporting.trend_runs``).
    alpha
        The family-wise level of the changes' tests (``statistics.significance_level``).
    """
    past = list(history.runs)[-(max_runs - 1) :] if max_runs > 1 else []
    current_run = _current_run(document)
    level = float(document.get("confidence_level") or DEFAULT_LEVEL)
    current_inputs = input_hashes(document.get("inputs"))
    lookup = {run.run_id: {(r.metric, r.slicing): r for r in run.results} for run in past}
    series = []
    for result in document.get("results", []):
        key: Key = (str(result["metric"]), tuple(result.get("slicing") or ()))
        points = [_point(run.run_id, lookup[run.run_id][key]) for run in past if key in lookup[run.run_id]]
        points.append(_point(current_run["run_id"], result))
        previous_run = next((run for run in reversed(past) if key in lookup[run.run_id]), None)
        change = None
        if previous_run is not None:
            same = bool(current_inputs) and previous_run.input_sha256 == current_inputs
            change = _change(lookup[previous_run.run_id][key], previous_run, result, level, alpha, same=same)
        series.append(
            {
                "metric": key[0],
                "slicing": list(key[1]),
                "direction": result.get("direction"),
                "critical": bool(result.get("critical")),
                "points": points,
                "change": change,
            }
        )
    _adjust(series, alpha)
    runs = [_run(run) for run in past] + [current_run]
    previous = past[-1] if past else None
    return {
        "model_name": str((document.get("model") or {}).get("name", "")),
        "trail": history.trail,
        "max_runs": max_runs,
        "alpha": alpha,
        "method": METHOD.format(alpha=alpha, level=1.0 - alpha),
        "runs": runs,
        "same_data_as_previous": None if previous is None else previous.input_sha256 == current_inputs,
        "note": history.note or (FIRST_RUN if not past else None),
        "n_significant": sum(1 for s in series if s["change"] and s["change"]["significant"]),
        "series": series,
    }


def trend_of(document: Mapping[str, Any], history: History, policy: Policy) -> dict[str, Any]:
    """:func:`build_trend` with the policy's settings (``reporting.trend_runs``, ``statistics.significance_level``)."""
    return build_trend(
        document, history, max_runs=policy.reporting.trend_runs, alpha=policy.statistics.significance_level
    )


def _current_run(document: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "run_id": str(document.get("run_id")),
        "seq": None,  # recorded in the trail after the report is rendered
        "recorded_at": str(document.get("created_at")) if document.get("created_at") else None,
        "model_version": (document.get("model") or {}).get("version"),
        "verdict": document.get("verdict"),
        "current": True,
    }


def _run(run: PastRun) -> dict[str, Any]:
    return {
        "run_id": run.run_id,
        "seq": run.seq,
        "recorded_at": run.recorded_at,
        "model_version": run.model_version,
        "verdict": run.verdict,
        "current": False,
    }


def _point(run_id: str, result: PastResult | Mapping[str, Any]) -> dict[str, Any]:
    get = (lambda k: getattr(result, k)) if isinstance(result, PastResult) else result.get
    return {
        "run_id": run_id,
        "value": _num(get("value")),
        "ci_low": _num(get("ci_low")),
        "ci_high": _num(get("ci_high")),
        "threshold": _num(get("threshold")),
        "status": get("status"),
    }


def _change(
    before: PastResult, run: PastRun, now: Mapping[str, Any], level: float, alpha: float, *, same: bool
) -> dict[str, Any]:
    """The change from ``before`` (in ``run``) to ``now``; tested unless the data are the same or undefined."""
    value, previous = _num(now.get("value")), before.value
    change: dict[str, Any] = {
        "previous_run_id": run.run_id,
        "previous_value": previous,
        "previous_status": before.status,
        "value": value,
        "status": now.get("status"),
        "delta": None if value is None or previous is None else value - previous,
        "standard_error": None,
        "ci_low": None,
        "ci_high": None,
        "p_value": None,
        "p_value_adjusted": None,
        "tested": False,
        "significant": False,
        "reason": None,
    }
    if same:
        change["reason"] = SAME_DATA
        return change
    if value is None or previous is None:
        change["reason"] = "the value is undefined in " + ("this run" if value is None else "the previous run")
        return change
    direction = now.get("direction") or before.direction
    se_before = before.standard_error or standard_error(
        previous, before.ci_low, before.ci_high, run.confidence_level, direction=direction
    )
    se_now = _num(now.get("standard_error")) or standard_error(
        value, _num(now.get("ci_low")), _num(now.get("ci_high")), level, direction=direction
    )
    if se_before is None or se_now is None:
        which = "the previous run" if se_before is None else "this run"
        change["reason"] = f"no interval in {which}, so the change cannot be tested"
        return change
    change.update(change_test(previous, value, se_before, se_now, alpha), tested=True)
    change.pop("z")
    return change


def _adjust(series: Sequence[dict[str, Any]], alpha: float) -> None:
    """Holm over the run's tested changes: a change is significant when its adjusted p-value is at most alpha."""
    changes = [s["change"] for s in series if s["change"] and s["change"]["tested"]]
    if not changes:
        return
    adjusted = holm(np.array([c["p_value"] for c in changes]))
    for change, p in zip(changes, adjusted, strict=True):
        change["p_value_adjusted"] = float(p)
        change["significant"] = bool(p <= alpha)


def input_hashes(inputs: Any) -> dict[str, str]:
    """Input role -> sha256 of an audit's ``inputs`` (the document's, or the trail's ``runs.inputs``).

    >>> input_hashes({"predictions": {"source": "p.csv", "sha256": "ab", "rows": 3}})
    {'predictions': 'ab'}
    """
    if not isinstance(inputs, Mapping):
        return {}
    return {
        str(role): str(entry["sha256"])
        for role, entry in inputs.items()
        if isinstance(entry, Mapping) and entry.get("sha256")
    }


def _num(value: Any) -> float | None:
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None
