"""The report's individual-fairness page: consistency overall and per group, counterfactual flip rates, meaning.

Pure view model (numbers formatted here). Groups the report suppresses (``Suppression.hides``: fewer than
``reporting.min_cell_size`` people, or derivable from published totals) show no numbers.
"""

from __future__ import annotations

from fairgate.document.individual import Consistency, Counterfactual, FlipDirection, GroupFlips
from fairgate.engine.labels import slicing_label
from fairgate.report.format import fmt, fmt_count, group_label, interval_text
from fairgate.report.individual_model import ConsistencyRow, FlipRow, IndividualView
from fairgate.report.model import GlossaryRow
from fairgate.report.suppress import Suppression

SUPPRESSED = "suppressed"

#: Glossary entries of the two judged checks (``results`` name them like metrics).
GLOSSARY: dict[str, GlossaryRow] = {
    "consistency": GlossaryRow(
        "Consistency",
        "1 − mean over people of |ŷᵢ − mean ŷ of i's k nearest neighbours|",
        "how alike the decisions of people with similar features are (AIF360's consistency; 1 = every person "
        "decided as their neighbours); judged in each group: at least the threshold",
    ),
    "counterfactual_flip_rate": GlossaryRow(
        "Counterfactual flip rate",
        "people whose decision changes with the sensitive attribute flipped / n",
        "how often the decision depends on the sensitive attribute alone; judged in each group: at most the threshold",
    ),
}


def individual_view(
    consistency: Consistency | None, counterfactual: Counterfactual | None, suppression: Suppression
) -> IndividualView | None:
    """The page's view, or None when the audit had no features input."""
    if consistency is None:
        return None
    features = ", ".join(consistency.features)
    flips = counterfactual
    return IndividualView(
        consistency=fmt(consistency.value),
        consistency_interval=_interval(consistency.ci_low, consistency.ci_high),
        setup=(
            f"k = {consistency.k} nearest neighbours over {len(consistency.features)} features ({features}), "
            f"scaling: {consistency.scaling}; {_people(consistency)}"
        ),
        neighbours=consistency.neighbours,
        consistency_rows=[
            _consistency_row(g.slicing, g.group, g.n, g.value, g.ci_low, g.ci_high, g.sufficient, suppression)
            for g in consistency.groups
        ],
        flip_rate=None if flips is None else fmt(flips.flip_rate),
        flip_interval=None if flips is None else _interval(flips.ci_low, flips.ci_high),
        flip_directions=None if flips is None else _directions(flips.to_favorable, flips.to_unfavorable),
        flip_rows=[] if flips is None else [_flip_row(g, suppression) for g in flips.groups],
        meaning=_meaning(flips is not None),
        scope="over everyone" if consistency.sampled is None else "estimated over everyone",
        too_few="too few people" if consistency.sampled is None else "too few sampled people",
    )


def _consistency_row(
    slicing: list[str],
    group: dict[str, str],
    n: int | None,
    value: float | None,
    low: float | None,
    high: float | None,
    sufficient: bool,
    suppression: Suppression,
) -> ConsistencyRow:
    hidden = suppression.hides(slicing, group)
    return ConsistencyRow(
        slicing=slicing_label(slicing),
        group=group_label(group, slicing),
        n=SUPPRESSED if hidden else fmt_count(n),
        value="" if hidden else fmt(value),
        interval="" if hidden else _interval(low, high),
        judged=sufficient,
    )


def _flip_row(group: GroupFlips, suppression: Suppression) -> FlipRow:
    hidden = suppression.hides(group.slicing, group.group)
    return FlipRow(
        slicing=slicing_label(group.slicing),
        group=group_label(group.group, group.slicing),
        n=SUPPRESSED if hidden else fmt_count(group.n),
        rate="" if hidden else fmt(group.flip_rate),
        interval="" if hidden else _interval(group.ci_low, group.ci_high),
        to_favorable="" if hidden else fmt(group.to_favorable.rate),
        to_unfavorable="" if hidden else fmt(group.to_unfavorable.rate),
        judged=group.sufficient,
    )


def _people(consistency: Consistency) -> str:
    """Who the consistency is of: everyone, or a seeded sample (then every number on the page is an estimate)."""
    sample = consistency.sampled
    if sample is None:
        return f"{fmt_count(consistency.n)} people"
    return (
        f"estimated from a seeded random sample of {fmt_count(sample.people_sampled)} of {fmt_count(sample.people)} "
        f"people (seed {sample.seed}; each sampled person's neighbours searched among everyone; the intervals "
        f"include the sampling error, and a group's n is its sampled people)"
    )


def _interval(low: float | None, high: float | None) -> str:
    return f"[{interval_text(low, high)}]" if interval_text(low, high) else "–"


def _directions(up: FlipDirection, down: FlipDirection) -> str:
    return f"{fmt(up.rate)} changed to the favourable decision, {fmt(down.rate)} to the unfavourable one"


def _meaning(with_flips: bool) -> list[str]:
    lines = [
        "Consistency asks whether people who look alike on the features get alike decisions: for each person, "
        "the share of their k nearest neighbours (themselves included, as AIF360 counts them) whose decision "
        "differs from theirs, averaged and subtracted from 1. A group's consistency is that of its people, their "
        "neighbours taken from everyone. Low consistency means similar people are treated differently; it does "
        "not say why, and it is only as meaningful as the features and their scaling.",
    ]
    if with_flips:
        lines.append(
            "The counterfactual flip rate is the share of people whose decision changes when only their sensitive "
            "attribute is changed (the model re-run on the same people with the attribute flipped). Any flip means "
            "the decision depends on the attribute itself; the direction says whom the change favours."
        )
    lines.append(
        "Judged checks appear among the results with the same rules as every other metric: each group's interval "
        "(Bonferroni over the groups) against the threshold, in the audit's one Holm family."
    )
    return lines
