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

from collections.abc import Callable
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

#: A column's values (or codes, slots) for a slice of the rows.
Rows = Callable[[slice], np.ndarray]

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

    def bins_of(self, values: np.ndarray) -> np.ndarray:
        """``bin_of`` on a numpy array, with the very same results (tested on and around every edge).

        The guess ``(v - low) / width`` clipped to the bins and truncated (equal to flooring then clipping), then
        corrected by one where the float division put a value on the wrong side of its bin's edges. The first
        bin's left edge is taken as -inf and the last's right edge as +inf, which is ``bin_of``'s final clip.

        >>> Grid(0.0, 1.0, 4).bins_of(np.array([0.0, 0.25, 0.2499999, 1.0, 7.0])).tolist()
        [0, 1, 0, 3, 3]
        """
        scaled = values - self.low
        scaled /= self.width
        np.maximum(scaled, 0, out=scaled)
        np.minimum(scaled, self.bins - 1, out=scaled)
        guess = scaled.astype(np.int64)
        left, right = self._open_edges
        below = values < left.take(guess)
        above = values >= right.take(guess)
        guess -= below
        guess += above
        return guess

    @cached_property
    def _open_edges(self) -> tuple[np.ndarray, np.ndarray]:
        """Each bin's left and right edge, the outermost ones open (-inf and +inf)."""
        left, right = self.edges[:-1].copy(), self.edges[1:].copy()
        left[0], right[-1] = -np.inf, np.inf
        return left, right

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
    return _cube(rows, attributes, grid, options.bootstrap_buckets, weighted=weight is not None)


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


