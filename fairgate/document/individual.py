"""The individual-fairness checks of the document (schema 1.5): consistency and counterfactual flips per group.

Schema 1.6 adds ``consistency.sampled``: present when consistency was estimated from a seeded random sample of the
people (policy ``individual_fairness.sample_people``); absent or null when everyone was queried.

They sit in ``individual_fairness`` beside the population's Theil and generalised entropy indices; the judged
results (``consistency``, ``counterfactual_flip_rate``) are in ``results`` like every other judged metric.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from fairgate.document.common import SUPPRESSED_NOTE, Group, Part, Slicing


class GroupConsistency(Part):
    """One group's consistency: its people, their neighbours taken from everyone."""

    slicing: Slicing
    group: Group
    n: int | None
    value: float | None
    ci_low: float | None
    ci_high: float | None
    sufficient: bool
    suppressed: bool | None = Field(default=None, description=SUPPRESSED_NOTE)


class ConsistencySample(Part):
    """The seeded simple random sample of people that consistency was estimated from (schema 1.6)."""

    people_sampled: int = Field(ge=1, description="People whose neighbourhoods were searched (among everyone).")
    people: int = Field(ge=1, description="People audited: the population the estimate is of.")
    seed: int = Field(description="The seed of numpy's default_rng that drew the sample.")


class Consistency(Part):
    """AIF360's consistency of the decisions over the people's features (k nearest neighbours)."""

    value: float | None = Field(description="1 - mean |y_i - mean of y over i's k nearest neighbours| (AIF360).")
    ci_low: float | None
    ci_high: float | None
    n: int | None
    k: int = Field(ge=1)
    scaling: Literal["none", "standard", "minmax"]
    features: list[str]
    neighbours: str = Field(description="How neighbours are found, and how ties and duplicates fall.")
    interval_method: str
    groups: list[GroupConsistency] = Field(description="Per group of each sensitive attribute.")
    sampled: ConsistencySample | None = Field(
        default=None,
        description="When set, every value, n and interval here is an estimate from this sample of the people "
        "(n: people sampled); absent or null: everyone, AIF360's exact value (1.6).",
    )


class FlipDirection(Part):
    """Changed decisions in one direction, as a share of the group, with its Wilson interval."""

    n: int | None
    rate: float | None
    ci_low: float | None
    ci_high: float | None


class GroupFlips(Part):
    """One group's counterfactual flips: decisions that change when only the sensitive attribute changes."""

    slicing: Slicing
    group: Group
    n: int | None
    flips: int | None
    flip_rate: float | None
    ci_low: float | None
    ci_high: float | None
    to_favorable: FlipDirection
    to_unfavorable: FlipDirection
    sufficient: bool
    suppressed: bool | None = Field(default=None, description=SUPPRESSED_NOTE)


class Counterfactual(Part):
    """Counterfactual consistency over everyone, and per group."""

    n: int | None
    flips: int | None
    flip_rate: float | None
    ci_low: float | None
    ci_high: float | None
    to_favorable: FlipDirection
    to_unfavorable: FlipDirection
    attribute: str | None = Field(default=None, description="The sensitive attribute flipped, when named.")
    interval_method: str
    groups: list[GroupFlips]
