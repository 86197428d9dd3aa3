"""The glossary: every rate and judged metric as a formula in the policy's outcome words.

It also says what the reference group is for (and that the judged summaries do not depend on it).
"""

from __future__ import annotations

from collections.abc import Iterable

from fairgate.engine.metric_labels import in_sentence
from fairgate.engine.metrics import PolicyMetric, SummaryOf, WorstCaseOf, policy_metric
from fairgate.policy.labels import LABEL_DISAGREEMENT
from fairgate.policy.outcomes import RATE_ABBREVIATIONS, RATE_DEFINITIONS, Outcomes, rate_phrase, rate_text
from fairgate.report.format import metric_label, policy_metric_label
from fairgate.report.individual import GLOSSARY as INDIVIDUAL_GLOSSARY
from fairgate.report.model import GlossaryRow

# The confusion cell of a (decision favourable?, truth favourable?) pair; the favourable label is "positive".
_CELLS = {(True, True): "TP", (True, False): "FP", (False, True): "FN", (False, False): "TN"}

REFERENCE_NOTE = (
    "The judged summaries compare all groups with one another (highest minus lowest, lowest over highest); the "
    "reference group ('ref') serves only the JSON's per-group comparisons and the base-rate notes, never a verdict."
)


def cells(words: Outcomes) -> list[GlossaryRow]:
    """The four confusion counts in the outcome words.

    >>> [row.term for row in cells(Outcomes())]
    ['TP', 'FP', 'FN', 'TN']
    """
    out = []
    for (decision, truth), name in _CELLS.items():
        decided = words.favorable_decision if decision else words.unfavorable_decision
        happened = words.favorable_truth if truth else words.unfavorable_truth
        out.append(GlossaryRow(name, "count", f"people {decided} who {happened}"))
    return out


def rate_formula(metric: str) -> str:
    """A group rate as a formula of the confusion counts, derived from what it counts.

    >>> rate_formula("false_negative_rate"), rate_formula("selection_rate"), rate_formula("false_omission_rate")
    ('FN / (TP + FN)', '(TP + FP) / n', 'FN / (FN + TN)')
    """
    counted, counted_favourable, given, given_favourable = RATE_DEFINITIONS[metric]

    def matching(kind: str, favourable: bool) -> list[str]:
        index = 0 if kind == "decision" else 1
        return [name for key, name in _CELLS.items() if key[index] == favourable]

    numerator = matching(counted, counted_favourable)
    if given is None:
        return f"({' + '.join(numerator)}) / n"
    denominator = matching(given, given_favourable)
    top = [c for c in denominator if c in numerator]
    return f"{' + '.join(top)} / ({' + '.join(denominator)})"


def rates(words: Outcomes) -> list[GlossaryRow]:
    """Every group rate: its formula and what it counts in the outcome words."""
    rows = [GlossaryRow(RATE_ABBREVIATIONS[m], rate_formula(m), str(rate_phrase(m, words))) for m in RATE_DEFINITIONS]
    rows.append(GlossaryRow("Accuracy", "(TP + TN) / n", "share whose decision matched their true outcome"))
    return rows


#: The label-bias finding (an audit with external labels, fairgate/engine/label_bias.py).
LABEL_GLOSSARY = {
    LABEL_DISAGREEMENT: GlossaryRow(
        "Label disagreement difference",
        "max − min of the share whose two labels disagree",
        "the largest gap between groups in how often the audit's labels and the external labels disagree",
    )
}


def policy_metrics(names: Iterable[str], words: Outcomes) -> list[GlossaryRow]:
    """The judged policy metrics: how each summarises its group rates across the groups."""
    known = INDIVIDUAL_GLOSSARY | LABEL_GLOSSARY
    return [
        known[name]
        if name in known
        else GlossaryRow(policy_metric_label(name, words).split(" (")[0], *_summary(policy_metric(name), words))
        for name in dict.fromkeys(names)
    ]


def _summary(metric: PolicyMetric, words: Outcomes) -> tuple[str, str]:
    # Inside a sentence: "max − min of selection rate", "the lowest group's TPR" (an abbreviation stays).
    bases = [in_sentence(rate_text(b, words) if b in RATE_DEFINITIONS else metric_label(b)) for b in metric.bases]
    short = [in_sentence(RATE_ABBREVIATIONS.get(b, metric_label(b))) for b in metric.bases]
    if isinstance(metric, WorstCaseOf):
        if metric.summary == "difference":
            formula = "max(" + ", ".join(f"max − min of {s}" for s in short) + ")"
            return formula, "the larger gap across groups of " + " and of ".join(bases)
        formula = "min(" + ", ".join(f"min / max of {s}" for s in short) + ")"
        return formula, "the smaller ratio across groups of " + " and of ".join(bases)
    if isinstance(metric, SummaryOf):
        if metric.summary == "difference":
            meaning = f"the gap between the highest and lowest group in {bases[0]}"
            twin = _complement(metric.bases[0])
            if twin:
                meaning += f"; the same gap as in {rate_text(twin, words)}"
            return f"max − min of {short[0]} over groups", meaning
        return f"min / max of {short[0]} over groups", f"the lowest group's {bases[0]} as a fraction of the highest's"
    return "whole population", metric.describe()


def _complement(rate: str) -> str | None:
    """The rate with the same denominator and the other numerator (FNR for TPR): equal gaps across groups."""
    if rate not in RATE_DEFINITIONS:
        return None
    counted, favourable, given, given_favourable = RATE_DEFINITIONS[rate]
    if given is None:
        return None
    wanted = (counted, not favourable, given, given_favourable)
    return next((name for name, d in RATE_DEFINITIONS.items() if d == wanted), None)


def reference_note() -> str:
    """What the reference group is used for (and what it is not)."""
    return REFERENCE_NOTE
