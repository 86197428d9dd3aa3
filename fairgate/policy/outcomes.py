"""The ``outcomes:`` section: the use case's own words for the decision and the true outcome.

Every rate the report prints is derived from these four phrases, so a reader never has to work out which way
round "positive" is. The engine counts the favourable label as positive (``favorable_label``), for the
decision (y_pred) and the truth (y_true) alike; the phrases follow that mapping, whichever label is favourable.

Grammar (the report builds sentences from them):

- a *decision* phrase reads after "share" and "those": "share not flagged high-risk", "those flagged high-risk";
- a *truth* phrase reads after "those who": "those who did not reoffend", "those who reoffended".

The defaults ("given the favourable decision", "had the favourable outcome", ...) are never wrong, only vague.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from fairgate.policy.base import STRICT

DEFAULT_FAVORABLE_DECISION = "given the favourable decision"
DEFAULT_UNFAVORABLE_DECISION = "given the unfavourable decision"
DEFAULT_FAVORABLE_TRUTH = "had the favourable outcome"
DEFAULT_UNFAVORABLE_TRUTH = "had the unfavourable outcome"


class Outcomes(BaseModel):
    """The words for the favourable and unfavourable decision and true outcome (COMPAS example in the fields).

    >>> o = Outcomes(favorable_decision="not flagged high-risk", unfavorable_decision="flagged high-risk",
    ...              favorable_truth="did not reoffend", unfavorable_truth="reoffended")
    >>> o.unfavorable_decision, Outcomes().favorable_truth
    ('flagged high-risk', 'had the favourable outcome')
    """

    model_config = STRICT

    favorable_decision: str = Field(
        default=DEFAULT_FAVORABLE_DECISION,
        min_length=2,
        max_length=80,
        description="The decision equal to favorable_label, read after 'share' (e.g. 'not flagged high-risk').",
    )
    unfavorable_decision: str = Field(
        default=DEFAULT_UNFAVORABLE_DECISION,
        min_length=2,
        max_length=80,
        description="The other decision, read after 'share' (e.g. 'flagged high-risk').",
    )
    favorable_truth: str = Field(
        default=DEFAULT_FAVORABLE_TRUTH,
        min_length=2,
        max_length=80,
        description="The true outcome equal to favorable_label, read after 'those who' (e.g. 'did not reoffend').",
    )
    unfavorable_truth: str = Field(
        default=DEFAULT_UNFAVORABLE_TRUTH,
        min_length=2,
        max_length=80,
        description="The other true outcome, read after 'those who' (e.g. 'reoffended').",
    )

    @property
    def named(self) -> bool:
        """Whether the policy named any outcome in its own words (else every phrase is a default)."""
        return self != Outcomes()


# What each group rate counts, in the engine's convention (the favourable label is "positive"):
# (what is counted, counted favourable?, what it is conditioned on, condition favourable?).
# "decision" is y_pred, "truth" is y_true; None: the whole group.
RATE_DEFINITIONS: dict[str, tuple[str, bool, str | None, bool]] = {
    "selection_rate": ("decision", True, None, True),
    "base_rate": ("truth", True, None, True),
    "true_positive_rate": ("decision", True, "truth", True),
    "false_positive_rate": ("decision", True, "truth", False),
    "false_negative_rate": ("decision", False, "truth", True),
    "true_negative_rate": ("decision", False, "truth", False),
    "positive_predictive_value": ("truth", True, "decision", True),
    "false_discovery_rate": ("truth", False, "decision", True),
    "negative_predictive_value": ("truth", False, "decision", False),
    "false_omission_rate": ("truth", True, "decision", False),
}


def _phrase(words: Outcomes, kind: str, favourable: bool) -> str:
    if kind == "decision":
        return words.favorable_decision if favourable else words.unfavorable_decision
    return words.favorable_truth if favourable else words.unfavorable_truth


def rate_phrase(metric: str, words: Outcomes) -> str | None:
    """What a group rate counts, in the policy's words (None for a metric that is not such a rate).

    >>> compas = Outcomes(favorable_decision="not flagged high-risk", unfavorable_decision="flagged high-risk",
    ...                   favorable_truth="did not reoffend", unfavorable_truth="reoffended")
    >>> rate_phrase("false_negative_rate", compas)
    'flagged high-risk among those who did not reoffend'
    >>> rate_phrase("positive_predictive_value", compas)
    'share who did not reoffend among those not flagged high-risk'
    >>> rate_phrase("selection_rate", Outcomes())
    'share given the favourable decision'
    """
    definition = RATE_DEFINITIONS.get(metric)
    if definition is None:
        return None
    counted, counted_favourable, given, given_favourable = definition
    what = _phrase(words, counted, counted_favourable)
    if given is None:
        return f"share {what}" if counted == "decision" else f"share who {what}"
    among = _phrase(words, given, given_favourable)
    among_text = f"among those who {among}" if given == "truth" else f"among those {among}"
    return f"{what} {among_text}" if counted == "decision" else f"share who {what} {among_text}"


def wrong_decision_rate(*, favourable: bool) -> str:
    """The group rate that measures a wrong decision of one kind, derived from :data:`RATE_DEFINITIONS`.

    ``favourable=False``: the unfavourable decision given to people whose true outcome was favourable (COMPAS:
    flagged high-risk though they did not reoffend); ``favourable=True``: the favourable decision given to people
    whose true outcome was unfavourable.

    >>> wrong_decision_rate(favourable=False), wrong_decision_rate(favourable=True)
    ('false_negative_rate', 'false_positive_rate')
    """
    wanted = ("decision", favourable, "truth", not favourable)
    return next(name for name, definition in RATE_DEFINITIONS.items() if definition == wanted)


#: The short names the report and the advice print beside a rate's phrase.
RATE_ABBREVIATIONS: dict[str, str] = {
    "selection_rate": "Selection rate",
    "base_rate": "Base rate",
    "true_positive_rate": "TPR",
    "false_positive_rate": "FPR",
    "false_negative_rate": "FNR",
    "true_negative_rate": "TNR",
    "positive_predictive_value": "PPV",
    "negative_predictive_value": "NPV",
    "false_discovery_rate": "FDR",
    "false_omission_rate": "FOR",
}


def rate_text(metric: str, words: Outcomes) -> str:
    """A rate's short name with what it counts: ``'FNR (flagged high-risk among those who did not reoffend)'``."""
    phrase = rate_phrase(metric, words)
    short = RATE_ABBREVIATIONS.get(metric, metric.replace("_", " "))
    return f"{short} ({phrase})" if phrase else short


