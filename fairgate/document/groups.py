"""Per-group parts of the audit document: attributes, group metrics, comparisons and summaries."""

from __future__ import annotations

from pydantic import Field

from fairgate.document.common import SUPPRESSED_NOTE, Estimate, Group, Part, Slicing


class AttributeInfo(Part):
    """A sensitive attribute as audited: its values in the data and its reference group."""

    name: str
    reference_group: str | None
    values: list[str]
    excluded_missing: int = Field(default=0, ge=0)


class GroupEntry(Part):
    """One group of one slicing: its size and every group metric with its interval."""

    slicing: Slicing
    group: Group
    n: float | None = Field(
        ge=0,
        description="Group size: Kish effective size under weights (equals rows when unweighted); null when "
        "suppressed.",
    )
    rows: int | None = Field(default=None, ge=0)
    sufficient: bool = Field(description="n reaches min_group_size; insufficient groups are not judged.")
    metrics: dict[str, Estimate]
    suppressed: bool | None = Field(default=None, description=SUPPRESSED_NOTE)


class Comparison(Part):
    """A group against its slicing's reference group on one group metric."""

    metric: str
    slicing: Slicing
    group: Group
    reference: Group
    difference: float | None
    difference_ci_low: float | None = None
    difference_ci_high: float | None = None
    ratio: float | None
    ratio_ci_low: float | None = None
    ratio_ci_high: float | None = None
    p_value: float | None
    method: str | None = None
    sufficient: bool | None = None
    p_value_adjusted: float | None = Field(description="Benjamini-Hochberg within the comparison's family.")
    significant: bool | None = Field(description="null when suppressed.")
    p_value_family: str | None = Field(
        default=None, description="The (metric, slicing) family the Benjamini-Hochberg adjustment runs over."
    )
    tested: bool | None = Field(
        default=None, description="Counted in its family (judged groups only; a complement shares its partner's)."
    )
    p_value_family_size: int | None = Field(default=None, ge=0)
    suppressed: bool | None = Field(default=None, description=SUPPRESSED_NOTE)


class Summary(Part):
    """Difference (max - min) and ratio (min / max) of one group metric over a slicing's eligible groups."""

    metric: str
    slicing: Slicing
    difference: float | None
    difference_ci_low: float | None = None
    difference_ci_high: float | None = None
    ratio: float | None
    ratio_ci_low: float | None = None
    ratio_ci_high: float | None = None
    max_group: Group | None = None
    min_group: Group | None = None
    n_groups_judged: int | None = None
    interval_method: str | None = None
    interval_reason: str | None = Field(default=None, description="Why there is no interval, when there is none.")
