"""The individual-fairness page's view dataclasses (built by :mod:`fairgate.report.individual`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ConsistencyRow:
    """One group's consistency (numbers blank when suppressed)."""

    slicing: str
    group: str
    n: str
    value: str
    interval: str
    judged: bool


@dataclass(frozen=True)
class FlipRow:
    """One group's counterfactual flips, overall and by direction."""

    slicing: str
    group: str
    n: str
    rate: str
    interval: str
    to_favorable: str
    to_unfavorable: str
    judged: bool


@dataclass(frozen=True)
class IndividualView:
    """The page: headline numbers, per-group tables and the explanation."""

    consistency: str
    consistency_interval: str
    setup: str
    neighbours: str
    consistency_rows: list[ConsistencyRow]
    flip_rate: str | None
    flip_interval: str | None
    flip_directions: str | None
    flip_rows: list[FlipRow]
    meaning: list[str]
    # Whom the headline consistency is of, and why a group is not judged (a sample's words when sampled).
    scope: str = "over everyone"
    too_few: str = "too few people"
