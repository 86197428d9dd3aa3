"""The comparison report's frame (:class:`~fairgate.report.model.ReportFrame`, as every report type has it).

What to do, what was not judged, the compared groups' sizes under the small-cell rule, the model card, the
command to reproduce the comparison and the glossary in words, in a comparison's terms; the shared words are
:mod:`fairgate.report.frame`'s. The view carries it as ``ComparisonView.frame``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fairgate.engine.labels import slicing_label
from fairgate.report.format import fmt_count, metric_label
from fairgate.report.frame import group_text, not_judged_text, report_frame, size_text
from fairgate.report.model import GlossaryRow, ReportFrame, SizeRow
from fairgate.report.sizes import withheld

#: The comparison report's own words, after the judged metrics in the glossary.
TERMS = [
    GlossaryRow("Baseline", "the model in use", "the model each candidate is compared with, on the same people"),
    GlossaryRow(
        "Change",
        "candidate − baseline",
        "how far a candidate moves a metric; its interval resamples both models' decisions together (paired bootstrap)",
    ),
    GlossaryRow(
        "Worse",
        "deciding interval beyond the margin",
        "the change is judged worse only when its whole "
        "deciding interval (adjusted for every change judged) lies on the worse side of the margin",
    ),
    GlossaryRow(
        "Pareto frontier",
        "no model both fairer and more accurate",
        "the models no other compared model beats on one of fairness and accuracy without losing on the other",
    ),
]


def comparison_frame(document: Mapping[str, Any]) -> ReportFrame:
    """The frame of a comparison document."""
    groups = list(document.get("groups") or [])
    decision = str(document.get("decision", ""))
    return report_frame(
        document,
        decision=decision.replace("_", " ").upper(),
        why=list(document.get("reasons") or []),
        what_to_do=_what_to_do(document),
        not_judged=_not_judged(document),
        sizes=(
            ["people"],
            [
                SizeRow(slicing_label(g["slicing"]), group_text(g["slicing"], g["group"]), [size_text(g.get("n"))])
                for g in groups
            ],
            withheld(groups),
        ),
        card=(_facts_line(document), "this comparison"),
        metrics=(c["metric"] for e in document.get("candidates") or [] for c in e.get("changes") or []),
        terms=TERMS,
    )


def _facts_line(document: Mapping[str, Any]) -> str:
    baseline = document.get("baseline") or {}
    name = " ".join(str(v) for v in (baseline.get("name") or "baseline", baseline.get("version")) if v)
    digest = str(document.get("policy_sha256", ""))[:16]
    return (
        f"baseline {name} · {fmt_count(document.get('n_rows'))} people compared · "
        f"{len(document.get('candidates') or [])} candidate(s) · policy {digest}… · "
        f"decision {str(document.get('decision', '')).replace('_', ' ').upper()}"
    )


def _what_to_do(document: Mapping[str, Any]) -> str:
    chosen = document.get("chosen")
    if chosen and document.get("chosen_fails_policy"):
        return (
            f"What to do: {chosen} may replace the baseline, but it still fails the policy: promote it only with "
            "the model's owner's recorded acceptance of its failures, and keep mitigating."
        )
    if chosen:
        return (
            f"What to do: {chosen} may replace the baseline (no judged fairness metric is worse and its own audit "
            "passes); record the decision below before deploying it."
        )
    return (
        "What to do: keep the baseline; no candidate may be promoted (each one's reasons are listed below). "
        "Retrain or mitigate the candidates and compare again."
    )


def _not_judged(document: Mapping[str, Any]) -> str:
    parts = [f"{metric_label(item['metric'])}: {item['reason']}" for item in document.get("not_compared") or []]
    undecided = 0
    for entry in document.get("candidates") or []:
        undecided += sum(c.get("status") in ("undefined", "insufficient_data") for c in entry.get("changes") or [])
    if undecided:
        parts.append(f"{undecided} change(s) could not be judged (undefined, or too few people)")
    return not_judged_text(parts, "Every judged metric's change was judged.")
