"""The regression options (``task: {kind: regression, regression: {...}}`` once the task section is wired).

Kept here, beside the engine, until the ``task:`` section (fairgate/policy/task.py) takes them in.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator


class RegressionOptions(BaseModel):
    """How the regression cube is built: the histogram grid and the bootstrap's sub-cells.

    ``histogram_bins`` equal-width bins cover ``histogram_range`` (both predictions and labels, which share
    units); without a range the data's own min and max are used, so cubes of different data sets add only when
    a range is fixed. ``bootstrap_buckets`` is the number of sub-cells each cell's rows are hashed into (see
    ``fairgate.engine.regression.bootstrap``).

    >>> RegressionOptions().histogram_bins, RegressionOptions(histogram_range=(0, 10)).histogram_range
    (2048, (0.0, 10.0))
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    histogram_bins: int = Field(default=2048, ge=16, le=65_536)
    histogram_range: tuple[float, float] | None = None
    bootstrap_buckets: int = Field(default=100, ge=16, le=1000)

    @model_validator(mode="after")
    def _range_is_increasing(self) -> RegressionOptions:
        if self.histogram_range is not None:
            low, high = self.histogram_range
            if not (low < high and abs(low) < float("inf") and abs(high) < float("inf")):
                raise ValueError(
                    f"histogram_range must be two finite numbers, low < high; got {list(self.histogram_range)}"
                )
        return self
