"""Build the report's view model from the typed audit document (pure: no I/O, no templates)."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from fairgate.document.document import AuditDocument
from fairgate.engine.kinds import Kind, kind_of
from fairgate.engine.multiclass.catalogue import adverse_label, binary_name
from fairgate.engine.tasks import metric_catalogue
from fairgate.mitigation.advice import outcome_words, priority_note, recommend
from fairgate.policy.outcomes import RATE_ABBREVIATIONS, RATE_DEFINITIONS, Outcomes, rate_phrase
from fairgate.report import glossary, notes, provenance, summary
from fairgate.report.figures import breakdowns, chart_captions, curve_sets, curves_notes, heatmaps
from fairgate.report.format import (
    UNDECIDED_STATUSES,
    calibration_axes,
    flatten,
    fmt_count,
    labels_of,
    policy_metric_label,
    roc_axes,
    value_labels,
)
from fairgate.report.frame import audit_frame
from fairgate.report.individual import individual_view
from fairgate.report.labels import counted_rows, labels_view
from fairgate.report.mitigation import mitigation_view
from fairgate.report.model import (
    PDF_ROW_LIMIT,
    SUPPRESSED_ROW,
    GlossaryRow,
    KeyValue,
    ReportFrame,
    ReportView,
    ResultRow,
)
from fairgate.report.model_card import model_card_view
from fairgate.report.published import json_content, json_note
from fairgate.report.results import result_row, with_units
from fairgate.report.sections import sections
from fairgate.report.suppress import Suppression
from fairgate.report.trend import trend_view


def as_document(doc: AuditDocument | Mapping[str, Any]) -> AuditDocument:
    """The typed document (a dict, e.g. read back from the JSON file, is validated into the model)."""
    return doc if isinstance(doc, AuditDocument) else AuditDocument.model_validate(doc)


def build_view(
    doc: AuditDocument | Mapping[str, Any],
    *,
    min_cell_size: int = 10,
    use_case: str | None = None,
    suppression: Suppression | None = None,
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
    suppression
        The document's suppression at ``min_cell_size`` when the caller already has it (the what-if explorer
        written beside the report withholds the same groups); computed here otherwise.
    """
    document = as_document(doc)
    if suppression is None:
        suppression = Suppression.of_document(document, min_cell_size)
    if use_case is None:
        use_case = document.use_case or document.policy.get("use_case")
    with value_labels(labels_of(document.policy)):  # coded group values read as the policy's labels: say
        return _build(document, min_cell_size, use_case, suppression)


def _build(document: AuditDocument, min_cell_size: int, use_case: str | None, suppression: Suppression) -> ReportView:
    pages = kind_of(document.task).report_pages
    if pages is not None:  # a kind with its own pages (the shared ones are built below)
        return _kind_view(document, pages, min_cell_size, use_case, suppression)
    words = words_of(document)
    results = [result_row(r, suppression, words) for r in document.results]
    counted = counted_rows(document, results)
    slicing_sections = sections(document, results, suppression)
    roc = curve_sets(document.curves.roc, suppression, roc_axes(words), results)
    calibration = curve_sets(
        document.curves.calibration, suppression, calibration_axes(words, document.favorable_label), results
    )
    maps = heatmaps(slicing_sections, counted)  # page 1's table: what the verdict rests on
    verdict, trace = _verdict_part(document, counted), _provenance_part(document)
    advice = _advice_part(document, use_case, min_cell_size, words, suppression)
    return ReportView(
        **verdict,
        **_facts_part(document, min_cell_size, use_case, words),
        **advice,
        frame=_frame(document, verdict, advice, trace),
        sections=slicing_sections,
        **_notes_part(document, suppression, words),
        few_events=notes.few_events(results),
        pdf_row_limit=PDF_ROW_LIMIT,
        **trace,
        **_words_part(document, results, words),
        roc=roc,
        calibration=calibration,
        heatmaps=maps,
        chart_captions=chart_captions(roc, calibration, maps, min_cell_size),
        curves_notes=curves_notes(roc, calibration, min_cell_size),
        breakdowns=breakdowns(slicing_sections),
        n_suppressed_total=sum(s.n_suppressed for s in slicing_sections),
        scorecard=summary.scorecard(counted, slicing_sections),
        detectable=summary.detectable(counted, slicing_sections),
        detectable_note=summary.detectable_note(_decision(document)),
        json_note=json_note(json_content(document), min_cell_size),
        suppression_note=suppression.note(),
        trend=trend_view(document.trend),
        individual=individual_view(
            document.individual_fairness.consistency, document.individual_fairness.counterfactual, suppression
        ),
        mitigation=mitigation_view(document.mitigation, words, min_cell_size),
        labels=labels_view(document, results, suppression),
    )


