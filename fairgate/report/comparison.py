"""The comparison report's view model: the ``fairgate compare`` document as plain, rounded, template-ready data.

Pure: reads the comparison document (``fairgate/document/comparison.py``), returns dataclasses whose numbers are
already formatted by the reports' one formatter (``fairgate.report.format``: rounded once, signed changes,
interval ends outward), so the template only places them. The chart of the accuracy-fairness plane is drawn in
``tasks/render/compare_report.py`` from ``ComparisonView.plane``.

>>> plain(0.12345), signed(0.01234), signed(None), interval(-0.02, 0.0049)
('0.123', '+0.012', 'n/a', '[−0.020 to 0.005]')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from fairgate.engine.labels import slicing_label
from fairgate.engine.metric_labels import metric_label
from fairgate.report.comparison_frame import comparison_frame
from fairgate.report.format import fmt, fmt_count, fmt_signed, interval_text
from fairgate.report.model import SUPPRESSED, KeyValue, ReportFrame
from fairgate.report.provenance import run_record
from fairgate.report.suppress import small_count

_RULES = {
    "no_worse_fairness": "a candidate is not promoted when any judged fairness metric is worse than the baseline's",
    "no_worse_fairness_or_accuracy": (
        "a candidate is not promoted when any judged fairness metric, or its overall accuracy, is worse than the "
        "baseline's"
    ),
}
_STATUS = {
    "worse": "worse",
    "better": "better",
    "no_evidence_of_change": "no evidence of change",
    "undefined": "undefined",
    "insufficient_data": "insufficient data",
}


def plain(value: float | None) -> str:
    """A value with 3 decimals (the one formatter), ``n/a`` when undefined."""
    return "n/a" if value is None else fmt(value)


def signed(value: float | None) -> str:
    """A change with its sign and 3 decimals (the one formatter), ``n/a`` when undefined."""
    return "n/a" if value is None else fmt_signed(value)


def interval(low: float | None, high: float | None) -> str:
    """A change's interval, its ends rounded outward (the one formatter), ``n/a`` when it could not be computed."""
    text = interval_text(low, high)
    return f"[{text}]" if text else "n/a"


@dataclass(frozen=True)
class ChangeRow:
    """One metric's change on one slicing, formatted."""

    metric: str
    slicing: str
    direction: str
    baseline: str
    candidate: str
    change: str
    interval: str
    decision_interval: str
    status: str
    status_text: str


@dataclass(frozen=True)
class CandidateView:
    """One candidate: its decision, reasons, accuracy and each judged change."""

    name: str
    decision: str
    decision_text: str
    chosen: bool
    reasons: list[str]
    accuracy: ChangeRow
    changes: list[ChangeRow]
    n_worse: int
    own_audit: str  # "pass" or "FAIL" (or the verdict), from its own audit against the policy
    passes_policy: bool
    failed: list[str]
    agreement: str
    predictions: str
    plane_x: str
    pareto: bool


@dataclass(frozen=True)
class PlanePoint:
    """One model on the accuracy-fairness plane (numbers unrounded: the chart places them)."""

    name: str
    role: str
    x: float
    y: float
    pareto: bool
    decision: str | None


@dataclass(frozen=True)
class ComparisonView:
    """Everything the comparison report shows."""

    title: str
    run_id: str
    created_at: str
    fairgate_version: str
    policy_sha256: str
    decision: str
    decision_text: str
    chosen: str | None
    chosen_fails_policy: bool
    reasons: list[str]
    rule_text: str
    rule_details: list[tuple[str, str]]
    n_rows: int
    favourable_note: str
    baseline_name: str
    baseline_inputs: list[tuple[str, str, str]]
    candidates: list[CandidateView]
    not_compared: list[str]
    plane_metric: str | None
    plane_direction: str | None
    plane: list[PlanePoint]
    record: list[KeyValue]  # the run's identity and the policy's hash, above the sign-off
    n_rows_text: str = ""  # the people compared, as a count
    baseline_x: str = ""  # the baseline's worst value of the plane's metric
    frame: ReportFrame | None = None  # what to do, not judged, group sizes, model card, command, glossary


def comparison_view(document: Mapping[str, Any], min_cell_size: int = 10) -> ComparisonView:
    """The view model of a comparison document; ``min_cell_size``: the policy's small-cell rule for its counts."""
    plane = document.get("plane") or {"metric": None, "direction": None, "points": []}
    by_name = {p["name"]: p for p in plane["points"] if p["role"] == "candidate"}
    statistics, rule = document["statistics"], document["rule"]
    baseline = document["baseline"]
    decision = document["decision"]
    frame = comparison_frame(document)
    return ComparisonView(
        title=f"Model comparison: {len(document['candidates'])} candidate(s) against {_name(baseline)}",
        run_id=str(document["run_id"]),
        created_at=str(document["created_at"]),
        fairgate_version=str(document["fairgate_version"]),
        policy_sha256=str(document["policy_sha256"])[:16],
        decision=decision,
        decision_text=frame.decision,
        chosen=document.get("chosen"),
        chosen_fails_policy=bool(document.get("chosen_fails_policy")),
        reasons=list(document["reasons"]),
        rule_text=_RULES[rule["rule"]],
        rule_details=_rule_details(rule, statistics),
        n_rows=int(document["n_rows"]),
        favourable_note=f"favourable outcome: label {document['favorable_label']} (selection rates count it)",
        baseline_name=_name(baseline),
        baseline_inputs=_inputs(baseline),
        candidates=[
            _candidate(e, document.get("chosen"), by_name.get(e["name"]), rule["rule"], min_cell_size)
            for e in document["candidates"]
        ],
        not_compared=[f"{metric_label(item['metric'])}: {item['reason']}" for item in document["not_compared"]],
        plane_metric=metric_label(plane["metric"]) if plane["metric"] else None,
        plane_direction=plane["direction"],
        plane=[
            PlanePoint(p["name"], p["role"], float(p["x"]), float(p["y"]), bool(p["pareto"]), p["decision"])
            for p in plane["points"]
        ],
        record=run_record(document),
        n_rows_text=fmt_count(document["n_rows"]),
        baseline_x=next((plain(p["x"]) for p in plane["points"] if p["role"] == "baseline"), "n/a"),
        frame=frame,
    )


