"""Build the report's view model from the typed audit document (pure: no I/O, no templates)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fairgate.document.document import AuditDocument
from fairgate.mitigation.advice import priority_note, recommend
from fairgate.report import notes, provenance, summary
from fairgate.report.figures import breakdowns, curve_sets, heatmaps
from fairgate.report.format import UNDECIDED_STATUSES, flatten, fmt_count, metric_label
from fairgate.report.model import ReportView, ResultRow
from fairgate.report.results import result_row
from fairgate.report.sections import sections
from fairgate.report.suppress import Suppression
from fairgate.report.trend import trend_view


def as_document(doc: AuditDocument | Mapping[str, Any]) -> AuditDocument:
    """The typed document (a dict, e.g. read back from the JSON file, is validated into the model)."""
    return doc if isinstance(doc, AuditDocument) else AuditDocument.model_validate(doc)


def build_view(
    doc: AuditDocument | Mapping[str, Any], *, min_cell_size: int = 10, use_case: str | None = None
) -> ReportView:
    """The view model of one audit result document.

    Parameters
    ----------
    doc
        The audit document, typed or as its dict (``AuditResult.to_dict()`` or the JSON file read back).
    min_cell_size
        Groups with fewer people are suppressed in every table, note and chart.
    use_case
        Overrides the document's use case for the advice; recommendations come from
        :func:`fairgate.mitigation.advice.recommend` with this ``min_cell_size``.
    """
    document = as_document(doc)
    if use_case is None:
        use_case = document.use_case or document.policy.get("use_case")
    suppression = Suppression.of(document.groups, min_cell_size)
    results = [result_row(r, suppression) for r in document.results]
    slicing_sections = sections(document, results, suppression)
    return ReportView(
        **_verdict_part(document, results),
        **_facts_part(document, min_cell_size, use_case),
        **_advice_part(document, use_case, min_cell_size),
        sections=slicing_sections,
        **_notes_part(document, suppression),
        **_provenance_part(document),
        roc=curve_sets(document.curves.roc, suppression),
        calibration=curve_sets(document.curves.calibration, suppression),
        heatmaps=heatmaps(slicing_sections, results),
        breakdowns=breakdowns(slicing_sections),
        n_suppressed_total=sum(s.n_suppressed for s in slicing_sections),
        scorecard=summary.scorecard(results, slicing_sections),
        trend=trend_view(document.trend),
    )


def _verdict_part(document: AuditDocument, results: list[ResultRow]) -> dict[str, Any]:
    failures = sorted((r for r in results if r.status == "fail"), key=lambda r: (not r.critical, -r.severity))
    detail = document.verdict_detail
    verdict = document.verdict.lower()
    return {
        "verdict": verdict,
        "verdict_text": verdict.upper(),
        "verdict_sentence": summary.verdict_sentence(
            verdict, detail.n_failed, detail.n_results, detail.fail_on, failures
        ),
        "fail_on": detail.fail_on,
        "n_failed": detail.n_failed,
        "n_results": detail.n_results,
        "n_uncertain": sum(1 for r in results if r.uncertain),
        "failures": failures,
        "headline_failures": summary.headline(failures),
        "watch": [r for r in results if r.status == "pass" and r.uncertain],
        "undecided": [r for r in results if r.status in UNDECIDED_STATUSES],
    }


def _facts_part(document: AuditDocument, min_cell_size: int, use_case: str | None) -> dict[str, Any]:
    model = document.model
    label = document.favorable_label
    return {
        "title": f"Fairness audit: {model.name} {model.version}".strip(),
        "model_name": model.name,
        "model_version": model.version,
        "run_id": document.run_id,
        "created_at": document.created_at,
        "fairgate_version": document.fairgate_version,
        "n_rows_text": fmt_count(document.n_rows),
        "data_window": provenance.data_window(document),
        "favorable_label": str(label),
        "favorable_note": document.favorable_label_note or _favourable_note(label),
        "confidence_level_text": f"{document.confidence_level:.0%}",
        "min_cell_size": min_cell_size,
        "use_case": str(use_case or "not stated"),
    }


def _favourable_note(label: int) -> str:
    if label == 1:
        return "The favourable outcome is label 1: selection rate and disparate impact count positive predictions."
    return (
        f"The favourable outcome is label {label} (e.g. 'low risk'): selection rate and disparate "
        f"impact count predictions of {label}, as AIF360 does."
    )


def _advice_part(document: AuditDocument, use_case: str | None, min_cell_size: int) -> dict[str, Any]:
    # Recomputed rather than read from the document's recommendations: same function, but with this report's
    # min_cell_size, so a reason never names a group the report suppresses.
    advice = recommend(document.model_dump(exclude_unset=True), use_case, min_cell_size=min_cell_size)
    priority = next((r for r in advice if r.get("kind") == "use_case_priority"), None) or priority_note(use_case)
    recommendations = summary.recommendation_rows(advice)
    return {
        "recommendations": recommendations,
        "actions": summary.actions(recommendations),
        "use_case_note": str(priority.get("note", "")),
        "priority_metrics": [metric_label(m) for m in priority.get("priority_metrics", [])],
    }


def _notes_part(document: AuditDocument, suppression: Suppression) -> dict[str, Any]:
    diagnostics = document.diagnostics
    return {
        "base_rates": notes.base_rates(diagnostics, suppression),
        "impossibility": notes.impossibility(diagnostics),
        "simpson": notes.simpson(diagnostics.simpson),
        "worst_subgroups": notes.worst_subgroups(diagnostics, suppression),
        "insufficient": notes.insufficient(diagnostics, suppression),
        "individual_fairness": notes.individual_fairness(document.individual_fairness),
    }


def _provenance_part(document: AuditDocument) -> dict[str, Any]:
    validation = document.validation
    return {
        "alignment": flatten(document.alignment),
        "validation": flatten(provenance.validation_summary(validation)),
        "validation_checks": provenance.validation_checks(validation),
        "validation_warnings": provenance.validation_warnings(validation),
        "proxy": flatten(provenance.proxy_facts(document.proxy)),
        **dict(
            zip(
                ("proxy_attenuation_statement", "proxy_attenuation"),
                provenance.proxy_attenuation(document.proxy),
                strict=True,
            )
        ),
        "inputs": flatten(document.inputs),
        "trail": provenance.trail(document),
        "policy_text": provenance.policy_text(document.policy),
    }
