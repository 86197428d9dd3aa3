"""Reviewer diagnostics, curves and individual fairness: the parts of the document that explain the results."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from fairgate.document.common import SUPPRESSED_NOTE, Direction, Group, Part, Slicing
from fairgate.document.individual import Consistency, Counterfactual


class GroupBaseRate(Part):
    """One group's base rate (share of favourable labels) and size."""

    group: Group
    base_rate: float | None
    n: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    suppressed: bool | None = Field(default=None, description=SUPPRESSED_NOTE)


class BaseRates(Part):
    """The base rates of one attribute's groups, whether they differ, and the impossibility note."""

    slicing: Slicing
    groups: list[GroupBaseRate]
    min: float | None = None
    max: float | None = None
    differ: bool | None
    impossibility: str | None
    test: str | None = Field(default=None, description="The test of equal base rates across the groups.")
    p_value: float | None = None
    p_value_adjusted: float | None = Field(default=None, description="Holm-adjusted across attributes.")
    outcome_class: str | None = Field(
        default=None,
        description="task: multiclass: the class whose base rates these are, against the rest (schema 1.10).",
    )


class WorstSubgroup(Part):
    """The worst-off sufficient intersectional subgroup on one group metric."""

    metric: str
    slicing: Slicing
    group: Group
    value: float | None
    n: float | None
    direction: Direction
    ci_low: float | None = None
    ci_high: float | None = None
    ranked_by: Literal["ci_high", "ci_low"] | None = Field(
        default=None, description="The adverse confidence bound the subgroups were ranked by (not the estimate)."
    )
    n_candidates: int | None = None
    population_value: float | None = None
    note: str | None = None
    suppressed: bool | None = Field(default=None, description=SUPPRESSED_NOTE)


class SimpsonReversal(Part):
    """A crude disparity whose Mantel-Haenszel stratified counterpart has the opposite sign, with evidence."""

    metric: str
    attribute: str
    stratified_by: str
    groups: list[str]
    overall_difference: float
    stratum_differences: list[float | None]
    note: str
    overall_ci_low: float | None = None
    overall_ci_high: float | None = None
    stratified_difference: float | None = None
    stratified_ci_low: float | None = None
    stratified_ci_high: float | None = None
    confidence_level: float | None = None
    method: str | None = None
    strata: list[str] = Field(default_factory=list)
    n_strata_opposite: int | None = None


class InsufficientGroup(Part):
    """A group below min_group_size: reported, not judged."""

    slicing: Slicing
    group: Group
    n: float | None
    min_group_size: int
    suppressed: bool | None = Field(default=None, description=SUPPRESSED_NOTE)


class SkippedSlicing(Part):
    """A slicing with more groups than ``limits.max_groups_per_slicing``: not audited."""

    slicing: Slicing
    groups: int = Field(ge=0)
    max_groups_per_slicing: int = Field(ge=1)
    reason: str


class Diagnostics(Part):
    """Reviewer diagnostics: base rates, worst-off subgroups, Simpson's reversals, insufficient groups."""

    base_rates: list[BaseRates]
    worst_subgroups: list[WorstSubgroup]
    simpson: list[SimpsonReversal]
    insufficient_groups: list[InsufficientGroup]
    excluded_missing: dict[str, int] = Field(default_factory=dict)
    skipped_slicings: list[SkippedSlicing] = Field(
        default_factory=list, description="Slicings not audited for having more groups than the policy allows."
    )


class RocCurve(Part):
    """The ROC curve of one group (false and true positive rates at each score threshold)."""

    slicing: Slicing
    group: Group
    fpr: list[float]
    tpr: list[float]
    suppressed: bool | None = Field(default=None, description=SUPPRESSED_NOTE)


class CalibrationBin(Part):
    """One score bin of a reliability curve: its bounds, size, mean score and observed positive share."""

    lower: float
    upper: float
    n: float
    mean_score: float | None
    fraction_positive: float | None


class CalibrationCurve(Part):
    """The reliability (calibration) curve of one group."""

    slicing: Slicing
    group: Group
    bins: list[CalibrationBin]
    suppressed: bool | None = Field(default=None, description=SUPPRESSED_NOTE)


class Curves(Part):
    """ROC and calibration curves per group."""

    roc: list[RocCurve] = Field(default_factory=list)
    calibration: list[CalibrationCurve] = Field(default_factory=list)


class IndividualFairness(Part):
    """Individual-fairness indices (null when undefined), and the checks that need the people's features."""

    theil_index: float | None = None
    generalized_entropy_index: float | None = None
    consistency: Consistency | None = Field(
        default=None, description="With a features input and the policy's individual_fairness section (1.5)."
    )
    counterfactual: Counterfactual | None = Field(
        default=None, description="With a counterfactual predictions input (1.5)."
    )
