"""The judged metrics of one window (a summed cube) and their change against the baseline.

A window's value and interval are the audit's own (``compute_slicing`` and ``adjudicate`` on the summed
cube: same metrics, same bootstrap, same judgement against the thresholds). Its change against the baseline
is tested as the trend tests a change between runs (``fairgate.monitoring.trend``): the window and the
baseline are independent samples (different nights' people; the deployment audit's or the reference
window's), so the change's standard error is sqrt(se_window^2 + se_baseline^2) from the two bootstrap
standard errors, z = change / se, two-sided; the window's changes are one family (Holm at
``statistics.significance_level``). When the window overlaps a reference-window baseline the two are not
independent and the test is conservative for the overlap; the document says so in a note.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from fairgate.engine.adjudicate import adjudicate, verdict_of
from fairgate.engine.columns import ROWS
from fairgate.engine.cube import Cube
from fairgate.engine.slicing import compute_slicing, plan_slicings
from fairgate.engine.stats import holm
from fairgate.monitoring.trend import change_test
from fairgate.policy.core import Policy

Key = tuple[str, tuple[str, ...]]


def judged_results(cube: Cube, policy: Policy) -> list[dict[str, Any]]:
    """The policy's judged results on a cube, as the audit document lists them."""
    parts = [compute_slicing(cube, slicing, policy) for slicing in plan_slicings(cube, policy)]
    return list(adjudicate(cube, parts, policy).to_dict()["results"])


def group_sizes(cube: Cube, policy: Policy) -> list[tuple[list[str], dict[str, str], float]]:
    """The people of each group of every judged slicing (the whole population left out: it is the window's rows)."""
    sizes = []
    for slicing in plan_slicings(cube, policy):
        if not slicing:
            continue
        keys = list(slicing)
        table = cube.cells.group_by(keys).agg(pl.col(ROWS).sum()).sort(keys)
        for row in table.iter_rows(named=True):
            sizes.append((keys, {a: str(row[a]) for a in keys}, float(row[ROWS])))
    return sizes


def window_verdict(results: list[dict[str, Any]], policy: Policy) -> dict[str, Any]:
    """The policy's gate (``ci_cd_gate``: fail_on, decision) on one window's judged results.

    ``verdict`` is ``fail`` or ``pass`` as an audit of the window's rows would be, or ``insufficient`` when no
    result could be judged; ``failed`` lists the (metric, slicing) that fail it.
    """
    verdict, detail = verdict_of(results, policy)
    return {
        "verdict": "insufficient" if detail["nothing_judged"] else verdict,
        "n_judged": int(detail["n_judged"]),
        "n_failed": int(detail["n_failed"]),
        "n_inconclusive": int(detail["n_inconclusive"]),
        "failed": [{"metric": r["metric"], "slicing": list(r["slicing"] or [])} for r in detail["failed"]],
    }


def coinciding(windows: list[dict[str, Any]]) -> None:
    """Mark windows that sum the same stored periods (``same_as``: the first listed with those periods).

    A 30-day window in the first month equals "since deployment": the same numbers, not two confirmations.
    """
    first: dict[tuple[Any, Any, Any], str] = {}
    for window in windows:
        key = (window.get("start"), window.get("end"), window.get("periods"))
        window["same_as"] = first.get(key) if window.get("periods") else None
        first.setdefault(key, str(window["window"]))


def by_key(results: list[dict[str, Any]]) -> dict[Key, dict[str, Any]]:
    """Results by (metric, slicing)."""
    return {(r["metric"], tuple(r.get("slicing") or [])): r for r in results}


def compare_with_baseline(
    results: list[dict[str, Any]], baseline: dict[Key, dict[str, Any]] | None, alpha: float
) -> list[dict[str, Any]]:
    """Each window result with its baseline value and the tested change (Holm over the window's changes)."""
    rows = []
    for result in results:
        key = (result["metric"], tuple(result.get("slicing") or []))
        before = (baseline or {}).get(key)
        row: dict[str, Any] = {
            "metric": result["metric"],
            "slicing": list(key[1]),
            "direction": result.get("direction"),
            "threshold": _num(result.get("threshold")),
            "value": _num(result.get("value")),
            "ci_low": _num(result.get("ci_low")),
            "ci_high": _num(result.get("ci_high")),
            "standard_error": _num(result.get("standard_error")),
            "status": result.get("status"),
            "status_reason": result.get("reason") if result.get("value") is not None else None,
            "decision_ci_low": _num(result.get("decision_ci_low")),
            "decision_ci_high": _num(result.get("decision_ci_high")),
            "decision_level": _num(result.get("decision_level")),
            "baseline_value": None if before is None else _num(before.get("value")),
            "baseline_standard_error": None if before is None else _num(before.get("standard_error")),
            "change": None,
            "change_standard_error": None,
            "z": None,
            "p_value": None,
            "significant": None,
            "reason": result.get("reason") if result.get("value") is None else None,
        }
        _test(row, before)
        rows.append(row)
    tested = [r for r in rows if r["p_value"] is not None]
    if tested:
        for row, p in zip(tested, holm(np.array([r["p_value"] for r in tested])), strict=True):
            row["significant"] = bool(p <= alpha)
    return rows


def _test(row: dict[str, Any], before: dict[str, Any] | None) -> None:
    """Fill the change and its test, or say why there is none."""
    value, se = row["value"], row["standard_error"]
    if before is None:
        row["reason"] = row["reason"] or "no baseline value for this metric and slicing"
        return
    previous, se_before = row["baseline_value"], row["baseline_standard_error"]
    if value is None or previous is None:
        row["reason"] = row["reason"] or "the value is undefined in " + ("the window" if value is None else "baseline")
        return
    row["change"] = value - previous
    if not se or not se_before:
        row["reason"] = "no bootstrap standard error in " + ("the window" if not se else "the baseline")
        return
    test = change_test(previous, value, se_before, se, 0.05)
    row.update(change_standard_error=test["standard_error"], z=test["z"], p_value=test["p_value"])


def _num(value: Any) -> float | None:
    if value is None:
        return None
    number = float(value)
    return number if np.isfinite(number) else None
