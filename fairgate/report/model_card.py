"""The model card: the policy's ``model_card`` section plus what the audit itself knows, in three forms.

- :func:`model_card_view`: the report's "Model card" block (page 1-2 of every kind's report);
- :func:`toolkit_card`: a JSON model card in the Model Card Toolkit's public schema v0.0.2 (vendored in
  ``fairgate/document/schema/``, see its PROVENANCE.md);
- :func:`card_markdown`: the same card as Markdown.

The owner's words come from the policy echoed in the document; the facts (evaluation window, rows, policy hash,
verdict, judged results, model name and version) from the document, so the three forms never disagree.
Only totals and aggregate results are stated: no group size, so nothing here escapes the report's suppression.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fairgate.document.document import AuditDocument
from fairgate.engine.labels import slicing_label
from fairgate.policy.model_card import CARD_FIELDS, ModelCard
from fairgate.report.format import fmt, fmt_count, interval_text, metric_label, visible_text
from fairgate.report.model import KeyValue, ModelCardView
from fairgate.report.provenance import NO_WINDOW, data_window

TOOLKIT_SCHEMA_VERSION = "0.0.2"
TOOLKIT_SCHEMA_FILE = "model_card_toolkit.v0.0.2.schema.json"
NO_SECTION = "The policy has no model_card section, so nothing is stated about the model's purpose or owner."


def policy_card(document: AuditDocument) -> ModelCard | None:
    """The policy's ``model_card`` section as the document echoes it (None when the policy has none)."""
    section = document.policy.get("model_card")
    return None if section is None else ModelCard.model_validate(section)


def _text(value: str | list[str] | None) -> str:
    """An owner's field as shown, invisible or reordering characters made visible (as a group name's are).

    List entries are joined as sentences: "Not for bail. Not outside Florida."
    """
    if isinstance(value, list):
        value = " ".join(entry if entry.rstrip().endswith((".", "!", "?")) else f"{entry.rstrip()}." for entry in value)
    return visible_text(" ".join(str(value or "").split()))  # line breaks are spaces, as HTML shows them


def model_card_view(document: AuditDocument) -> ModelCardView:
    """The "Model card" block of the report: stated fields in card order, then what is missing and the facts."""
    window = evaluation_window(document) or "not stated (no timestamp)"
    line = (
        f"evaluation window {window} · {fmt_count(document.n_rows)} rows · policy "
        f"{document.policy_sha256[:16]}… · verdict {document.verdict.upper()}"
    )
    return card_block(document.policy.get("model_card"), audit_facts(document), line)


def card_block(
    section: Mapping[str, Any] | None, facts: list[KeyValue], facts_line: str, source: str = "the audit"
) -> ModelCardView:
    """The model card block of any report type.

    The policy's ``model_card`` section (None: it has none), what it leaves out, and the facts the run knows
    (``facts_line``: them in one line for the page; ``source``: whose facts they are).
    """
    card = None if section is None else ModelCard.model_validate(section)
    stated = [] if card is None else [KeyValue(CARD_FIELDS[n], _text(getattr(card, n))) for n in _given(card)]
    missing = list(CARD_FIELDS.values()) if card is None else card.missing()
    if card is None:
        note = f"{NO_SECTION} Not stated: {', '.join(missing)}."
    elif missing:
        note = f"Not stated in the policy's model_card section: {', '.join(missing)}."
    else:
        note = ""
    return ModelCardView(stated, missing, note, facts, facts_line, source)


def _given(card: ModelCard) -> list[str]:
    return [name for name in CARD_FIELDS if getattr(card, name)]


def evaluation_window(document: AuditDocument) -> str | None:
    """The predictions' time span (their timestamp column), None when the inputs do not date them."""
    window = data_window(document)
    return None if window == NO_WINDOW else window


def input_rows(document: AuditDocument) -> str:
    """Rows per input file, e.g. "predictions 7,214, labels 7,214, attributes 7,214"."""
    parts = []
    for role, info in (document.inputs or {}).items():
        if isinstance(info, dict) and info.get("rows") is not None:
            parts.append(f"{role} {fmt_count(info['rows'])}")
    return ", ".join(parts)


def judged_metrics(document: AuditDocument) -> str:
    """The judged metrics with how many of their results failed, e.g. "Disparate impact ratio (2 of 6 failed)"."""
    counts: dict[str, list[int]] = {}
    for result in document.results:
        failed, total = counts.setdefault(result.metric, [0, 0])
        counts[result.metric] = [failed + (result.status == "fail"), total + 1]
    return "; ".join(f"{metric_label(m)} ({f} of {t} failed)" for m, (f, t) in counts.items())


def audit_facts(document: AuditDocument) -> list[KeyValue]:
    """What fairgate knows about the model without being told: model, window, rows, policy, verdict, results."""
    detail = document.verdict_detail
    rows = input_rows(document)
    return [
        KeyValue("Model", f"{document.model.name} version {document.model.version}"),
        KeyValue("Evaluation window", evaluation_window(document) or "not stated: the predictions carry no timestamp"),
        KeyValue("Rows evaluated", fmt_count(document.n_rows)),
        KeyValue("Rows per input", rows or "not recorded"),
        KeyValue("Policy SHA-256", document.policy_sha256),
        KeyValue(
            "Verdict", f"{document.verdict.upper()} ({detail.n_failed} of {detail.n_results} judged results failed)"
        ),
        KeyValue("Judged metrics", judged_metrics(document) or "none"),
    ]