KIND_WEIGHTED_NOTE = (
    "This audit is weighted (policy columns.weight): every rate, mean, share and exposure below weighs each row by "
    "its weight; counts and confusion-matrix cells are weighted sums, and a group's n is its Kish effective size "
    "(sum of weights squared over the sum of squared weights), so cells need not add up to n."
)


def _kind_view(
    document: AuditDocument, pages_of: str, min_cell_size: int, use_case: str | None, suppression: Suppression
) -> ReportView:
    """The common frame of a non-binary report around the kind's own pages.

    The frame: verdict and judged results, what to do (the recommendations of every kind), data quality, trace,
    the judged metrics' glossary. The binary sections (ROC, calibration, slicing tables) are left empty.
    """
    words = words_of(document)
    adverse = _adverse_words(document)
    results = with_units([_kind_row(result_row(r, suppression, words), adverse) for r in document.results], document)
    module, function = pages_of.split(":")
    pages = getattr(importlib.import_module(module), function)(document, suppression)
    facts = _facts_part(document, min_cell_size, use_case, words)
    facts["favorable_note"] = ""
    verdict, trace = _verdict_part(document, results), _provenance_part(document)
    advice = _advice_part(document, use_case, min_cell_size, adverse or words, suppression)  # binary's advice
    terms = [*_kind_glossary(document.task, results), *getattr(pages, "glossary", []), SUPPRESSED_ROW]
    return ReportView(
        **verdict,
        **facts,
        **advice,
        frame=_frame(document, verdict, advice, trace, terms),
        sections=[],
        base_rates=notes.base_rates(document.diagnostics, suppression),  # the kinds whose engine states them
        impossibility=notes.impossibility(document.diagnostics, suppression),
        simpson=[],
        worst_subgroups=[],
        insufficient=notes.insufficient(document.diagnostics, suppression),
        individual_fairness=[],
        few_events=notes.few_events(results),
        pdf_row_limit=PDF_ROW_LIMIT,
        **trace,
        outcome_words=[],
        outcomes_named=False,
        rate_phrases={},
        rate_abbreviations={},
        glossary_cells=[],
        glossary_rates=[],  # the kind's glossary is the frame's
        glossary_metrics=[],
        reference_note="",
        output_dir=document.output_dir or "",
        roc=[],
        calibration=[],
        heatmaps=[],
        breakdowns=[],
        n_suppressed_total=suppression.n_hidden,
        scorecard=summary.scorecard(results, []),
        detectable=summary.detectable(results, []),
        detectable_note=summary.detectable_note(_decision(document)),
        json_note=json_note(json_content(document), min_cell_size),
        suppression_note=suppression.note(),
        trend=trend_view(document.trend),
        task=document.task,
        levels_heading=levels_heading(kind_of(document.task)),
        levels_differ=kind_of(document.task).levels_differ.lower(),
        kind_pages=pages,
        kind_weighted_note=KIND_WEIGHTED_NOTE if document.weighted else "",
    )


def _frame(
    document: AuditDocument,
    verdict: Mapping[str, Any],
    advice: Mapping[str, Any],
    trace: Mapping[str, Any],
    terms: list[GlossaryRow] | None = None,
) -> ReportFrame:
    """The frame every report type shows, for this audit (fairgate/report/frame.py).

    ``terms``: the glossary in the frame's words (a kind with its own pages); the binary report has its own.
    """
    card = model_card_view(document)
    command = trace["reproduce_command"] if trace["reproduce_recorded"] else ""  # a rebuilt one is not "the" command
    return audit_frame(verdict, advice["actions"], card, (command, document.run_id), terms or [])