def wrong_decision_metrics(*, favourable: bool) -> list[str]:
    """The policy metrics that judge the gap in :func:`wrong_decision_rate` across groups.

    The rate's own difference, and the difference of its complement (same condition, the other decision):
    a gap in one is the same gap in the other (FNR = 1 - TPR).

    >>> wrong_decision_metrics(favourable=False)
    ['false_negative_rate_difference', 'equal_opportunity_difference']
    """
    from fairgate.engine.metrics import PolicyMetric, SummaryOf  # local: the engine's registry

    rate = wrong_decision_rate(favourable=favourable)
    counted, counted_favourable, given, given_favourable = RATE_DEFINITIONS[rate]
    complement = (counted, not counted_favourable, given, given_favourable)
    same_gap = {rate} | {name for name, d in RATE_DEFINITIONS.items() if d == complement}
    registered = [
        name
        for name, cls in PolicyMetric.registry.items()
        if issubclass(cls, SummaryOf)
        and cls.summary == "difference"
        and set(cls.bases) <= same_gap
        and len(cls.bases) == 1
    ]
    return [f"{rate}_difference", *registered]


def fill(text: str, words: Outcomes) -> str:
    """``text`` with its {placeholders} filled from the outcome words (see ``fairgate/data/mitigation_advice.yaml``).

    >>> fill("wrongly {unfavorable_decision}: {wrong_unfavorable}", Outcomes())[:60]
    'wrongly given the unfavourable decision: FNR (given the unfa'
    """
    values = {name: rate_text(name, words) for name in RATE_DEFINITIONS}
    values |= {
        "wrong_unfavorable": rate_text(wrong_decision_rate(favourable=False), words),
        "wrong_favorable": rate_text(wrong_decision_rate(favourable=True), words),
        **words.model_dump(),
    }
    return text.format_map(values)
