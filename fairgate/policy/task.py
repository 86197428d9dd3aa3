"""The ``task:`` key and the per-kind sections ``multiclass:`` and ``regression:`` (issue 15).

``task`` is ``binary`` (the default: every audit written before these keys existed), ``multiclass``,
``regression`` or ``ranking``. A multiclass audit declares its classes (labels as they appear in the data, in
order when they are ordered, e.g. risk tiers) and may name the *adverse* classes: then the tier model is judged
as a binary decision too, "adverse or not" (e.g. ``[Medium, High]`` for COMPAS's tiers). ``Policy``
(policy/core.py) holds these as fields and checks that the section matches the task.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, field_validator, model_validator

from fairgate.policy.base import STRICT


class _Strict(BaseModel):
    # As core.py's: unknown keys are errors, models are immutable (core.py imports policy modules, not back).
    model_config = STRICT


class MulticlassOptions(_Strict):
    """The ``multiclass:`` section: the declared classes and, optionally, the adverse ones.

    >>> options = MulticlassOptions(classes=["Low", "Medium", "High"], adverse_classes=["Medium", "High"])
    >>> options.class_index("High"), options.adverse_indices
    (2, (1, 2))
    """

    classes: list[str] = Field(min_length=2, max_length=1000)
    """Every label `y_true` and `y_pred` may hold, as text; any other value is an error."""
    adverse_classes: list[str] | None = None
    """Classes that are the adverse outcome of a binary decision ("Medium or High"); `adverse.` metrics judge that
    decision."""

    @field_validator("classes", "adverse_classes", mode="before")
    @classmethod
    def _as_strings(cls, values: Any) -> Any:
        if isinstance(values, list):
            return [str(v) for v in values]
        return values

    @model_validator(mode="after")
    def _consistent(self) -> MulticlassOptions:
        if len(set(self.classes)) != len(self.classes):
            raise ValueError(f"multiclass.classes lists a class twice: {self.classes}")
        if self.adverse_classes is not None:
            stray = [c for c in self.adverse_classes if c not in self.classes]
            if stray:
                raise ValueError(
                    f"multiclass.adverse_classes names {stray}, which are not in multiclass.classes "
                    f"{self.classes}; write classes from that list"
                )
            if len(set(self.adverse_classes)) != len(self.adverse_classes):
                raise ValueError(f"multiclass.adverse_classes lists a class twice: {self.adverse_classes}")
            if not self.adverse_classes or len(self.adverse_classes) == len(self.classes):
                raise ValueError(
                    "multiclass.adverse_classes must name some but not all classes (a binary decision needs both "
                    f"outcomes); got {self.adverse_classes} of {self.classes}"
                )
        return self

    def check_metrics(self, metrics: list[str]) -> None:
        """Metrics of the decision "adverse or not" need ``adverse_classes`` (raises ValueError)."""
        adverse = [name for name in metrics if name.startswith("adverse.")]
        if adverse and not self.adverse_classes:
            raise ValueError(
                f"metrics {adverse} judge the decision 'adverse or not', which needs "
                "multiclass.adverse_classes (e.g. adverse_classes: [Medium, High])"
            )

    def class_index(self, label: str) -> int:
        """The position of a class in ``classes`` (its code in the multiclass cube)."""
        return self.classes.index(label)

    @property
    def adverse_indices(self) -> tuple[int, ...]:
        """The codes of the adverse classes (empty without the ordered-outcome option)."""
        return tuple(self.class_index(c) for c in self.adverse_classes or [])


class RegressionOptions(_Strict):
    """How the regression cube is built: the histogram grid and the bootstrap's sub-cells.

    ``histogram_bins`` equal-width bins cover ``histogram_range`` (both predictions and labels, which share
    units); without a range the data's own min and max are used, so cubes of different data sets add only when
    a range is fixed. ``bootstrap_buckets`` is the number of sub-cells each cell's rows are hashed into (see
    ``fairgate.engine.regression.bootstrap``).

    >>> RegressionOptions().histogram_bins, RegressionOptions(histogram_range=(0, 10)).histogram_range
    (2048, (0.0, 10.0))
    """

    histogram_bins: int = Field(default=2048, ge=16, le=65_536)
    """Equal-width bins of the prediction and label histograms (KS and Wasserstein distances)."""
    histogram_range: tuple[float, float] | None = None
    """The histograms' range `[low, high]`; default the data's min-max (fix it for partitions, and when predictions are
    unbounded)."""
    bootstrap_buckets: int = Field(default=100, ge=16, le=1000)
    """Rows are hashed into this many sub-cells per group; the bootstrap redraws them."""
    outcome_unit: str | None = Field(default=None, min_length=1, max_length=60)
    """The outcome's unit as the reports name it beside thresholds and gaps in it (`standard deviations of ZFYA`,
    `rupees`); default: "outcome units". Not used in any computation."""

    @model_validator(mode="after")
    def _range_is_increasing(self) -> RegressionOptions:
        if self.histogram_range is not None:
            low, high = self.histogram_range
            if not (low < high and abs(low) < float("inf") and abs(high) < float("inf")):
                raise ValueError(
                    f"histogram_range must be two finite numbers, low < high; got {list(self.histogram_range)}"
                )
        return self
