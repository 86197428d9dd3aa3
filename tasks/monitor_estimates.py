"""MONITOR without labels: estimated windows of the periods whose labels have not arrived, and the check of those
estimates when the labels come (flows/monitor.py; the engine's part is fairgate/monitoring/estimates.py).

A night without ``--labels`` stores its period cubes with ``labelled_rows`` 0 (their label column is a
placeholder); measured windows never sum them. Each of the policy's windows that holds such periods gets an
*estimated* window: label-free metrics measured, label-dependent ones estimated from the scores, calibrated on the
deployment's labelled audit (the baseline audit; else the model's newest labelled audit in the trail). Each such
period's estimates are recorded in the trail's ``label_estimates``; when the period is rebuilt with its labels, the
estimates are checked against the measured values (a ``check`` row) and the running coverage is shown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

import fairgate
from fairgate.engine.label_free import Reference
from fairgate.monitoring.estimates import (
    checked_estimates,
    counted,
    coverage,
    estimated_results,
    has_labels,
    label_free_block,
    period_estimates,
    unlabelled_periods,
)
from fairgate.monitoring.windowed import compare_with_baseline, judged_results, window_verdict
from fairgate.monitoring.windows import PeriodCube, sum_cubes, window_label, window_periods
from fairgate.policy.monitoring import Window
from tasks.store.history import reference_document
from tasks.store.monitor import label_estimate_rows

Key = tuple[str, tuple[str, ...]]


def without_labels(new: Sequence[PeriodCube], stored: Sequence[PeriodCube]) -> tuple[list[PeriodCube], list[str]]:
    """A night without labels: its cubes marked unlabelled (``labelled_rows`` 0), and never in place of a period
    whose labels are stored already (that one is kept; a note says so)."""
    labelled = {p.start for p in stored if has_labels(p)}
    kept = [replace(p, labelled_rows=0) for p in new if p.start not in labelled]
    notes = [
        f"period {p.start.isoformat()}: its labelled cube is stored; these rows without labels do not replace it"
        for p in new
        if p.start in labelled
    ]
    return kept, notes


@task(name="estimate reference", cache_policy=NO_CACHE)
def estimate_reference(trail_path: Path, model_name: str, baseline_run: str | None) -> tuple[Reference | None, str]:
    """The labelled audit the scores are calibrated on (the baseline audit when it is one), or why there is none."""
    document = reference_document(trail_path, model_name, baseline_run)
    if document is None:
        note = (
            f"no labelled audit of model {model_name!r} with reliability bins in the audit trail {trail_path}: "
            "audit the model once with --labels (same --model and --trail) to calibrate its scores"
        )
        return None, note
    reference = Reference.of(document)
    return reference, f"calibrated on the labelled audit {reference.run_id}"


@task(name="estimated window", task_run_name="estimated window {window}", cache_policy=NO_CACHE)
def estimated_window(
    window: Window,
    periods: Sequence[PeriodCube],
    night: date,
    reference: tuple[Reference | None, str],
    base: Mapping[Key, dict[str, Any]] | None,
    policy: fairgate.Policy,
) -> dict[str, Any] | None:
    """One window over its periods without labels yet, or None when it has none: measured and estimated results.

    The verdict rests on the measured results only, unless ``labels.estimated_results`` is ``judge``; estimated
    results get no change test against the baseline; the measured ones are compared with it as usual.
    """
    inside = window_periods(unlabelled_periods(periods), window, night, policy)
    cube = sum_cubes(p.cube for p in inside)
    if cube is None:
        return None
    results = estimated_results(cube, reference[0], policy, reference[1])
    verdict = window_verdict(counted(results, policy), policy)
    alpha = policy.statistics.significance_level
    measured = [r for r in results if not r.get("estimated")]
    rows = compare_with_baseline(measured, dict(base) if base is not None else None, alpha)
    for result in results:
        if result.get("estimated"):
            row = compare_with_baseline([result], None, alpha)[0]
            reasons = result.get("estimate_reasons") or None
            rows.append(row | {"estimated": True, "estimate_reasons": reasons, "reason": _estimate_reason(result)})
    return {
        "window": window_label(window),
        "estimated": True,
        "start": inside[0].start.isoformat(),
        "end": inside[-1].end.isoformat(),
        "periods": len(inside),
        "rows": cube.n_rows,
        "verdict": verdict["verdict"],
        "n_judged": verdict["n_judged"],
        "n_failed": verdict["n_failed"],
        "n_inconclusive": verdict["n_inconclusive"],
        "same_as": None,
        "results": rows,
    }


def _estimate_reason(result: Mapping[str, Any]) -> str:
    """Why an estimated row has no change test (and, when it has no value, why it has none)."""
    if result.get("value") is None:
        return f"estimated from the scores: {result.get('reason') or 'no estimate'}"
    return "estimated from the scores: not tested against the baseline"


@task(name="period estimates", cache_policy=NO_CACHE)
def estimate_records(
    periods: Sequence[PeriodCube], reference: tuple[Reference | None, str], policy: fairgate.Policy
) -> list[dict[str, Any]]:
    """The trail rows of each newly stored period without labels: its estimated results with intervals."""
    out = []
    for period in unlabelled_periods(periods):
        results = estimated_results(period.cube, reference[0], policy, reference[1])
        run = None if reference[0] is None else reference[0].run_id
        content = {"period_start": period.start.isoformat(), "rows": period.cube.n_rows}
        content["results"] = period_estimates(results)
        out.append(
            {"period_start": period.start.isoformat(), "kind": "estimate", "reference_run_id": run}
            | {"content": content}
        )
    return out


@task(name="check estimates", cache_policy=NO_CACHE)
def check_records(
    trail_path: Path, model_name: str, periods: Sequence[PeriodCube], policy: fairgate.Policy
) -> list[dict[str, Any]]:
    """Each newly labelled period estimated before and not checked yet: its latest estimates against the values
    its labels give, as trail rows (kind ``check``). A period is checked once, when the labels of as many rows as
    were estimated have arrived (before that, the measured value would be of other people)."""
    rows = label_estimate_rows(trail_path, model_name)
    checked = {r["period_start"] for r in rows if r["kind"] == "check"}
    latest = {r["period_start"]: r for r in rows if r["kind"] == "estimate"}
    out = []
    for period in periods:
        start = period.start.isoformat()
        estimate = latest.get(start)
        if not has_labels(period) or estimate is None or start in checked:
            continue
        if period.cube.n_rows < int(estimate["content"].get("rows") or 0):
            continue  # some of the estimated people's labels are still to come: checked once all have arrived
        check = checked_estimates(
            estimate["content"]["results"], judged_results(period.cube, policy), estimate["run_id"]
        )
        content = {"period_start": start} | check
        out.append(
            {"period_start": start, "kind": "check", "reference_run_id": estimate["reference_run_id"]}
            | {"content": content}
        )
    return out


def estimate_checks(
    trail_path: Path, model_name: str, tonight: Sequence[Mapping[str, Any]], confidence_level: float
) -> dict[str, Any] | None:
    """The document's ``estimate_checks``: tonight's checks and the running coverage over every check so far
    (the trail's and tonight's); None when no estimate was ever checked."""
    earlier = [r["content"] for r in label_estimate_rows(trail_path, model_name) if r["kind"] == "check"]
    new = [r["content"] for r in tonight]
    done = {c["period_start"] for c in earlier}
    everything = earlier + [c for c in new if c["period_start"] not in done]
    if not everything:
        return None
    return {"checks": new, "coverage": coverage(everything, confidence_level), "n_checks": len(everything)}


def label_free_section(
    reference: tuple[Reference | None, str], policy: fairgate.Policy, windows: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """The document's ``label_free`` block for a night with estimated windows."""
    n = sum(bool(r.get("estimated")) for w in windows for r in w["results"])
    note = None if reference[0] is not None else reference[1]
    return label_free_block(reference[0], note, policy, n)