def _rule_details(rule: Mapping[str, Any], statistics: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The promotion rule and the statistics behind it, as the report's key-value table."""
    return [
        ("rule", str(rule["rule"])),
        ("fairness margin", f"{rule['margin']:g} (a worsening up to this is tolerated)"),
        ("accuracy margin", f"{rule['accuracy_margin']:g}"),
        (
            "promotable",
            "its own audit passes the policy (the gate's decision rule) and no fairness metric is worse",
        ),
        (
            "failing candidates",
            "may be promoted when significantly better than the baseline (promote_failing_if_better)"
            if rule.get("promote_failing_if_better")
            else "never promoted (promote_failing_if_better: false)",
        ),
        ("worse means", "the deciding interval of the change lies wholly beyond the margin on the worse side"),
        ("intervals", f"{statistics['method']}, {statistics['n_bootstrap']} replicates, seed {statistics['seed']}"),
        ("shown interval level", f"{statistics['confidence_level']:g}"),
        ("deciding interval level", fmt(statistics["decision_level"], 4)),
        ("multiplicity", str(statistics["multiplicity"])),
        (
            "several candidates",
            "promote when at least one candidate may be (exit 0), none: exit 1; the chosen one has a significant "
            "accuracy gain (the largest), else it is the first promotable one given",
        ),
    ]


def _name(model: Mapping[str, Any]) -> str:
    name = model.get("name") or "baseline"
    return f"{name} {model['version']}" if model.get("version") else str(name)


def _inputs(model: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(role, source, sha256 prefix) per input."""
    return [(role, str(i["source"]), str(i["sha256"])[:12]) for role, i in model["inputs"].items()]


def agreement_text(agreement: Mapping[str, Any], n_rows: int, min_cell_size: int) -> str:
    """How many people the two models decide alike, and differently each way, under the small-cell rule.

    A count of 1 to k-1 people decided differently is never printed; nor then the people decided alike, from
    which the two together would follow.

    >>> counts = {"same_decision": 95, "favourable_only_baseline": 3, "favourable_only_candidate": 2}
    >>> agreement_text(counts, 100, 10)
    '100 people compared; the counts decided alike and differently are suppressed (small-cell rule)'
    >>> agreement_text(counts, 100, 2)
    '95 of 100 people decided alike; favourable only for the baseline: 3, only for the candidate: 2'
    """
    differ = (agreement["favourable_only_baseline"], agreement["favourable_only_candidate"])
    if any(small_count(n, min_cell_size) for n in differ):
        rule = f"the counts decided alike and differently are {SUPPRESSED} (small-cell rule)"
        return f"{fmt_count(n_rows)} people compared; {rule}"
    return (
        f"{fmt_count(agreement['same_decision'])} of {fmt_count(n_rows)} people decided alike; favourable only for "
        f"the baseline: {fmt_count(differ[0])}, only for the candidate: {fmt_count(differ[1])}"
    )


def _candidate(
    entry: Mapping[str, Any], chosen: str | None, point: Mapping[str, Any] | None, rule: str, min_cell_size: int
) -> CandidateView:
    rows = [_row(r) for r in entry["changes"]]
    accuracy = _row(entry["accuracy"])
    if rule == "no_worse_fairness" and accuracy.status == "worse":  # shown, but it does not decide
        accuracy = replace(accuracy, status_text="worse (the rule does not judge accuracy)")
    agreement = entry["agreement"]
    return CandidateView(
        name=str(entry["name"]),
        decision=entry["decision"],
        decision_text=entry["decision"].replace("_", " "),
        chosen=entry["name"] == chosen,
        reasons=list(entry["reasons"]),
        accuracy=accuracy,
        changes=rows,
        n_worse=sum(r.status == "worse" for r in rows),
        own_audit="pass" if entry["passes_policy"] else str(entry["audit"]["verdict"]).upper(),
        passes_policy=bool(entry["passes_policy"]),
        failed=list(entry["audit"]["failed"]),
        agreement=agreement_text(agreement, int(entry["n_rows"]), min_cell_size),
        predictions=str(entry["model"]["inputs"]["predictions"]["source"]),
        plane_x="n/a" if point is None else plain(point["x"]),
        pareto=bool(point and point["pareto"]),
    )


def _row(row: Mapping[str, Any]) -> ChangeRow:
    return ChangeRow(
        metric=metric_label(str(row["metric"])),
        slicing=slicing_label(row["slicing"]),
        direction=str(row["direction"]).replace("_", " "),
        baseline=plain(row["baseline"]),
        candidate=plain(row["candidate"]),
        change=signed(row["change"]),
        interval=interval(row["ci_low"], row["ci_high"]),
        decision_interval=interval(row["decision_ci_low"], row["decision_ci_high"]),
        status=str(row["status"]),
        status_text=_STATUS.get(str(row["status"]), str(row["status"])),
    )