def toolkit_card(document: AuditDocument) -> dict[str, Any]:
    """The model card in the Model Card Toolkit's JSON schema v0.0.2 (every value a string, as it requires).

    Mapping: owner and contact -> model_details.owners; intended use -> considerations.use_cases; out-of-scope
    uses -> considerations.ethical_considerations (a risk each, mitigated by not using the model so);
    limitations -> considerations.limitations; training and evaluation data -> model_parameters.data; judged
    results -> quantitative_analysis.performance_metrics; verdict, policy hash, window and missing fields ->
    model_details.overview and documentation.
    """
    card = policy_card(document) or ModelCard()
    details: dict[str, Any] = {
        "name": document.model.name,
        "version": {"name": document.model.version},  # its release date is not known to the audit
        "overview": _overview(document),
        "documentation": _documentation(document, card),
    }
    if card.owner or card.contact:
        details["owners"] = [{k: v for k, v in (("name", card.owner), ("contact", card.contact)) if v}]
    considerations: dict[str, Any] = {}
    if card.intended_use:
        considerations["use_cases"] = [{"description": card.intended_use}]
    if card.limitations:
        considerations["limitations"] = [{"description": text} for text in card.limitations]
    if card.out_of_scope_uses:
        considerations["ethical_considerations"] = [
            {"name": f"Out-of-scope use: {text}", "mitigation_strategy": "Do not use the model for this."}
            for text in card.out_of_scope_uses
        ]
    return {
        "schema_version": TOOLKIT_SCHEMA_VERSION,
        "model_details": details,
        "model_parameters": {"data": _datasets(document, card)},
        "quantitative_analysis": {"performance_metrics": _performance(document)},
        "considerations": considerations,
    }


def _overview(document: AuditDocument) -> str:
    detail = document.verdict_detail
    return (
        f"Fairness audit by fairgate {document.fairgate_version}: {document.verdict.upper()}, {detail.n_failed} of "
        f"{detail.n_results} judged results failed (run {document.run_id})."
    )


def _documentation(document: AuditDocument, card: ModelCard) -> str:
    facts = " ".join(f"{kv.key}: {kv.value}." for kv in audit_facts(document)[1:])
    missing = card.missing() if policy_card(document) is not None else list(CARD_FIELDS.values())
    note = f" Not stated by the model's owner: {', '.join(missing)}." if missing else ""
    return facts + note


def _datasets(document: AuditDocument, card: ModelCard) -> list[dict[str, Any]]:
    sensitive = {"sensitive_data": [a.name for a in document.attributes]}
    evaluation = [(card.evaluation_data or "the rows of this audit").rstrip(".")]
    evaluation.append(f"{fmt_count(document.n_rows)} rows evaluated")
    window = evaluation_window(document)
    evaluation.append(f"window {window}" if window else "no timestamp, so no window")
    data: list[dict[str, Any]] = []
    if card.training_data:
        data.append({"name": "training data", "description": card.training_data})
    data.append({"name": "evaluation data", "description": "; ".join(evaluation) + ".", "sensitive": sensitive})
    return data


def _performance(document: AuditDocument) -> list[dict[str, Any]]:
    rows = []
    for result in document.results:
        row: dict[str, Any] = {
            "type": f"{result.metric} ({result.status}; threshold {result.threshold}, {result.direction})",
            "value": "undefined" if result.value is None else repr(result.value),
            "slice": slicing_label(result.slicing),
        }
        if result.ci_low is not None and result.ci_high is not None:
            row["confidence_interval"] = {"lower_bound": repr(result.ci_low), "upper_bound": repr(result.ci_high)}
        rows.append(row)
    return rows


def card_markdown(document: AuditDocument) -> str:
    """The model card as Markdown: the owner's fields, what is missing, the audit's facts, the judged results."""
    view = model_card_view(document)
    lines = [f"# Model card: {_md(document.model.name)} {_md(document.model.version)}", ""]
    lines += [f"- **{kv.key}:** {_md(kv.value)}" for kv in view.stated]
    if view.missing_note:
        lines += ["", f"_{_md(view.missing_note)}_"]
    lines += ["", "## What the audit found", ""]
    lines += [f"- **{kv.key}:** {_md(kv.value)}" for kv in view.facts]
    lines += ["", "| Metric | Slicing | Value | Interval | Threshold | Status |", "|---|---|---|---|---|---|"]
    for r in document.results:
        interval = interval_text(r.ci_low, r.ci_high) or "–"
        value = fmt(r.value)
        label = _md(metric_label(r.metric))
        lines.append(
            f"| {label} | {_md(slicing_label(r.slicing))} | {value} | {interval} | {r.threshold:g} | {r.status} |"
        )
    lines += ["", f"Written by fairgate {document.fairgate_version}, run {document.run_id}, {document.created_at}.", ""]
    return "\n".join(lines)


def _md(text: str) -> str:
    """Text safe inside a Markdown list item or table cell: pipes, emphasis, line breaks and HTML neutralised.

    A Markdown viewer renders inline HTML: a policy's "<script>" must not run in a registry's UI.
    """
    text = visible_text(" ".join(text.split())).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("*", "\\*").replace("_", "\\_")
