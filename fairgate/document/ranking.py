"""The ``ranking`` block of a ``task: ranking`` audit document: cut-offs, discount, summaries, exposure curves.

The shared keys keep their meaning in a ranking document: ``groups`` holds each group's per-group metrics
(``population_share``, ``top_<k>_share``, ``top_<k>_rate``, ``mean_exposure``, ``exposure_share``,
``mean_relevance``, ``exposure_per_relevance``) with cluster-bootstrap intervals, ``comparisons`` each group
against the reference, ``summaries`` the difference and ratio of the top-k rates, mean exposure and exposure per
relevance, and ``results`` the judged rules. This block holds the ranking's settings, every summary as the
policy's metric names it (with its cut-off), and the exposure curves the report draws.
"""

from __future__ import annotations

from pydantic import Field

from fairgate.document.common import SUPPRESSED_NOTE, Group, Part, Slicing


class RankingSummary(Part):
    """One summary across the groups of one slicing, under the policy's metric name."""

    metric: str = Field(description="top_k_rate_difference, exposure_ratio, ... (a task: ranking policy's name).")
    slicing: Slicing
    summary: str = Field(description="difference (max - min across groups) or ratio (min / max).")
    k: int | None = Field(default=None, description="The top-k cut-off of a top_k_rate summary; null otherwise.")
    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    worst_group: Group | None = Field(default=None, description="The group with the smallest value.")
    best_group: Group | None = Field(default=None, description="The group with the largest value.")
    n_groups_judged: int = Field(ge=0)
    excluded_groups: list[Group] = Field(default_factory=list, description="Groups under min_group_size.")
    interval_method: str
    reason: str | None = Field(default=None, description="Why there is no value or interval, when there is none.")


class ExposureCurve(Part):
    """One group's place along the rank positions, pooled over lists."""

    slicing: Slicing
    group: Group
    positions: list[int] = Field(description="Rank positions 1..P; the last point pools every later position.")
    share_at_position: list[float | None] = Field(
        description="The group's share of the items at each position (null where no list reaches it)."
    )
    cumulative_exposure_share: list[float | None] = Field(
        description="The group's exposure at positions up to each one, as a share of all exposure."
    )
    items: list[float | None] = Field(description="The group's (weighted) items at each position.")
    suppressed: bool | None = Field(default=None, description=SUPPRESSED_NOTE)


class RankingBlock(Part):
    """Everything a ranking audit computes beyond scalar group values (schema 1.5)."""

    top_k: list[int] = Field(description="The top-k cut-offs (ranking.top_k); the first is judged.")
    judged_k: int
    discount: str = Field(description="The position discount: log2 (1/log2(1+rank)), reciprocal, or rbp.")
    patience: float | None = Field(default=None, description="RBP's patience, with discount: rbp.")
    n_lists: int = Field(ge=0, description="The number of ranked lists (the bootstrap's units).")
    bootstrap_buckets: int = Field(ge=1, description="Lists are hashed into this many clusters for the bootstrap.")
    metrics: list[str] = Field(description="The per-group metrics in groups[].metrics, in report order.")
    summaries: list[RankingSummary]
    curves: list[ExposureCurve]
