"""The ``regression`` block of a ``task: regression`` audit document (schema 1.5).

The shared keys keep their meaning in a regression document: ``groups`` holds each group's metrics with their
bootstrap intervals (``mean_prediction``, ``mean_label``, ``mean_residual``, ``mean_absolute_error``,
``mean_squared_error``, ``root_mean_squared_error``, ``r2_score``; residual = prediction - label),
``comparisons`` each group against the reference, ``summaries`` the range and ratio of each metric, ``results``
the judged rules. This block holds what has no scalar shape: the histogram grid, each group's residuals by
prediction decile and its prediction CDF, the worst group's losses, and the distances between groups' prediction
distributions with their error bounds.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from fairgate.document.common import SUPPRESSED_NOTE, Group, Part, Slicing


class HistogramGrid(Part):
    """The equal-width grid of the cube's prediction and label histograms."""

    low: float
    high: float
    bins: int = Field(ge=1)
    width: float = Field(description="One bin's width: the resolution of the histogram-based distances.")
    range_from: Literal["histogram_range", "data"] = Field(
        description="Where [low, high] comes from: the policy's regression.histogram_range, or the audited data's "
        "smallest and largest prediction or label. The Wasserstein interval assumes every prediction lies in "
        "histogram_range when it is set, else in the audited predictions' own range."
    )


class ResidualBin(Part):
    """One prediction decile of one group (deciles of the whole audit's predictions)."""

    bin: int = Field(ge=0, description="Index of the decile in prediction_bins.")
    n: float = Field(ge=0, description="Kish effective size of the group's rows in this decile.")
    mean_prediction: float | None
    mean_label: float | None
    mean_residual: float | None
    ci_low: float | None = Field(description="Normal interval of the mean residual (reporting level).")
    ci_high: float | None


class RegressionGroup(Part):
    """One group of one slicing: its residuals by prediction decile and its prediction CDF."""

    slicing: Slicing
    group: Group
    binned: list[ResidualBin]
    cdf: list[float | None] = Field(
        description="Share of the group's predictions (weighted) below each of cdf_points; null for an empty group."
    )
    suppressed: bool | None = Field(default=None, description=SUPPRESSED_NOTE)


class WorstGroupLoss(Part):
    """The largest loss of any judged group (bounded group loss), with its simultaneous max-t interval."""

    metric: str
    slicing: Slicing
    value: float | None
    ci_low: float | None
    ci_high: float | None
    group: Group
    n_groups_judged: int = Field(ge=0)
    interval_method: str


class DistanceEntry(Part):
    """One group's prediction distribution against the rest's or the reference's, from the histograms."""

    slicing: Slicing
    group: Group
    against: Literal["rest", "reference"]
    sufficient: bool = Field(description="Both sides reach min_group_size (only these are judged).")
    ks_distance: float | None = Field(description="Kolmogorov-Smirnov statistic: midpoint of its exact bounds.")
    ks_error_bound: float | None = Field(description="|KS from the rows - ks_distance| <= ks_error_bound.")
    ks_p_value: float | None = Field(description="Asymptotic two-sample KS p-value of the lower bound.")
    ks_at: float | None = Field(description="The prediction (a grid edge) where the CDFs are furthest apart.")
    wasserstein_distance: float | None
    wasserstein_error_bound: float | None = Field(description="|W1 from the rows - value| <= this bound.")
    suppressed: bool | None = Field(default=None, description=SUPPRESSED_NOTE)


class RegressionBlock(Part):
    """What a regression audit adds to the shared document keys."""

    metrics: list[str] = Field(description="The group metrics in ``groups``, in report order.")
    losses: list[str] = Field(description="The metrics judged as losses (worst_group_<loss>).")
    residual: str = Field(description="How the residual is defined.")
    grid: HistogramGrid
    bootstrap_buckets: int = Field(ge=1, description="Hash buckets per cell: the stratified cluster bootstrap.")
    prediction_bins: list[float] = Field(description="Edges of the prediction deciles (min, deciles, max).")
    cdf_points: list[float] = Field(description="The predictions (grid edges) at which each group's CDF is given.")
    groups: list[RegressionGroup]
    worst_group_losses: list[WorstGroupLoss]
    distances: list[DistanceEntry]
    distance_method: str = Field(description="How the judged distances' intervals are made.")
