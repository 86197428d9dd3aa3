"""The multiclass cube: K x K confusion counts per cell of the sensitive attributes, in one pass.

As the binary cube (``fairgate/engine/cube.py``): one ``group_by`` keyed by every sensitive attribute, the
true class and the predicted class, whose size depends on the attributes' cardinalities and K, not on the row
count. Every slicing is a marginal of it and cubes of disjoint row sets add. Classes are coded by their
position in the declared ``multiclass.classes``; a label outside them is refused, naming it.

Cells carry ``rows``, ``weight`` (sum of row weights) and ``weight_sq`` (sum of squared weights) so that Kish's
effective sizes follow, as in the binary cube. Probabilistic group membership (proxy inference) is not supported
for multiclass audits yet: every row is one person.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from fairgate.engine.columns import BIN, PERSON_SQ, PRED, ROWS, SCORE_SUM, TRUE, WEIGHT, WEIGHT_SQ
from fairgate.engine.cube import Cube, apply_missing_attribute_rules, as_lazy, check_cardinality
from fairgate.errors import EMPTY_DATA, MISSING_COLUMN, DataError
from fairgate.policy.core import Policy
from fairgate.policy.task import MulticlassOptions

UNDECLARED_CLASS = (
    "column {column!r} in {source} holds {example!r} in {count} row(s), which is not among the declared classes "
    "{classes} (undeclared: {undeclared}); add it to multiclass.classes in the policy, or recode the data"
)
MISSING_CLASS = (
    "column {column!r} in {source} has no value in {count} row(s); every row needs a class among {classes}: "
    "fill or drop those rows"
)

_RAW_TRUE, _RAW_PRED, _BAD_WEIGHTS = "__raw_y_true", "__raw_y_pred", "__bad_weights"
_CODE = pl.Int16


@dataclass(frozen=True)
class MulticlassCube:
    """Counts per cell of (attributes x true class x predicted class).

    ``cells`` is a Polars frame with the attribute columns (strings), ``__y_true`` and ``__y_pred`` (class codes,
    positions in ``classes``), ``__rows``, ``__weight`` and ``__weight_sq``, sorted by its keys.
    """

    cells: pl.DataFrame
    attributes: tuple[str, ...]
    classes: tuple[str, ...]
    # People left out before counting (missing attribute values under ``missing: exclude``), per attribute.
    excluded_missing: dict[str, int] = field(default_factory=dict)

    @property
    def n_rows(self) -> int:
        """The number of input rows counted in the cube."""
        return int(self.cells[ROWS].sum())

    @property
    def n_classes(self) -> int:
        """K, the number of declared classes."""
        return len(self.classes)

    def __add__(self, other: MulticlassCube) -> MulticlassCube:
        """The cube of the union of two disjoint row sets."""
        if (self.attributes, self.classes) != (other.attributes, other.classes):
            raise DataError("multiclass cubes with different attributes or classes cannot be added")
        keys = [*self.attributes, TRUE, PRED]
        cells = (
            pl.concat([self.cells, other.cells]).group_by(keys).agg(pl.col(ROWS, WEIGHT, WEIGHT_SQ).sum()).sort(keys)
        )
        excluded = {
            a: self.excluded_missing.get(a, 0) + other.excluded_missing.get(a, 0)
            for a in set(self.excluded_missing) | set(other.excluded_missing)
        }
        return MulticlassCube(cells, self.attributes, self.classes, excluded)


def build_multiclass_cube(
    data: Any, policy: Policy, options: MulticlassOptions, *, source: str = "the audited data"
) -> MulticlassCube:
    """Count the rows into a multiclass cube keyed by every sensitive attribute of the policy, in one scan.

    ``policy`` gives the column names (``columns.y_true``, ``columns.y_pred``, ``columns.weight``), the
    attributes and their missing-value rules; ``options`` the declared classes. The scan groups by the raw
    labels, so every check (declared classes, missing labels, weights, attribute values) runs on the small
    grouped result.

    Raises
    ------
    DataError
        A missing column, an empty input, a missing or undeclared class, a bad weight or an undeclared
        attribute value; the message names the column, an example and the fix.
    """
    lazy = as_lazy(data)
    columns = policy.columns
    attributes = tuple(policy.attribute_names)
    present = lazy.collect_schema().names()
    for name in [columns.y_true, columns.y_pred, *attributes, *([columns.weight] if columns.weight else [])]:
        if name not in present:
            fix = "rename the column in the data or set its name in the policy"
            raise DataError(MISSING_COLUMN.format(column=name, source=source, present=present, fix=fix))
    schema = lazy.collect_schema()
    keys = [*attributes, _RAW_TRUE, _RAW_PRED]
    rows = lazy.select(
        *[_attribute(a, schema[a]) for a in attributes],
        pl.col(columns.y_true).alias(_RAW_TRUE),
        pl.col(columns.y_pred).alias(_RAW_PRED),
        *([pl.col(columns.weight).cast(pl.Float64, strict=False).alias(WEIGHT)] if columns.weight else []),
    )
    raw_cells = rows.group_by(keys).agg(pl.len().cast(pl.Int64).alias(ROWS), *_weight_sums(columns.weight)).collect()
    if raw_cells.height == 0:
        raise DataError(EMPTY_DATA.format(source=source))
    check_cardinality(raw_cells, policy, source)
    _refuse_bad_weights(raw_cells, columns.weight, source)
    raw_cells = raw_cells.with_columns(_as_label(raw_cells, _RAW_TRUE), _as_label(raw_cells, _RAW_PRED))
    for raw, name in ((_RAW_TRUE, columns.y_true), (_RAW_PRED, columns.y_pred)):
        _check_classes(raw_cells, raw, name, options.classes, source)
    raw_cells, excluded = apply_missing_attribute_rules(raw_cells, policy, source)
    codes = list(range(len(options.classes)))
    cells = (
        raw_cells.with_columns(
            pl.col(_RAW_TRUE).replace_strict(options.classes, codes, return_dtype=_CODE).alias(TRUE),
            pl.col(_RAW_PRED).replace_strict(options.classes, codes, return_dtype=_CODE).alias(PRED),
        )
        .group_by([*attributes, TRUE, PRED])
        .agg(pl.col(ROWS, WEIGHT, WEIGHT_SQ).sum())
        .sort([*attributes, TRUE, PRED])
    )
    return MulticlassCube(cells, attributes, tuple(options.classes), excluded)


def _weight_sums(weight: str | None) -> list[pl.Expr]:
    """Per cell: the summed weights and squared weights, and (with a weight column) the count of bad weights."""
    if weight is None:  # every weight 1: the sums are the row counts (no per-row work)
        return [pl.len().cast(pl.Float64).alias(WEIGHT), pl.len().cast(pl.Float64).alias(WEIGHT_SQ)]
    w = pl.col(WEIGHT)
    return [w.sum(), (w * w).sum().alias(WEIGHT_SQ), (w.is_null() | ~w.is_finite() | (w < 0)).sum().alias(_BAD_WEIGHTS)]


def _refuse_bad_weights(raw_cells: pl.DataFrame, weight: str | None, source: str) -> None:
    if weight and (bad := int(raw_cells[_BAD_WEIGHTS].sum())):
        raise DataError(f"column {weight!r} in {source} must hold finite, non-negative weights; {bad} row(s) do not")


def _attribute(name: str, dtype: pl.DataType) -> pl.Expr:
    """The attribute as grouped: strings, categoricals and enums as they are, anything else as its text."""
    if dtype == pl.String or dtype == pl.Categorical or isinstance(dtype, pl.Enum):
        return pl.col(name)
    return pl.col(name).cast(pl.String)


def _as_label(cells: pl.DataFrame, column: str) -> pl.Expr:
    """A label as the text the policy declares: integral floats (1.0, from CSV or pandas) read as "1"."""
    dtype = cells.schema[column]
    expression = pl.col(column)
    if dtype.is_float():
        values = cells[column].drop_nulls()
        if values.is_finite().all() and (values == values.round(0)).all():
            expression = expression.cast(pl.Int64)
    return expression.cast(pl.String)


def _check_classes(cells: pl.DataFrame, raw: str, name: str, classes: list[str], source: str) -> None:
    missing = cells.filter(pl.col(raw).is_null())
    if missing.height:
        raise DataError(
            MISSING_CLASS.format(column=name, source=source, count=int(missing[ROWS].sum()), classes=classes)
        )
    stray = cells.filter(~pl.col(raw).is_in(classes))
    if stray.height:
        undeclared = sorted(stray[raw].unique().to_list())
        count = int(stray.filter(pl.col(raw) == undeclared[0])[ROWS].sum())
        raise DataError(
            UNDECLARED_CLASS.format(
                column=name,
                source=source,
                example=undeclared[0],
                count=count,
                classes=classes,
                undeclared=undeclared[:5],
            )
        )


def to_binary_cube(cube: MulticlassCube, adverse_classes: Sequence[str]) -> Cube:
    """The binary cube of the decision "adverse class or not" (the ordered-outcome option).

    The favourable outcome is a class outside ``adverse_classes``, for the truth and the prediction alike. The
    result is exactly the cube :func:`fairgate.build_cube` makes of the same rows with labels and predictions
    coded 1 for a favourable class (``favorable_label: 1``) and no scores, so every binary metric, interval and
    verdict applies unchanged.

    >>> cells = pl.DataFrame({"sex": ["F", "F"], TRUE: [0, 2], PRED: [1, 2], ROWS: [3, 4], WEIGHT: [3.0, 4.0],
    ...                       WEIGHT_SQ: [3.0, 4.0]}, schema_overrides={TRUE: pl.Int16, PRED: pl.Int16})
    >>> binary = to_binary_cube(MulticlassCube(cells, ("sex",), ("low", "medium", "high")), ["medium", "high"])
    >>> binary.cells.select(TRUE, PRED, ROWS).rows()
    [(0, 0, 4), (1, 0, 3)]
    """
    stray = [c for c in adverse_classes if c not in cube.classes]
    if stray or not adverse_classes:
        raise DataError(f"adverse classes {list(adverse_classes)} must be some of the cube's classes {cube.classes}")
    adverse = [cube.classes.index(c) for c in adverse_classes]
    keys = [*cube.attributes, TRUE, PRED, BIN]
    cells = (
        cube.cells.lazy()
        .with_columns(
            (~pl.col(TRUE).is_in(adverse)).cast(pl.Int8).alias(TRUE),
            (~pl.col(PRED).is_in(adverse)).cast(pl.Int8).alias(PRED),
            pl.lit(0, dtype=pl.Int16).alias(BIN),
        )
        .group_by(keys)
        .agg(
            pl.col(ROWS, WEIGHT, WEIGHT_SQ).sum(),
            pl.col(WEIGHT_SQ).sum().alias(PERSON_SQ),  # every row is its own person
            pl.lit(0.0).sum().alias(SCORE_SUM),  # no scores: the binary cube's score sum is 0
        )
        .sort(keys)
        .collect()
    )
    return Cube(cells, cube.attributes, 1, False, None, dict(cube.excluded_missing), None)
