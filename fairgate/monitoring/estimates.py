"""Monitoring before the labels arrive: windows of periods without labels, estimated; estimates checked later.

A period cube stored without labels (``labelled_rows`` 0: its label column is a placeholder) never enters a
measured window. A night's windows are judged twice, apart: over their labelled periods (measured, as always) and
over their periods without labels yet (:func:`estimated_results`): the label-free metrics (selection rate,
demographic parity, disparate impact) measured, the label-dependent ones estimated from the scores under per-group
calibration (``fairgate.engine.label_free``: the same reference audit, calibration test and refusal as an audit
without labels). Whether the estimated results count in a window's verdict is the policy's
``labels.estimated_results`` (``report_only`` by default: shown, never counted).

When a period's labels arrive, each estimate of the period is compared with the value its labels give
(:func:`checked_estimates`: did the interval cover it), and the running coverage over every check so far gets a
Wilson interval (:func:`coverage`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from fairgate.engine.adjudicate import adjudicate
from fairgate.engine.cube import Cube
from fairgate.engine.label_checks import LabelEvidence, estimate_check
from fairgate.engine.label_free import METHOD, METHOD_TEXT, Reference, estimated_entries
from fairgate.engine.slicing import compute_slicing, plan_slicings
from fairgate.engine.stats import wilson_interval, z_value
from fairgate.monitoring.windows import PeriodCube
from fairgate.policy.core import Policy
from fairgate.policy.labels import DEFAULT_LABEL_RULES


def has_labels(period: PeriodCube) -> bool:
    """Whether a stored period cube counts labelled rows (a cube stored before its labels arrived counts none)."""
    return period.labelled_rows > 0


def labelled_periods(periods: Iterable[PeriodCube]) -> list[PeriodCube]:
    """The periods a measured window may sum."""
    return [p for p in periods if has_labels(p)]


def unlabelled_periods(periods: Iterable[PeriodCube]) -> list[PeriodCube]:
    """The periods whose labels have not arrived: their label-dependent metrics can only be estimated."""
    return [p for p in periods if not has_labels(p)]


def estimated_results(
    cube: Cube, reference: Reference | None, policy: Policy, missing: str = "there is no labelled reference audit"
) -> list[dict[str, Any]]:
    """The policy's judged results on a cube without labels, as an audit without labels lists them.

    Label-free metrics measured; label-dependent ones estimated (``estimated: true``), or ``insufficient_data``
    with the reason per group (calibration refused, no reference, no scores).
    """
    parts = [compute_slicing(cube, slicing, policy) for slicing in plan_slicings(cube, policy)]
    evidence = LabelEvidence(labels_absent=True, estimated=estimated_entries(cube, reference, policy, missing))
    return list(adjudicate(cube, parts, policy, labels=evidence).to_dict()["results"])


def counted(results: list[dict[str, Any]], policy: Policy) -> list[dict[str, Any]]:
    """The results a window's verdict rests on: estimated ones only under ``labels.estimated_results: judge``."""
    return LabelEvidence(labels_absent=True).counted(results, policy)


def estimates_judged(policy: Policy) -> bool:
    """Whether estimated results may fail a window and so the night (``labels.estimated_results: judge``)."""
    return (policy.labels or DEFAULT_LABEL_RULES).estimated_results == "judge"


def label_free_block(reference: Reference | None, note: str | None, policy: Policy, n_estimated: int) -> dict[str, Any]:
    """The monitoring document's ``label_free`` block: method, reference audit (or why none), the policy's rule."""
    return {
        "method": METHOD,
        "method_text": METHOD_TEXT,
        "reference_run_id": None if reference is None else reference.run_id,
        "reference_note": note,
        "estimated_results": "judge" if estimates_judged(policy) else "report_only",
        "n_estimated": n_estimated,
    }


def period_estimates(results: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The estimated results of one period with an interval: what its labels will be checked against."""
    keys = ("metric", "slicing", "value", "ci_low", "ci_high")
    return [{k: r[k] for k in keys} for r in results if r.get("estimated") and r.get("ci_low") is not None]


def checked_estimates(
    estimates: Sequence[Mapping[str, Any]], measured: Sequence[Mapping[str, Any]], estimate_run_id: str
) -> dict[str, Any]:
    """A period's earlier estimates against the values its labels now give (``label_checks.estimate_check``)."""
    earlier = {"run_id": estimate_run_id, "results": [dict(e) | {"estimated": True} for e in estimates]}
    return estimate_check(earlier, {"results": list(measured)})


def coverage(checks: Sequence[Mapping[str, Any]], confidence_level: float) -> dict[str, Any]:
    """The running coverage of the estimates: covered / compared over every check, with its Wilson interval.

    >>> c = coverage([{"n_compared": 40, "n_covered": 38}], 0.95)
    >>> c["n_compared"], c["n_covered"], round(c["rate"], 3), round(c["ci_low"], 3), round(c["ci_high"], 3)
    (40, 38, 0.95, 0.835, 0.986)
    """
    compared = sum(int(c["n_compared"]) for c in checks)
    covered = sum(int(c["n_covered"]) for c in checks)
    if not compared:
        return {"n_compared": 0, "n_covered": 0, "rate": None, "ci_low": None, "ci_high": None}
    low, high = wilson_interval(np.array([covered]), np.array([compared]), z_value(confidence_level))
    return {
        "n_compared": compared,
        "n_covered": covered,
        "rate": covered / compared,
        "ci_low": float(low[0]),
        "ci_high": float(high[0]),
    }
