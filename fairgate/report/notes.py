"""The reviewer notes: base rates, the impossibility note, Simpson's reversals, worst subgroups, small groups."""

from __future__ import annotations

import re
from dataclasses import replace

from fairgate.document.diagnostics import BaseRates, Diagnostics, IndividualFairness, SimpsonReversal
from fairgate.engine.labels import WITHHELD
from fairgate.engine.metric_labels import in_sentence
from fairgate.report.format import fmt, fmt_count, fmt_share, group_label, interval_text, metric_label, slicing_key
from fairgate.report.model import SUPPRESSED, KeyValue, NoteRow, ResultRow, WorstRow
from fairgate.report.suppress import Suppression


def base_rates(diagnostics: Diagnostics, suppression: Suppression) -> list[KeyValue]:
    """One row per slicing: each visible group's base rate, how many are suppressed, and whether they differ."""
    out = []
    for item in diagnostics.base_rates:
        visible = [g for g in item.groups if not suppression.hides(item.slicing, g.group)]
        parts = [f"{group_label(g.group, item.slicing)} {fmt(g.base_rate)}" for g in visible]
        hidden = len(item.groups) - len(visible)
        text = "; ".join(parts) + (f"; {hidden} suppressed" if hidden else "")
        if item.differ is not None:
            text += " (differ significantly)" if item.differ else " (no significant difference)"
        out.append(KeyValue(_key(item), text))
    return out


def _key(item: BaseRates) -> str:
    """The row of one attribute's base rates; a multiclass audit's per class ("race, class High vs rest")."""
    key = slicing_key(item.slicing)
    return key if item.outcome_class is None else f"{key}, class {item.outcome_class} vs rest"


# The engine's range in its notes: a binary base rate's as shares ("from 30.0% to 48.6%"), a regression's or
# ranking's mean outcome as numbers ("from −0.33 to 1.20 across its groups").
_NUMBER = r"[−-]?\d+(?:\.\d+)?%?"
_SPAN = re.compile(rf"(?:(ranges?) )?from {_NUMBER} to {_NUMBER}(?: across its groups)?")


def _visible_span(item: BaseRates, text: str, suppression: Suppression) -> str:
    """The note's range over the groups shown: the engine's spans every group, withheld ones included.

    One rule for every kind: a binary audit's base rates (shares) and a regression's or ranking's mean outcome
    (numbers, as the engine wrote them); a withheld group's value must not be readable from the range's ends.
    """
    if not any(suppression.hides(item.slicing, g.group) for g in item.groups):
        return text
    found = _SPAN.search(text)
    if found is None:
        return text
    shown_as = (lambda v: fmt_share(v, 1)) if "%" in found.group(0) else fmt
    visible = [
        g.base_rate for g in item.groups if g.base_rate is not None and not suppression.hides(item.slicing, g.group)
    ]
    verb = found.group(1)
    if len(visible) > 1:
        shown = f"from {shown_as(min(visible))} to {shown_as(max(visible))} among the groups shown"
        shown = f"{verb} {shown}" if verb else shown
    else:  # one group shown has no range ("from 63.6% to 63.6%" reads as if every group had it)
        shown = f"{shown_as(visible[0])} in the one group shown" if visible else WITHHELD
        shown = f"{'is' if verb == 'ranges' else 'are'} {shown}" if verb else shown
    return _SPAN.sub(shown, text, count=1)


def impossibility(diagnostics: Diagnostics, suppression: Suppression) -> list[NoteRow]:
    """Impossibility notes: the engine's per-slicing texts, with their shared explanation stated once."""
    texts = [
        (item, _visible_span(item, item.impossibility, suppression))
        for item in diagnostics.base_rates
        if item.impossibility
    ]
    if not texts:
        return []
    heads, tails = [], []
    for item, text in texts:
        head, _, tail = text.partition(". ")
        heads.append(NoteRow(_key(item), head + "."))
        tails.append(tail)
    if len(set(tails)) == 1 and tails[0]:
        return [*heads, NoteRow("", tails[0])]
    return [NoteRow(_key(item), text) for item, text in texts]


