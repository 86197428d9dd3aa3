"""The regression cube: weighted moment sums and value histograms per cell (a checking scan, then the group-bys).

A cell is one combination of the sensitive attributes' values and one bootstrap bucket (a hash of the row id,
or of the row's position, into ``bootstrap_buckets`` sub-cells: see ``bootstrap``). Per cell it holds the row
count, the sum of weights and of squared weights (Kish's effective size) and the weighted sums of prediction,
label, their squares and product, |residual| and residual^2 (residual = prediction - label). Every group metric
of ``moments`` is a function of these sums, so any slicing is a marginal (a ``group_by().sum()``) and cubes of
disjoint row sets add.

Two histograms per attribute combination (without buckets) count the weight of predictions and of labels in the
equal-width bins of one shared grid; the distances between groups' prediction distributions (``distribution``)
come from them with a stated error bound.

Metrics that need the order of the residuals (median absolute error, quantile losses) are not sums and are not
supported here; the histograms bound them only to a bin width, which is why they are not offered.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import polars as pl

from fairgate.engine.cube import as_lazy
from fairgate.engine.regression.columns import (
    ABS_RESIDUAL,
    BIN_HIGH,
    BIN_LOW,
    BUCKET,
    LABEL_SQ,
    LABEL_SUM,
    PRED_LABEL,
    PRED_SQ,
    PRED_SUM,
    RESIDUAL_SQ,
    ROWS,
    SUMS,
    VALUE_BIN,
    WEIGHT,
    WEIGHT_SQ,
)
from fairgate.engine.regression.options import RegressionOptions
from fairgate.errors import EMPTY_DATA, MISSING_COLUMN, DataError

NOT_FINITE = (
    "column {column!r} in {source} must hold finite numbers; found {count} row(s) that are not numbers, "
    "missing, NaN or infinite. Drop, fix or impute those rows before the audit"
)
OUT_OF_RANGE = (
    "column {column!r} in {source} has {count} value(s) outside histogram_range {range} (min {low}, max {high}); "
    "widen the range, or leave it unset to use the data's own"
)
MISSING_ATTRIBUTE = (
    "attribute {attribute!r} in {source} is missing in {count} row(s); recode missing values as their own group "
    "or exclude those rows before cubing"
)


@dataclass(frozen=True)
class Grid:
    """The equal-width histogram grid shared by predictions and labels.

    Sums are taken of values minus ``shift`` (the grid's centre): variances from sums of squares then lose no
    precision when the values sit far from 0 (salaries, prices), and every cube on one grid uses one shift.

    >>> g = Grid(0.0, 4.0, 8)
    >>> g.width, g.shift, g.edges[:3].tolist()
    (0.5, 2.0, [0.0, 0.5, 1.0])
    """

    low: float
    high: float
    bins: int

    @property
    def width(self) -> float:
        """The width of one bin: the resolution of every histogram-based distance."""
        return (self.high - self.low) / self.bins

    @property
    def shift(self) -> float:
        """The constant subtracted from predictions and labels before summing."""
        return (self.low + self.high) / 2.0

    @cached_property
    def edges(self) -> np.ndarray:
        """The ``bins + 1`` bin edges; bin k holds values v with edges[k] <= v < edges[k + 1] (the last is closed)."""
        return np.linspace(self.low, self.high, self.bins + 1)

    def bin_of(self, column: str) -> pl.Expr:
        """The bin index of a value, exact with respect to ``edges`` (the float division is corrected by one)."""
        edges = pl.lit(pl.Series(self.edges))
        guess = ((pl.col(column) - self.low) / self.width).floor().clip(0, self.bins - 1).cast(pl.Int32)
        below = (pl.col(column) < edges.gather(guess)).cast(pl.Int32)
        above = (pl.col(column) >= edges.gather(guess + 1)).cast(pl.Int32)
        return (guess - below + above).clip(0, self.bins - 1).cast(pl.Int32)


@dataclass(frozen=True)
class RegressionCube:
    """Moment sums per (attributes x bucket) cell and prediction/label histograms per attribute combination.

    ``cells`` holds the attribute columns (strings), ``__bucket``, ``__rows``, ``__weight``, ``__weight_sq`` and
    the weighted sums named in ``columns.SUMS``; ``predictions`` and ``labels`` hold the attribute columns,
    ``__value_bin``, ``__rows``, ``__weight`` and the bin's smallest and largest value of positive weight,
    ``__bin_low`` and ``__bin_high`` (+inf and -inf where the bin has no weight).
    """

    cells: pl.DataFrame
    predictions: pl.DataFrame
    labels: pl.DataFrame
    attributes: tuple[str, ...]
    grid: Grid
    buckets: int

    @property
    def n_rows(self) -> int:
        """The number of rows counted in the cube."""
        return int(self.cells[ROWS].sum())

    def __add__(self, other: RegressionCube) -> RegressionCube:
        """The cube of the union of two disjoint row sets (same attributes, grid and buckets)."""
        if (self.attributes, self.grid, self.buckets) != (other.attributes, other.grid, other.buckets):
            raise DataError(
                "regression cubes with different attributes, histogram grids or bucket counts cannot be added; "
                "fix histogram_range in the options so that every part uses the same grid"
            )
        keys = list(self.attributes)
        return RegressionCube(
            _sum_by(
                pl.concat([self.cells, other.cells.select(self.cells.columns)]),
                [*keys, BUCKET],
                [ROWS, WEIGHT_SQ, *SUMS],
            ).select(self.cells.columns),
            _histogram_union(self.predictions, other.predictions, keys),
            _histogram_union(self.labels, other.labels, keys),
            self.attributes,
            self.grid,
            self.buckets,
        )


def build_regression_cube(
    data: Any,
    *,
    attributes: list[str] | tuple[str, ...],
    prediction: str,
    label: str,
    weight: str | None = None,
    row_id: str | None = None,
    options: RegressionOptions | None = None,
    source: str = "the audited data",
) -> RegressionCube:
    """Cube the rows of ``data`` (a Polars frame or lazy frame, pandas frame or Arrow table).

    One scan checks the columns and finds the grid's range (unless ``options.histogram_range`` fixes it), a
    second groups the rows. ``row_id`` names a column whose hash picks each row's bootstrap bucket, so the cube
    does not depend on row order or partitioning; without it the row position is hashed.

    >>> frame = pl.DataFrame({"g": ["a", "a", "b"], "p": [1.0, 2.0, 3.0], "y": [1.5, 2.0, 2.0]})
    >>> cube = build_regression_cube(frame, attributes=["g"], prediction="p", label="y")
    >>> cube.n_rows, cube.grid.low, cube.grid.high
    (3, 1.0, 3.0)

    Raises
    ------
    DataError
        A missing column, non-finite predictions, labels or weights, a missing attribute value, values outside
        a fixed histogram range, or no rows.
    """
    options = options or RegressionOptions()
    lazy = as_lazy(data)
    attributes = tuple(attributes)
    present = lazy.collect_schema().names()
    for column in [*attributes, prediction, label, *([weight] if weight else []), *([row_id] if row_id else [])]:
        if column not in present:
            raise DataError(
                MISSING_COLUMN.format(
                    column=column, source=source, present=present, fix="rename the column or name it in the policy"
                )
            )
    schema = lazy.collect_schema()
    rows = lazy.select(
        # Categoricals stay categorical through the scan (cheaper to group); the cube's columns are strings.
        *[pl.col(a) if _is_categorical(schema[a]) else pl.col(a).cast(pl.String) for a in attributes],
        pl.col(prediction).cast(pl.Float64, strict=False).alias("__p"),
        pl.col(label).cast(pl.Float64, strict=False).alias("__y"),
        (pl.col(weight).cast(pl.Float64, strict=False) if weight else pl.lit(1.0)).alias(WEIGHT),
        _bucket(row_id, options.bootstrap_buckets).alias(BUCKET),
    )
    grid = _grid(rows, attributes, options, source, {"__p": prediction, "__y": label, WEIGHT: weight or ""})
    return _cube(rows, attributes, grid, options.bootstrap_buckets)


def _is_categorical(dtype: pl.DataType) -> bool:
    return dtype == pl.Categorical or isinstance(dtype, pl.Enum)


def _bucket(row_id: str | None, buckets: int) -> pl.Expr:
    # A hash, not the position modulo buckets: sorted data would put a systematic sample in each bucket, whose
    # buckets vary less than random ones and would shrink the bootstrap's intervals.
    key = pl.col(row_id) if row_id else pl.int_range(pl.len(), dtype=pl.UInt64)
    return (key.hash(seed=20190217) % buckets).cast(pl.Int16)


def _grid(
    rows: pl.LazyFrame, attributes: tuple[str, ...], options: RegressionOptions, source: str, names: dict[str, str]
) -> Grid:
    """Check the rows (one scan) and fix the grid: the options' range, or the data's min and max."""
    finite = {c: pl.col(c).is_not_null() & pl.col(c).is_finite() for c in ("__p", "__y")}
    checks = rows.select(
        pl.len().alias("rows"),
        *[(~ok).sum().alias(f"bad{c}") for c, ok in finite.items()],
        (pl.col(WEIGHT).is_null() | ~pl.col(WEIGHT).is_finite() | (pl.col(WEIGHT) < 0)).sum().alias("bad_weight"),
        *[pl.col(a).is_null().sum().alias(f"null_{a}") for a in attributes],
        *[pl.col(c).filter(ok).min().alias(f"min{c}") for c, ok in finite.items()],
        *[pl.col(c).filter(ok).max().alias(f"max{c}") for c, ok in finite.items()],
    ).collect()
    found = checks.row(0, named=True)
    if found["rows"] == 0:
        raise DataError(EMPTY_DATA.format(source=source))
    for column in ("__p", "__y", WEIGHT):
        count = found[f"bad{column}" if column != WEIGHT else "bad_weight"]
        if count:
            what = NOT_FINITE if column != WEIGHT else NOT_FINITE.replace("finite numbers", "finite weights >= 0")
            raise DataError(what.format(column=names[column], source=source, count=count))
    for attribute in attributes:
        if found[f"null_{attribute}"]:
            raise DataError(
                MISSING_ATTRIBUTE.format(attribute=attribute, source=source, count=found[f"null_{attribute}"])
            )
    low = min(found["min__p"], found["min__y"])
    high = max(found["max__p"], found["max__y"])
    if options.histogram_range is None:
        if high <= low:  # every value equal: any grid around it holds them
            low, high = low - 0.5, high + 0.5
        return Grid(float(low), float(high), options.histogram_bins)
    fixed = Grid(*options.histogram_range, options.histogram_bins)
    for column in ("__p", "__y"):
        outside = rows.select(((pl.col(column) < fixed.low) | (pl.col(column) > fixed.high)).sum()).collect().item()
        if outside:
            raise DataError(
                OUT_OF_RANGE.format(
                    column=names[column],
                    source=source,
                    count=outside,
                    range=list(options.histogram_range),
                    low=found[f"min{column}"],
                    high=found[f"max{column}"],
                )
            )
    return fixed


def _cube(rows: pl.LazyFrame, attributes: tuple[str, ...], grid: Grid, buckets: int) -> RegressionCube:
    keys = list(attributes)
    w, p, y = pl.col(WEIGHT), pl.col("__p") - grid.shift, pl.col("__y") - grid.shift
    residual = pl.col("__p") - pl.col("__y")
    cells = rows.group_by([*keys, BUCKET]).agg(
        pl.len().cast(pl.Int64).alias(ROWS),
        w.sum().alias(WEIGHT),
        (w * w).sum().alias(WEIGHT_SQ),
        (w * p).sum().alias(PRED_SUM),
        (w * y).sum().alias(LABEL_SUM),
        (w * p * p).sum().alias(PRED_SQ),
        (w * y * y).sum().alias(LABEL_SQ),
        (w * p * y).sum().alias(PRED_LABEL),
        (w * residual.abs()).sum().alias(ABS_RESIDUAL),
        (w * residual * residual).sum().alias(RESIDUAL_SQ),
    )
    histograms = [
        rows.with_columns(
            grid.bin_of(column).alias(VALUE_BIN),
            # Values of weight 0 do not count towards a bin's extremes (null is skipped by min and max).
            pl.when(w > 0).then(pl.col(column)).alias("__positive"),
        )
        .group_by([*keys, VALUE_BIN])
        .agg(
            pl.len().cast(pl.Int64).alias(ROWS),
            w.sum().alias(WEIGHT),
            pl.col("__positive").min().fill_null(float("inf")).alias(BIN_LOW),
            pl.col("__positive").max().fill_null(float("-inf")).alias(BIN_HIGH),
        )
        for column in ("__p", "__y")
    ]
    as_strings = [pl.col(a).cast(pl.String) for a in attributes]
    cells_frame, predictions, labels = (
        frame.with_columns(as_strings) for frame in pl.collect_all([cells, *histograms])
    )
    return RegressionCube(
        cells_frame.sort([*keys, BUCKET]),
        predictions.sort([*keys, VALUE_BIN]),
        labels.sort([*keys, VALUE_BIN]),
        attributes,
        grid,
        buckets,
    )


def _histogram_union(first: pl.DataFrame, second: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    return (
        pl.concat([first, second.select(first.columns)])
        .group_by([*keys, VALUE_BIN])
        .agg(pl.col(ROWS, WEIGHT).sum(), pl.col(BIN_LOW).min(), pl.col(BIN_HIGH).max())
        .sort([*keys, VALUE_BIN])
        .select(first.columns)
    )


def _sum_by(frame: pl.DataFrame, keys: list[str], values: list[str]) -> pl.DataFrame:
    return frame.group_by(keys).agg(pl.col(v).sum() for v in values).sort(keys)
