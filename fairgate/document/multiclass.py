"""The ``multiclass`` block of a ``task: multiclass`` audit document: classes, confusion matrices, per-class rates.

The shared keys keep their meaning in a multiclass document: ``groups`` holds each group's scalar values
(``accuracy`` and each one-vs-rest rate of each class as ``<rate>[<class>]``, and with adverse classes the
binary decision's rates as ``adverse.<rate>``), ``results`` the judged rules. This block holds what has no
scalar shape: each group's K x K confusion matrix, its per-class rates with intervals, and every summary per
class beside its worst case over classes (the judged value).
"""

from __future__ import annotations

from pydantic import Field

from fairgate.document.common import SUPPRESSED_NOTE, Estimate, Group, Part, Slicing


class MulticlassGroup(Part):
    """One group of one slicing: its confusion matrix and its one-vs-rest rates per class, with intervals."""

    slicing: Slicing
    group: Group
    n: float | None = Field(ge=0, description="Kish effective size (the rows when unweighted); null when suppressed.")
    rows: int | None = Field(default=None, ge=0)
    sufficient: bool
    confusion: list[list[float | None]] | None = Field(
        description="K x K counts (weighted): row i is true class i, column j predicted class j, in the order of "
        "classes; null when suppressed."
    )
    rates: dict[str, list[Estimate]] = Field(
        description="Per rate name (selection_rate, base_rate, true_positive_rate, ...), one estimate per class in "
        "the order of classes: class c's one-vs-rest rate with its Wilson interval."
    )
    accuracy: Estimate
    suppressed: bool | None = Field(default=None, description=SUPPRESSED_NOTE)


class ClassSummaryValue(Part):
    """A summary of one class (or the worst case over classes): value, simultaneous interval, extreme groups."""

    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    reason: str | None = Field(default=None, description="Why there is no interval (or value), when there is none.")
    max_group: Group | None = None
    min_group: Group | None = None


class ClassSummaryEntry(Part):
    """One summary of one slicing: per class, and its worst case over classes (the value a policy judges)."""

    metric: str
    slicing: Slicing
    summary: str = Field(description="difference (max - min across groups) or ratio (min / max).")
    bases: list[str]
    worst: ClassSummaryValue
    worst_class: str | None = Field(description="The class whose summary is the worst case (null when undefined).")
    by_class: dict[str, ClassSummaryValue]
    n_groups_judged: int = Field(ge=0)
    interval_method: str


class MulticlassBlock(Part):
    """Everything a multiclass audit computes beyond scalar group values (schema 1.5)."""

    classes: list[str] = Field(description="The declared classes, in the policy's order (multiclass.classes).")
    adverse_classes: list[str] | None = Field(
        default=None, description="The adverse outcome of the binary decision 'adverse or not', when declared."
    )
    rates: list[str] = Field(description="The per-class rates each group carries, in report order.")
    groups: list[MulticlassGroup]
    summaries: list[ClassSummaryEntry]
