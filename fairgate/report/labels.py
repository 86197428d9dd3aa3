"""The report's "Labels" section.

Results estimated before the labels arrived, and the audit's labels against external labels (the label-bias
finding, per-group disagreement and the metrics under both labels).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fairgate.document.document import AuditDocument
from fairgate.report.format import fmt, fmt_count, group_label, interval_text, metric_label, slicing_key
from fairgate.report.model import ResultRow
from fairgate.report.suppress import Suppression

RULE_TEXT = {
    "report_only": "reported only: the verdict rests on the measured results (policy labels.estimated_results)",
    "judge": "judged: they count in the verdict like measured results (policy labels.estimated_results: judge)",
}


@dataclass(frozen=True)
class DisagreementRow:
    """One group's disagreement between the audit's and the external labels."""

    slicing: str
    group: str
    n: str
    rate: str
    interval: str
    unrecorded: str  # external favourable, audit's label not
    extra: str  # audit's label favourable, external not


@dataclass(frozen=True)
class BothLabelsRow:
    """A policy metric under the audit's labels and under the external labels."""

    metric: str
    slicing: str
    audit: str
    external: str


@dataclass(frozen=True)
class LabelsView:
    """What the Labels section shows."""

    estimated: list[ResultRow] = field(default_factory=list)
    method_text: str = ""
    reference: str = ""
    rule_text: str = ""
    refusals: list[str] = field(default_factory=list)
    findings: list[ResultRow] = field(default_factory=list)
    meaning: str = ""
    external_source: str = ""
    disagreement: list[DisagreementRow] = field(default_factory=list)
    both: list[BothLabelsRow] = field(default_factory=list)
    check_text: str = ""  # the estimates an earlier audit without labels made of these people, against the labels
    checks: list[BothLabelsRow] = field(default_factory=list)  # metric, slicing, estimate [interval], measured


def counted_rows(document: AuditDocument, results: list[ResultRow]) -> list[ResultRow]:
    """The rows the verdict rests on: estimated ones only under ``labels.estimated_results: judge``."""
    if document.label_free is not None and document.label_free.estimated_results == "judge":
        return results
    return [r for r in results if not r.estimated]


def labels_view(document: AuditDocument, results: list[ResultRow], suppression: Suppression) -> LabelsView | None:
    """The Labels section's view; None for an audit with labels and no external labels."""
    if document.label_free is None and document.label_bias is None and document.label_free_check is None:
        return None
    estimated = [r for r in results if r.estimated]
    refusals = sorted(
        {f"{group}: {why}" for r in document.results for group, why in (r.estimate_reasons or {}).items()}
    )
    free = document.label_free
    bias = document.label_bias
    return LabelsView(
        estimated=estimated,
        method_text=free.method_text if free else "",
        reference=(free.reference_run_id or free.reference_note or "") if free else "",
        rule_text=RULE_TEXT.get(free.estimated_results, "") if free else "",
        refusals=refusals,
        findings=[r for r in results if r.metric == "label_disagreement_difference"],
        meaning=bias.meaning if bias else "",
        external_source=(bias.source or "") if bias else "",
        disagreement=_disagreement(document, suppression),
        both=_both(document, results),
        check_text=_check(document)[0],
        checks=_check(document)[1],
    )


def _check(document: AuditDocument) -> tuple[str, list[BothLabelsRow]]:
    """The earlier estimates of these people against the measured values, as a sentence and rows."""
    check = document.label_free_check
    if check is None:
        return "", []
    text = (
        f"Audit {check.estimate_run_id} estimated these people's results before their labels arrived: "
        f"{check.n_covered} of {check.n_compared} estimates' intervals hold the value measured now."
    )
    rows = [
        BothLabelsRow(
            metric_label(r.metric),
            slicing_key(r.slicing),
            f"{fmt(r.value)} [{interval_text(r.ci_low, r.ci_high)}]",
            fmt(r.measured) + ("" if r.covered else " (outside)"),
        )
        for r in check.results
    ]
    return text, rows


def _disagreement(document: AuditDocument, suppression: Suppression) -> list[DisagreementRow]:
    if document.label_bias is None:
        return []
    rows = []
    for g in document.label_bias.groups:
        hidden = suppression.hides(g.slicing, g.group)
        rows.append(
            DisagreementRow(
                slicing=slicing_key(g.slicing),
                group="a suppressed small group" if hidden else group_label(g.group, g.slicing),
                n="–" if hidden else fmt_count(g.n),
                rate="–" if hidden else fmt(g.rate),
                interval="" if hidden else interval_text(g.ci_low, g.ci_high),
                unrecorded="–" if hidden else fmt_count(g.external_favourable_audit_not),
                extra="–" if hidden else fmt_count(g.audit_favourable_external_not),
            )
        )
    return rows


def _both(document: AuditDocument, results: list[ResultRow]) -> list[BothLabelsRow]:
    if document.label_bias is None:
        return []
    external = {(e.metric, tuple(e.slicing)): e for e in document.label_bias.external_results}
    rows = []
    for r in results:
        other = external.get((r.metric, tuple(r.slicing)))
        if other is None:
            continue
        theirs = fmt(other.value) + (
            f" [{interval_text(other.ci_low, other.ci_high)}]" if other.ci_low is not None else ""
        )
        ours = r.value_text + (f" [{r.ci_text}]" if r.ci_text else "")
        rows.append(BothLabelsRow(r.metric_label, r.slicing_label, ours, theirs))
    return rows
