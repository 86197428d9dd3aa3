"""The comparison report's frame, as every report type has it.

What to do, what was not judged, the compared groups' sizes under the small-cell rule, the model card, the
command to reproduce the comparison and the glossary in words. The view carries it as ``ComparisonView.frame``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fairgate.engine.labels import slicing_label
from fairgate.policy.outcomes import Outcomes
from fairgate.report.format import fmt_count, metric_label
from fairgate.report.glossary import policy_metrics
from fairgate.report.model import SUPPRESSED, SUPPRESSED_ROW, GlossaryRow, ModelCardView
from fairgate.report.model_card import card_block
from fairgate.report.provenance import command_text
from fairgate.report.sizes import size_note, withheld

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
    SUPPRESSED_ROW,
]


@dataclass(frozen=True)
class GroupSizeRow:
    """One compared group's size ("suppressed" where withheld)."""

    slicing: str
    group: str
    n: str


@dataclass(frozen=True)
class ComparisonFrame:
    """The parts every report type shows, for a comparison."""

    what_to_do: str
    not_judged: str
    size_rows: list[GroupSizeRow]
    size_note: str  # the small-cell rule when it withholds a size here, "" otherwise
    model_card: ModelCardView
    command: str  # the command that ran the comparison, one option a line ("" when not recorded)
    glossary: list[GlossaryRow]


def comparison_frame(document: Mapping[str, Any]) -> ComparisonFrame:
    """The frame of a comparison document."""
    groups = list(document.get("groups") or [])
    hidden = withheld(groups)
    metrics = dict.fromkeys(c["metric"] for e in document.get("candidates") or [] for c in e.get("changes") or [])
    command = document.get("command_line")
    return ComparisonFrame(
        what_to_do=_what_to_do(document),
        not_judged=_not_judged(document),
        size_rows=[
            GroupSizeRow(
                slicing_label(g["slicing"]),
                " · ".join(str(g["group"][a]) for a in g["slicing"]),
                SUPPRESSED if g.get("n") is None else fmt_count(g["n"]),
            )
            for g in groups
        ],
        size_note=size_note(int(document.get("min_cell_size") or 10), hidden) if hidden else "",
        model_card=card_block(document.get("model_card"), [], _facts_line(document), "this comparison"),
        command=command_text(str(command)) if command else "",
        glossary=policy_metrics(metrics, Outcomes()) + TERMS,
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
    return ("Not judged: " + "; ".join(parts) + ".") if parts else "Every judged metric's change was judged."