def _cube(
    rows: pl.LazyFrame, attributes: tuple[str, ...], grid: Grid, buckets: int, *, weighted: bool
) -> RegressionCube:
    """Sum the rows into their cells and histogram bins with ``np.bincount`` over integer slots, in chunks.

    A Polars ``group_by`` keyed by strings, a bucket and a bin hashes every row three times over; here each row's
    attribute combination gets an integer code from the categories' physical codes, and every sum, count and
    bin extreme is a ``bincount`` (or ``minimum.at``) over ``code * buckets + bucket`` or ``code * bins + bin``.
    Rows go through in chunks of ``_CHUNK`` so that the dozen passes over each chunk stay in the CPU cache
    (twice as fast as passes over whole columns) and no temporary grows with the row count. Each row's terms
    are the same products as before (weight x shifted value x shifted value ...); only the order of the
    additions within a cell differs.
    """
    keys = list(attributes)
    schema = rows.collect_schema()
    frame = rows.select(
        # Strings become categoricals here: their physical codes are what the codes are made from.
        *[pl.col(a) if _is_categorical(schema[a]) else pl.col(a).cast(pl.Categorical) for a in keys],
        "__p",
        "__y",
        BUCKET,
        *([WEIGHT] if weighted else []),
    ).collect()
    code_of, groups = _combination_codes(frame, keys, max(buckets, grid.bins))
    p, y = frame["__p"].to_numpy(), frame["__y"].to_numpy()
    w = frame[WEIGHT].to_numpy() if weighted else None
    bucket = frame[BUCKET].to_numpy()
    n = frame.height
    del frame

    cell_slot, cells_used = _slots(lambda chunk: code_of(chunk) * buckets + bucket[chunk], n, groups.height * buckets)
    histograms = [_Histogram.of(values, w, code_of, groups.height, grid) for values in (p, y)]
    counts = np.zeros(cells_used.size, dtype=np.int64)
    totals = np.zeros((len(_CELL_SUMS), cells_used.size))
    for start in range(0, n, _CHUNK):
        chunk = slice(start, start + _CHUNK)
        slot = cell_slot(chunk)
        counts += np.bincount(slot, minlength=cells_used.size)
        weight = None if w is None else w[chunk]
        for total, values in zip(totals, _cell_terms(p[chunk], y[chunk], weight, grid.shift), strict=True):
            total += np.bincount(slot, values, cells_used.size)
        for histogram in histograms:
            histogram.add(chunk)
    sums = dict(zip(_CELL_SUMS, totals, strict=True))
    sums[WEIGHT] = counts.astype(np.float64) if w is None else sums[WEIGHT]
    sums[WEIGHT_SQ] = counts.astype(np.float64) if w is None else sums[WEIGHT_SQ]
    present = counts > 0  # a dense numbering has empty slots
    cells = pl.DataFrame(
        {
            **groups[cells_used[present] // buckets].to_dict(),
            BUCKET: pl.Series(cells_used[present] % buckets, dtype=pl.Int16),
            ROWS: pl.Series(counts[present], dtype=pl.Int64),
            **{name: pl.Series(sums[name][present], dtype=pl.Float64) for name in (WEIGHT, WEIGHT_SQ, *_MOMENTS)},
        }
    )
    predictions, labels = (histogram.table(groups) for histogram in histograms)
    return RegressionCube(cells, predictions, labels, attributes, grid, buckets)


#: The cell sums taken from the rows' terms (unweighted, the weight and squared weight are the row counts).
_MOMENTS = (PRED_SUM, LABEL_SUM, PRED_SQ, LABEL_SQ, PRED_LABEL, ABS_RESIDUAL, RESIDUAL_SQ)
_CELL_SUMS = (WEIGHT, WEIGHT_SQ, *_MOMENTS)


def _cell_terms(p: np.ndarray, y: np.ndarray, w: np.ndarray | None, shift: float) -> list[np.ndarray]:
    """Each row's terms of ``_CELL_SUMS`` (ones for the weights when unweighted), as the group-by took them."""
    shifted_p, shifted_y, residual = p - shift, y - shift, p - y
    if w is None:
        ones = np.ones(p.size)
        return [
            ones,
            ones,
            shifted_p,
            shifted_y,
            shifted_p * shifted_p,
            shifted_y * shifted_y,
            shifted_p * shifted_y,
            np.abs(residual),
            residual * residual,
        ]
    weighted_p, weighted_y = w * shifted_p, w * shifted_y
    return [
        w,
        w * w,
        weighted_p,
        weighted_y,
        weighted_p * shifted_p,
        weighted_y * shifted_y,
        weighted_p * shifted_y,
        w * np.abs(residual),
        w * residual * residual,
    ]


@dataclass
class _Histogram:
    """Running counts, weights and extremes of one value column per (combination, bin) slot."""

    values: np.ndarray
    w: np.ndarray | None
    slot_of: Rows
    used: np.ndarray
    bins: int
    counts: np.ndarray
    weight: np.ndarray
    low: np.ndarray
    high: np.ndarray

    @classmethod
    def of(cls, values: np.ndarray, w: np.ndarray | None, code_of: Rows, n_groups: int, grid: Grid) -> _Histogram:
        slot_of, used = _slots(
            lambda chunk: code_of(chunk) * grid.bins + grid.bins_of(values[chunk]), values.size, n_groups * grid.bins
        )
        size = used.size
        return cls(
            values,
            w,
            slot_of,
            used,
            grid.bins,
            np.zeros(size, dtype=np.int64),
            np.zeros(size),
            np.full(size, np.inf),
            np.full(size, -np.inf),
        )

    def add(self, chunk: slice) -> None:
        slot, values = self.slot_of(chunk), self.values[chunk]
        self.counts += np.bincount(slot, minlength=self.used.size)
        if self.w is None:
            np.minimum.at(self.low, slot, values)
            np.maximum.at(self.high, slot, values)
            return
        w = self.w[chunk]
        self.weight += np.bincount(slot, w, self.used.size)
        # Values of weight 0 do not count towards a bin's extremes.
        positive = w > 0
        np.minimum.at(self.low, slot[positive], values[positive])
        np.maximum.at(self.high, slot[positive], values[positive])

    def table(self, groups: pl.DataFrame) -> pl.DataFrame:
        """Rows, weight and the extremes of positive weight per (combination, bin) present, sorted by both."""
        present = self.counts > 0  # a dense numbering has empty slots
        used = self.used[present]
        weight = self.counts.astype(np.float64) if self.w is None else self.weight
        return pl.DataFrame(
            {
                **groups[used // self.bins].to_dict(),
                VALUE_BIN: pl.Series(used % self.bins, dtype=pl.Int32),
                ROWS: pl.Series(self.counts[present], dtype=pl.Int64),
                WEIGHT: weight[present],
                BIN_LOW: self.low[present],
                BIN_HIGH: self.high[present],
            }
        )


def _combination_codes(frame: pl.DataFrame, keys: list[str], width: int) -> tuple[Rows, pl.DataFrame]:
    """A function giving the rows' attribute combination codes (for a slice of rows), and the combinations.

    Codes follow the combinations' sort order (by the first attribute's text, then the second's, ...), so a
    table built in code order is sorted as ``sort(keys)`` would sort it. Every combination of the values
    present gets a code (some may have no rows) unless ``width`` slots per combination would exceed ``_DENSE``;
    then only the combinations present are numbered (over all rows at once).
    """
    lookups: list[tuple[np.ndarray, np.ndarray, int]] = []
    values: list[pl.Series] = []
    for key in keys:
        column = frame[key]
        physical = column.to_physical().to_numpy()
        present = np.flatnonzero(np.bincount(physical))
        if isinstance(column.dtype, pl.Enum):  # an Enum's code is the position of its text in the categories
            text = column.dtype.categories.gather(present)
        else:  # a row of each present code gives its text
            row_of = np.zeros(present[-1] + 1, dtype=np.int64)
            row_of[physical] = np.arange(physical.size)
            text = column.gather(row_of[present]).cast(pl.String)
        order = text.arg_sort().to_numpy()
        dense = np.full(present[-1] + 1, -1, dtype=np.int64)
        dense[present[order]] = np.arange(order.size)
        lookups.append((dense, physical, order.size))
        values.append(text.gather(order))

    def codes(chunk: slice) -> np.ndarray:
        code = np.zeros(0, dtype=np.int64)
        for i, (dense, physical, size) in enumerate(lookups):
            part = dense.take(physical[chunk])
            code = part if i == 0 else code * size + part
        return code

    code_of: Rows = codes
    size = int(np.prod([v.len() for v in values], dtype=np.float64))
    if size * width > _DENSE:
        compacted, used = _compact(codes(slice(None)), size)
        code_of = _sliced(compacted)
    else:
        used = np.arange(size)
    groups = {}
    rest = used
    for key, value in reversed(list(zip(keys, values, strict=True))):
        rest, position = np.divmod(rest, value.len())
        groups[key] = value.gather(position).alias(key)
    return code_of, pl.DataFrame({key: groups[key] for key in keys}, schema=dict.fromkeys(keys, pl.String))


def _slots(slot_of: Rows, n: int, size: int) -> tuple[Rows, np.ndarray]:
    """Slots numbered ``0..m-1`` (a function of a slice of rows) and the slot each number stands for.

    Up to ``_DENSE`` possible slots they are used as they are (empty ones are dropped after counting), computed
    chunk by chunk; beyond (many attributes with many values) only the present ones are numbered, over all
    rows at once, so memory follows the rows, not the product of cardinalities.
    """
    if size <= _DENSE:
        return slot_of, np.arange(size)
    slot, used = _compact(slot_of(slice(0, n)), size)
    return _sliced(slot), used


def _sliced(values: np.ndarray) -> Rows:
    def part(chunk: slice) -> np.ndarray:
        return values[chunk]

    return part


def _compact(slot: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """The present slots numbered densely in increasing order (a ``bincount`` if it fits, else a sort)."""
    if size <= _DENSE:
        present = np.bincount(slot, minlength=size) > 0
        renumber = np.cumsum(present) - 1
        return renumber.take(slot), np.flatnonzero(present)
    used, inverse = np.unique(slot, return_inverse=True)
    return inverse.reshape(-1), used


#: The most slots counted into dense arrays (32 MB per float array); more are numbered by sorting.
_DENSE = 1 << 22
#: Rows per chunk: a chunk's columns and temporaries (256 KB each) stay in the CPU cache across its passes.
_CHUNK = 1 << 15


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
