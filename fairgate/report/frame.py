"""The frame every report type shows: its words, defined once.

A report type (audit, monitoring night, comparison) builds a :class:`~fairgate.report.model.ReportFrame` from its
own document with :func:`report_frame`: decision and why, what to do, what was not judged, the groups' sizes under
the small-cell rule, the model card, the command that ran it, the glossary in words and the run the sign-off
names. What is the same in every type is here: a size's text, a group's label, the size note, the command block,
the "Not judged" sentence and the glossary's closing rows. The templates show the frame through
``reports/partials/frame.html.j2``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from fairgate.policy.outcomes import Outcomes
from fairgate.report.format import fmt_count
from fairgate.report.glossary import policy_metrics
from fairgate.report.model import (
    SUPPRESSED,
    SUPPRESSED_ROW,
    Action,
    GlossaryRow,
    ModelCardView,
    ReportFrame,
    ResultRow,
    SizeRow,
)
from fairgate.report.model_card import card_block
from fairgate.report.provenance import command_text
from fairgate.report.sizes import size_note

#: A size column where the group is absent (e.g. a window in which nobody of the group was labelled).
ABSENT = "–"


def size_text(n: Any) -> str:
    """A published size as the frame prints it: the count, or the one word for a withheld size.

    >>> size_text(3696), size_text(None)
    ('3,696', 'suppressed')
    """
    return SUPPRESSED if n is None else fmt_count(n)


def group_text(slicing: Sequence[str], group: Mapping[str, Any]) -> str:
    """A group's label: its values in the slicing's order.

    >>> group_text(["race", "sex"], {"sex": "Female", "race": "Asian"})
    'Asian · Female'
    """
    return " · ".join(str(group[a]) for a in slicing)


def not_judged_text(parts: Sequence[str], nothing: str) -> str:
    """The "Not judged" sentence from its parts; ``nothing`` when every result was judged.

    >>> not_judged_text(["7 days: 2 result(s) neither pass nor fail"], "Every result was judged.")
    'Not judged: 7 days: 2 result(s) neither pass nor fail.'
    """
    return ("Not judged: " + "; ".join(parts) + ".") if parts else nothing


def report_frame(
    document: Mapping[str, Any],
    *,
    decision: str,
    why: Sequence[str],
    what_to_do: str,
    not_judged: str,
    sizes: tuple[Sequence[str], Sequence[SizeRow], int],
    card: tuple[str, str],
    metrics: Iterable[str],
    terms: Sequence[GlossaryRow],
) -> ReportFrame:
    """The frame of one report from the parts its type words itself.

    ``sizes``: the size table's columns, its rows and how many sizes it withholds (the note then states the
    small-cell rule at the document's ``min_cell_size``); ``card``: the facts line of the model card and whose
    facts they are ("this monitoring run"); ``metrics``: the judged metrics the glossary explains before the
    type's own ``terms``, the glossary ending on the one word for a withheld size. The model card's fields and
    the command come from the document (``model_card``, ``command_line``), the sign-off's run from ``run_id``.
    """
    columns, rows, withheld = sizes
    command = document.get("command_line")
    return ReportFrame(
        decision=decision,
        why=list(why),
        what_to_do=what_to_do,
        not_judged=not_judged,
        size_columns=list(columns),
        size_rows=list(rows),
        size_note=size_note(int(document.get("min_cell_size") or 10), withheld) if withheld else "",
        model_card=card_block(document.get("model_card"), [], *card),
        command=command_text(str(command)) if command else "",
        glossary=[*policy_metrics(metrics, Outcomes()), *terms, SUPPRESSED_ROW],
        run_id=str(document.get("run_id", "")),
    )


#: What to do after an audit that judged nothing, and after one that needs no mitigation.
NOTHING_JUDGED = (
    "Nothing was judged, so there is nothing to mitigate yet: collect more people (or events) per group and audit "
    "again."
)
NOTHING_TO_DO = "No mitigation is needed for this run. Keep the policy's monitoring schedule."


#: How many of an audit's results neither pass nor fail page 1 names; the rest are counted.
NAMED_UNDECIDED = 6

#: Where an audit's undecided result's reason is, and how to read its Holm-adjusted p-value.
UNDECIDED_READING = (
    "Each one's reason (its interval and Holm-adjusted p-value) is under its slicing's results table; a "
    "Holm-adjusted p-value close to one means no evidence of a breach once the number of results tested is allowed "
    "for, not evidence that there is none."
)


def audit_not_judged(undecided: Sequence[ResultRow]) -> str:
    """An audit's "Not judged" sentence: its results that neither pass nor fail, each with its mark.

    >>> audit_not_judged([])
    'Every result was judged.'
    """
    if not undecided:
        return not_judged_text([], "Every result was judged.")
    named = [
        f"{r.metric_label} on {r.slicing_label} {r.mark}"
        + (f" (would catch {r.detectable_text})" if r.status == "inconclusive" and r.detectable_text else "")
        for r in undecided[:NAMED_UNDECIDED]
    ]
    if len(undecided) > NAMED_UNDECIDED:
        named.append(f"and {len(undecided) - NAMED_UNDECIDED} more")
    head = f"{len(undecided)} result(s) are neither pass nor fail: " + "; ".join(named)
    return f"{not_judged_text([head], '')} {UNDECIDED_READING}"


def audit_what_to_do(verdict: str, actions: Sequence[Action]) -> str:
    """An audit's "What to do": how many mitigations the page lists and in what order, or why there is none.

    Page 1 lists the actions (each with its reason) under this sentence, in the order of the recommendations:
    the critical metrics' first, then the use case's priority metrics', then by severity.

    >>> audit_what_to_do("pass", []) == NOTHING_TO_DO
    True
    """
    if len(actions) == 1:
        return "What to do: 1 mitigation for the failed metric."
    if actions:
        return f"What to do: {len(actions)} mitigations for the failed metrics, critical and prioritised ones first."
    return NOTHING_JUDGED if verdict == "insufficient" else NOTHING_TO_DO


def audit_frame(
    verdict: Mapping[str, Any],
    actions: Sequence[Action],
    card: ModelCardView,
    run: tuple[str, str],
    glossary: Sequence[GlossaryRow] = (),
) -> ReportFrame:
    """The frame of an audit (every kind), from the view's verdict part and actions.

    ``run``: the command that ran it ("" when not recorded) and the run id; ``glossary``: the terms of a kind
    whose closing glossary is the frame's.

    Page 1 shows the frame's decision and why, what to do (with each action and its reason under it) and what
    was not judged, and the model card; the closing pages its command and run. The score card is the audit's
    own, and so is the binary glossary; its group sizes are the slicing tables'.
    """
    return ReportFrame(
        decision=verdict["verdict_text"],
        why=[verdict["verdict_sentence"]],
        what_to_do=audit_what_to_do(verdict["verdict"], actions),
        not_judged=audit_not_judged(verdict["undecided"]),
        size_columns=[],
        size_rows=[],
        size_note="",
        model_card=card,
        command=run[0],
        glossary=list(glossary),
        run_id=run[1],
    )