def levels_heading(kind: Kind) -> str:
    """The heading of the outcome levels and the impossibility note, in the kind's words.

    >>> levels_heading(kind_of("binary")), levels_heading(kind_of("regression"))
    ('Base rates and what they imply', 'Mean outcome by group and what it implies')
    """
    if kind.outcome_level is None:
        return "Base rates and what they imply"
    return f"{kind.level_words.capitalize()} by group and what it implies"


def _decision(document: AuditDocument) -> str:
    """The policy's ``ci_cd_gate.decision`` as the document records it (the default when it does not)."""
    return str((document.policy.get("ci_cd_gate") or {}).get("decision") or "evidence_of_violation")


def _kind_row(row: ResultRow, adverse: Outcomes | None) -> ResultRow:
    """A result row of a non-binary audit, an ``adverse.<metric>`` rule labelled in the adverse classes' words.

    Such a rule is the binary metric of the decision "adverse class or not".
    """
    inner = binary_name(row.metric)
    if inner is not None and adverse is not None:
        return replace(row, metric_label=adverse_label(policy_metric_label(inner, adverse)))
    return row


def _adverse_words(document: AuditDocument) -> Outcomes | None:
    """The words of a multiclass audit's decision "adverse class or not" (favourable: not an adverse class)."""
    block = document.multiclass
    if block is None or not block.adverse_classes:
        return None
    named = " or ".join(block.adverse_classes)
    return Outcomes(
        favorable_decision=f"not given {named}"[:80],
        unfavorable_decision=f"given {named}"[:80],
        favorable_truth=f"had an outcome other than {named}"[:80],
        unfavorable_truth=f"had an outcome of {named}"[:80],
    )


def _kind_glossary(task: str, results: list[ResultRow]) -> list[GlossaryRow]:
    """The judged metrics as the task's catalogue describes them."""
    catalogue = metric_catalogue(task)
    names = dict.fromkeys(r.metric for r in results)
    return [
        GlossaryRow(next(r.metric_label for r in results if r.metric == n), catalogue[n].summary, catalogue[n].text)
        for n in names
        if n in catalogue
    ]


