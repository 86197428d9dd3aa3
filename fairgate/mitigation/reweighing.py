"""Reweighing (Kamiran & Calders 2012): training weights that make the label independent of the group.

Each training row of group ``g`` (one sensitive attribute, or the intersection of several) with label ``y`` gets
the weight ``P(g) P(y) / P(g, y)``: the count the cell would have if group and label were independent, over the
count it has. A learner trained with these weights sees every group with the same base rate. With base weights
(survey or sampling weights), the probabilities are weighted sums and each row's weight is its base weight times
its cell's factor, as AIF360's ``Reweighing`` does.

>>> frame = pl.DataFrame({"sex": ["F", "F", "F", "M", "M", "M"], "label": [1, 0, 0, 1, 1, 0]})
>>> result = reweigh(frame, ["sex"], "label")
>>> result.table.select("sex", "label", "rows", "weight").rows()
[('F', 0, 2, 0.75), ('F', 1, 1, 1.5), ('M', 0, 1, 1.5), ('M', 1, 2, 0.75)]
>>> result.weights.to_list()
[1.5, 0.75, 0.75, 0.75, 0.75, 1.5]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from fairgate.errors import DataError

#: Column names of the per-cell table besides the attributes and the label.
ROWS, MASS, WEIGHT = "rows", "mass", "weight"
_BASE = "__base_weight"


@dataclass(frozen=True)
class Reweighing:
    """The weights of one training set.

    ``table`` has one row per (group, label) cell present in the data: the attribute columns, the label, ``rows``
    (how many training rows), ``mass`` (their summed base weight) and ``weight`` (the factor ``P(g) P(y) /
    P(g, y)``). ``weights`` holds each training row's weight, in the input's row order.
    """

    attributes: tuple[str, ...]
    label: str
    table: pl.DataFrame
    weights: pl.Series


def reweigh(frame: pl.DataFrame, attributes: Sequence[str], label: str, base_weight: str | None = None) -> Reweighing:
    """Kamiran-Calders weights for ``frame``, grouped by the intersection of ``attributes``.

    Parameters
    ----------
    frame
        Training rows: the attribute columns, the label column (binary), optionally a base-weight column.
    attributes
        The sensitive attribute(s); several define intersectional groups.
    label
        The label column; its values must be 0/1 (or booleans).
    base_weight
        A column of non-negative base weights (default: every row weighs 1).

    Returns
    -------
    Reweighing
        The per-cell table and the per-row weights.

    Raises
    ------
    DataError
        A column is missing, a label is not binary, an attribute or weight is missing, or a weight is negative.
    """
    _check_columns(frame, [*attributes, label, *([base_weight] if base_weight else [])])
    keys = [*attributes, label]
    data = frame.select(
        *[pl.col(name).cast(pl.String) for name in attributes],
        _binary_label(frame, label),
        (pl.col(base_weight).cast(pl.Float64) if base_weight else pl.lit(1.0, pl.Float64)).alias(_BASE),
    )
    _check_values(data, attributes, label, base_weight)
    table = data.group_by(keys).agg(pl.len().alias(ROWS), pl.col(_BASE).sum().alias(MASS)).sort(keys)
    table = table.with_columns(pl.Series(WEIGHT, _factors(table, attributes, label), dtype=pl.Float64))
    factor = data.join(table.select(*keys, WEIGHT), on=keys, how="left", maintain_order="left")[WEIGHT]
    weights = (data[_BASE] * factor).alias(WEIGHT)
    return Reweighing(tuple(attributes), label, table, weights)


def _factors(table: pl.DataFrame, attributes: Sequence[str], label: str) -> np.ndarray:
    """``n_y n_g / (n n_gy)`` per cell, in the order AIF360 multiplies (so both agree to the last bits)."""
    n = float(table[MASS].sum())
    by_group = table.group_by(list(attributes)).agg(pl.col(MASS).sum().alias("__n_g"))
    by_label = table.group_by(label).agg(pl.col(MASS).sum().alias("__n_y"))
    cells = table.join(by_group, on=list(attributes), maintain_order="left").join(
        by_label, on=label, maintain_order="left"
    )
    n_y, n_g, n_gy = (cells[c].to_numpy().astype(np.float64) for c in ("__n_y", "__n_g", MASS))
    with np.errstate(divide="ignore", invalid="ignore"):
        factors = n_y * n_g / (n * n_gy)
    # A cell whose rows all weigh 0 contributes nothing; its factor is irrelevant and set to 0, never NaN.
    return np.where(n_gy > 0, factors, 0.0)


def _check_columns(frame: pl.DataFrame, names: Sequence[str]) -> None:
    missing = [name for name in names if name not in frame.columns]
    if missing:
        raise DataError(
            f"the training data has no column {', '.join(map(repr, missing))}; columns present: "
            f"{', '.join(frame.columns)}. Name the label and sensitive attribute columns as they are in the file"
        )


def _binary_label(frame: pl.DataFrame, label: str) -> pl.Expr:
    column = frame[label]
    if column.dtype == pl.Boolean:
        return pl.col(label).cast(pl.Int8)
    values = set(column.drop_nulls().unique().to_list())
    if not values <= {0, 1} or column.null_count():
        bad = sorted(map(repr, values - {0, 1}))[:3] or ["a missing value"]
        raise DataError(
            f"the label column {label!r} must hold 0/1 in every row; found {', '.join(bad)}. "
            "Encode the label as 0/1 (1 = the positive class) and drop rows without a label"
        )
    return pl.col(label).cast(pl.Int8)


def _check_values(data: pl.DataFrame, attributes: Sequence[str], label: str, base_weight: str | None) -> None:
    for name in attributes:
        if data[name].null_count():
            raise DataError(
                f"the sensitive attribute {name!r} is missing in {data[name].null_count()} training row(s); "
                "reweighing needs every row's group: fill the value (e.g. 'unknown') or drop those rows"
            )
    if base_weight is not None:
        base = data[_BASE]
        if base.null_count() or not bool(base.is_finite().all()) or bool((base < 0).any()):
            raise DataError(
                f"the base weight column {base_weight!r} must hold finite non-negative numbers in every row"
            )
    if data.height == 0 or float(data[_BASE].sum()) <= 0:
        raise DataError("the training data has no rows (or all base weights are 0); nothing to reweigh")
