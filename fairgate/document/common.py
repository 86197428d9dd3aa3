"""Shared pieces of the audit document: the base model and the small value types every part uses."""

from __future__ import annotations

from typing import Annotated, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

from fairgate.verdicts import Verdict as Verdict  # the verdict words are defined once, in fairgate.verdicts

#: How a policy result was judged. ``inconclusive`` and ``insufficient_data`` are not judged pass or fail.
Status: TypeAlias = Literal["pass", "fail", "inconclusive", "insufficient_data"]
Direction: TypeAlias = Literal["lower_is_better", "higher_is_better"]
FailOn: TypeAlias = Literal["any", "majority", "critical_only"]

#: The marker of an entry whose numbers small-cell suppression replaced by null (``reporting.json: suppressed``).
SUPPRESSED_NOTE = (
    "True when small-cell suppression hid this entry's numbers (null here): the group has fewer than "
    "reporting.min_cell_size people, or would let a hidden size be derived from published totals."
)
#: Attributes of a slicing in order; ``[]`` is the whole population.
Slicing: TypeAlias = Annotated[list[str], Field(description="Attributes of the slicing; [] is the whole population.")]
#: A group: attribute -> value, values as strings as they appear in the data.
Group: TypeAlias = dict[str, str]


class Part(BaseModel):
    """A part of the document with a fixed shape: unknown keys are an error (add the field here instead)."""

    model_config = ConfigDict(extra="forbid")


class Estimate(Part):
    """A point estimate with its confidence interval; null where undefined."""

    value: float | None
    ci_low: float | None
    ci_high: float | None
    error_bound: float | None = Field(
        default=None,
        description="roc_auc from the score histogram (schema 1.3): |exact AUC - value| <= error_bound, and the "
        "interval is widened by it; absent when AUC is exact.",
    )