def _verdict_part(document: AuditDocument, results: list[ResultRow]) -> dict[str, Any]:
    failures = sorted((r for r in results if r.status == "fail"), key=lambda r: (not r.critical, -r.severity))
    detail = document.verdict_detail
    verdict = document.verdict.lower()
    return {
        "verdict": verdict,
        "verdict_text": verdict.upper(),
        "verdict_sentence": summary.verdict_sentence(
            verdict, detail.n_failed, detail.n_results, detail.fail_on, failures, detail.insufficient
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


def _facts_part(document: AuditDocument, min_cell_size: int, use_case: str | None, words: Outcomes) -> dict[str, Any]:
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
        "favorable_note": _words_note(label, words)
        if words.named
        else document.favorable_label_note or _favourable_note(label),
        "confidence_level_text": f"{document.confidence_level:.0%}",
        "min_cell_size": min_cell_size,
        "use_case": str(use_case or "not stated"),
    }


def _words_note(label: int, words: Outcomes) -> str:
    """The favourable label in the policy's own words (what the selection rate and the base rate count)."""
    return (
        f"The favourable outcome is label {label}: the decision '{words.favorable_decision}' and the true outcome "
        f"'{words.favorable_truth}'. Rates count it as positive, as AIF360 does: the selection rate is the share "
        f"{words.favorable_decision}, the base rate the share who {words.favorable_truth}."
    )


def _favourable_note(label: int) -> str:
    if label == 1:
        return "The favourable outcome is label 1: selection rate and disparate impact count positive predictions."
    return (
        f"The favourable outcome is label {label} (e.g. 'low risk'): selection rate and disparate "
        f"impact count predictions of {label}, as AIF360 does."
    )


def words_of(document: AuditDocument) -> Outcomes:
    """The outcome words: the document's block (schema 1.2), else its policy echo's, else the defaults."""
    if document.outcomes is not None:
        return Outcomes(**document.outcomes.model_dump(include=set(Outcomes.model_fields)))
    return outcome_words({"policy": document.policy})


def _words_part(document: AuditDocument, results: list[ResultRow], words: Outcomes) -> dict[str, Any]:
    return {
        "outcome_words": [
            KeyValue(f"Favourable decision (prediction {document.favorable_label})", words.favorable_decision),
            KeyValue(f"Unfavourable decision (prediction {1 - document.favorable_label})", words.unfavorable_decision),
            KeyValue(f"Favourable outcome (truth {document.favorable_label})", words.favorable_truth),
            KeyValue(f"Unfavourable outcome (truth {1 - document.favorable_label})", words.unfavorable_truth),
        ],
        "outcomes_named": words.named,
        "rate_phrases": {m: str(rate_phrase(m, words)) for m in RATE_DEFINITIONS},
        "rate_abbreviations": dict(RATE_ABBREVIATIONS),
        "glossary_cells": glossary.cells(words),
        "glossary_rates": glossary.rates(words),
        "glossary_metrics": glossary.policy_metrics((r.metric for r in results), words),
        "reference_note": glossary.reference_note(),
        "output_dir": document.output_dir or "",
    }


def _advice_part(
    document: AuditDocument, use_case: str | None, min_cell_size: int, words: Outcomes, suppression: Suppression
) -> dict[str, Any]:
    # Recomputed rather than read from the document's recommendations: same function, but with this report's
    # min_cell_size, so a reason never names a group the report suppresses.
    advice = recommend(
        document.model_dump(exclude_unset=True), use_case, min_cell_size=min_cell_size, hidden=suppression.hides
    )
    priority = next((r for r in advice if r.get("kind") == "use_case_priority"), None) or priority_note(use_case, words)
    recommendations = summary.recommendation_rows(advice, words)
    return {
        "recommendations": recommendations,
        "actions": summary.actions(recommendations),
        "use_case_note": str(priority.get("note", "")),
        "priority_metrics": [policy_metric_label(m, words) for m in priority.get("priority_metrics", [])],
        "priority_unjudged": [
            policy_metric_label(m, words)
            for m in priority.get("priority_metrics", [])
            if m not in {r.metric for r in document.results}
        ],
    }


def _notes_part(document: AuditDocument, suppression: Suppression, words: Outcomes) -> dict[str, Any]:
    diagnostics = document.diagnostics
    worst = notes.worst_subgroups(diagnostics, suppression)
    return {
        "base_rates": notes.base_rates(diagnostics, suppression),
        "impossibility": notes.impossibility(diagnostics, suppression),
        "simpson": notes.simpson(diagnostics.simpson),
        "worst_subgroups": worst,
        "worst_table": notes.worst_table(worst),
        "insufficient": notes.insufficient(diagnostics, suppression),
        "individual_fairness": notes.individual_fairness(document.individual_fairness),
    }


def _provenance_part(document: AuditDocument) -> dict[str, Any]:
    validation = document.validation
    checks = provenance.validation_checks(validation)
    command, reproduce = provenance.reproduce(document)
    return {
        "alignment": provenance.join_facts(document.alignment),
        "validation": provenance.validation_facts(validation),
        "validation_checks": checks,
        "validation_line": provenance.validation_line(checks),
        "validation_failures": [c for c in checks if not c.passed],
        "reproduce_command": command,
        "reproduce_recorded": bool(document.command_line),
        "reproduce": reproduce,
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
        "policy_text": _policy_text(document),
    }


def _policy_text(document: AuditDocument) -> str:
    """The policy as applied, with the output folder this run actually wrote to (``--out`` overrides it).

    The model card's words are shown in the report's Model card section, so here they are one line.
    """
    policy = dict(document.policy)
    card = " # shown in the Model card section" if policy.get("model_card") and policy.pop("model_card") else ""
    used = document.output_dir
    reporting = dict(policy.get("reporting") or {})
    if not used or reporting.get("output_dir") == used:
        return provenance.policy_text(policy) + (f"\n  model_card:{card}" if card else "")
    stated = reporting.get("output_dir")
    policy["reporting"] = reporting | {"output_dir": used}
    note = f"# reporting.output_dir: this run wrote to {used} (--out); the policy file says {stated}\n"
    return note + provenance.policy_text(policy) + (f"\n  model_card:{card}" if card else "")