def simpson(reversals: list[SimpsonReversal]) -> list[NoteRow]:
    """Simpson's reversals, one note each, under the attribute whose disparity reverses."""
    return [NoteRow(slicing_key([r.attribute]), r.note) for r in reversals]


def worst_subgroups(diagnostics: Diagnostics, suppression: Suppression) -> list[WorstRow]:
    """The worst-off subgroup per metric, each rate by its short name (the glossary's).

    A suppressed one is named with the one mark, its value and interval withheld (which group is worst off is
    not a count; its rate is).
    """
    rows = []
    for item in diagnostics.worst_subgroups:
        hidden = suppression.hides(item.slicing, item.group)
        rows.append(
            WorstRow(
                slicing_label=slicing_key(item.slicing),
                group=suppression.name(item.slicing, item.group),
                adverse=_adverse_word(item.direction),
                rate=in_sentence(metric_label(item.metric)),  # after its adverse word: "lowest selection rate"
                value_text=SUPPRESSED if hidden else fmt(item.value),
                ci_text="" if hidden else interval_text(item.ci_low, item.ci_high),
                n_text=suppression.size_text(item.slicing, item.group, item.n),
            )
        )
    return rows


def worst_table(rows: list[WorstRow]) -> list[WorstRow]:
    """The worst-off table's rows: a withheld group that is worst off on several rates takes one row for them all.

    Its rows would repeat the group's name beside "suppressed" once a rate (13 rows for one group in the demo);
    a group whose figures are shown keeps a row per rate.
    """
    out: list[WorstRow] = []
    merged: dict[tuple[str, str], int] = {}
    for row in rows:
        key = (row.slicing_label, row.group)
        if row.value_text != SUPPRESSED:
            out.append(row)
        elif key in merged:
            first = out[merged[key]]
            out[merged[key]] = replace(first, also=(*first.also, (row.adverse, row.rate)))
        else:
            merged[key] = len(out)
            out.append(row)
    return out


def _adverse_word(direction: str) -> str:
    """Lower is worse for a metric where higher is better, and the other way round.

    >>> _adverse_word("lower_is_better"), _adverse_word("higher_is_better")
    ('highest', 'lowest')
    """
    return "lowest" if direction == "higher_is_better" else "highest"


def insufficient(diagnostics: Diagnostics, suppression: Suppression) -> list[KeyValue]:
    """Insufficient groups, one row per slicing; a suppressed group's size is never shown.

    It reads "size suppressed" for every group whose size is hidden, whatever the reason (under the minimum, or
    hidden so that one under it cannot be derived): two labels would tell which hidden groups are not small.
    """
    by_slicing: dict[str, list[str]] = {}
    for item in diagnostics.insufficient_groups:
        if item.n is None or suppression.hides_size(item.slicing, item.group):
            size = "size suppressed"
        else:
            size = f"n = {fmt_count(item.n)}"
        by_slicing.setdefault(slicing_key(item.slicing), []).append(f"{group_label(item.group, item.slicing)} ({size})")
    return [KeyValue(key, "; ".join(items)) for key, items in by_slicing.items()]


def individual_fairness(scores: IndividualFairness) -> list[KeyValue]:
    """The population-level individual-fairness indices (the checks on features have their own section)."""
    indices = {"theil_index": scores.theil_index, "generalized_entropy_index": scores.generalized_entropy_index}
    return [KeyValue(metric_label(name), fmt(value, 4)) for name, value in indices.items()]


def few_events(results: list[ResultRow]) -> list[KeyValue]:
    """Results not judged because a group's rate rests on too few events (``statistics.min_events``).

    Such groups can be large enough by head count (``min_group_size``) and still hold only 1-3 positives, so
    the insufficient-groups section lists them beside the small groups (reasons already redacted).
    """
    return [
        KeyValue(f"{r.metric_label} on {r.slicing_label}", r.reason)
        for r in results
        if r.status == "insufficient_data" and r.reason
    ]
