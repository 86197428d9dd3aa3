"""The cube: sufficient statistics of the audited rows, in one pass (DESIGN.md, "The central idea").

One ``group_by`` keyed by every sensitive attribute, the favourable-outcome indicators of y_true and y_pred,
and the calibration score bin gives a table whose size depends on the attributes' cardinalities, not on the
row count. Every slicing is a marginal of it; cubes of disjoint row sets add.

A second, optional table keeps (attributes, score, y_true) counts for metrics that need exact score order
(ROC AUC and ROC curves). It is as large as the number of distinct scores, so it is built only on request.

Cells carry ``rows`` (how many input rows fell in the cell) and ``weight`` (the sum of row weights; equal to
``rows`` unless weights are given, e.g. probabilistic group membership from proxy inference).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from fairgate.config import Policy
from fairgate.errors import _BAD_SCORE, _EMPTY_DATA, _MISSING_COLUMN, _NOT_BINARY, DataError

if TYPE_CHECKING:
    from fairgate.auc import ScoreArrays

# Internal column names carry a "__" prefix so that a sensitive attribute may be called anything.
TRUE, PRED, BIN = "__y_true", "__y_pred", "__score_bin"
ROWS, WEIGHT, SCORE_SUM, SCORE = "__rows", "__weight", "__score_sum", "__score"
NO_SCORE_BIN = 0  # without scores every row sits in bin 0 and calibration is undefined


@dataclass(frozen=True)
class Cube:
    """Counts per cell of (attributes x y_true x y_pred x score bin), plus what is needed to audit them.

    ``cells`` is a Polars frame with the attribute columns (strings), ``__y_true``, ``__y_pred`` (favourable
    outcome indicators, 0/1), ``__score_bin``, ``__rows``, ``__weight`` and ``__score_sum`` (weighted sum of
    favourable-outcome scores). ``scores`` holds the rows sorted by score (attribute codes into ``levels``,
    score, y_true, weight) when exact AUC is wanted.
    """

    cells: pl.DataFrame
    attributes: tuple[str, ...]
    calibration_bins: int
    has_scores: bool
    scores: pl.DataFrame | None = None
    # People left out before counting (missing attribute values under ``missing: exclude``), per attribute.
    excluded_missing: dict[str, int] = field(default_factory=dict)

    @property
    def n_rows(self) -> int:
        return int(self.cells[ROWS].sum())

    @property
    def weighted(self) -> bool:
        return not np.allclose(self.cells[ROWS].to_numpy(), self.cells[WEIGHT].to_numpy())

    def levels(self, attribute: str) -> list[str]:
        """The attribute's values present in the data, sorted; score-table codes index into this list."""
        return _levels(self.cells, attribute)

    @cached_property
    def score_arrays(self) -> ScoreArrays:
        """The score table sorted by score once, shared by every slicing's AUC."""
        from fairgate.auc import ScoreArrays

        if self.scores is None:
            raise DataError("this cube was built without a score table (exact_auc=False)")
        return ScoreArrays.from_table(self.scores, {a: self.levels(a) for a in self.attributes})

    def _recoded_scores(self, levels: dict[str, list[str]]) -> pl.DataFrame:
        """The score table with attribute codes re-pointed at another (larger) list of levels."""
        return _recoded_scores_impl(self, levels)

    def __add__(self, other: Cube) -> Cube:
        """The cube of the union of two disjoint row sets."""
        if (self.attributes, self.calibration_bins, self.has_scores) != (
            other.attributes,
            other.calibration_bins,
            other.has_scores,
        ):
            raise DataError("cubes with different attributes, score bins or score presence cannot be added")
        keys = [*self.attributes, TRUE, PRED, BIN]
        cells = _sum_by(pl.concat([self.cells, other.cells]), keys, [ROWS, WEIGHT, SCORE_SUM])
        scores = None
        if self.scores is not None and other.scores is not None:
            union = {a: _levels(cells, a) for a in self.attributes}
            scores = (
                pl.concat([self._recoded_scores(union), other._recoded_scores(union)]).sort(SCORE)
            )
        excluded = {
            a: self.excluded_missing.get(a, 0) + other.excluded_missing.get(a, 0)
            for a in set(self.excluded_missing) | set(other.excluded_missing)
        }
        return Cube(cells, self.attributes, self.calibration_bins, self.has_scores, scores, excluded)


def _recoded_scores_impl(cube: Cube, levels: dict[str, list[str]]) -> pl.DataFrame:
    assert cube.scores is not None
    recode = {a: [levels[a].index(v) for v in cube.levels(a)] for a in cube.attributes}
    return cube.scores.with_columns(
        pl.col(a).replace_strict(list(range(len(m))), m, return_dtype=pl.Int16) for a, m in recode.items()
    )


def _sum_by(frame: pl.DataFrame, keys: list[str], values: list[str]) -> pl.DataFrame:
    return frame.group_by(keys).agg(pl.col(v).sum() for v in values).sort(keys)


def as_polars(data: Any) -> pl.DataFrame:
    """Accept a Polars or pandas frame or a pyarrow Table (zero-copy where possible)."""
    if isinstance(data, pl.DataFrame):
        return data
    if isinstance(data, pl.LazyFrame):
        return data.collect()
    module = type(data).__module__
    if module.startswith("pandas"):
        return pl.from_pandas(data)
    if module.startswith("pyarrow"):
        frame = pl.from_arrow(data)
        assert isinstance(frame, pl.DataFrame)
        return frame
    raise DataError(
        f"cannot audit a {type(data).__name__}; pass a Polars or pandas DataFrame or a pyarrow Table"
    )


def build_cube(data: Any, policy: Policy, *, source: str = "the audited data", exact_auc: bool = True) -> Cube:
    """Count the rows into a cube keyed by every sensitive attribute of the policy.

    Labels are recoded to the favourable outcome (``policy.favorable_label``), so a COMPAS-style risk flag
    with favourable label 0 counts "not flagged" as selection; the score is flipped to match.
    """
    frame = as_polars(data)
    columns = policy.columns
    attributes = tuple(policy.attribute_names)
    has_scores = columns.score in frame.columns
    _require_columns(frame, [columns.y_true, *attributes], source)
    if frame.height == 0:
        raise DataError(_EMPTY_DATA.format(source=source))
    if columns.y_pred not in frame.columns and not has_scores:
        raise DataError(
            _MISSING_COLUMN.format(
                column=columns.y_pred,
                source=source,
                present=frame.columns,
                fix=f"give predictions in {columns.y_pred!r}, or scores in {columns.score!r} to threshold",
            )
        )

    frame, excluded = _normalise_attributes(frame, policy, source)
    favourable = policy.favorable_label
    y_true = _binary(frame, columns.y_true, source)
    if columns.y_pred in frame.columns:
        y_pred = _binary(frame, columns.y_pred, source)
    else:
        y_pred = (pl.col(columns.score) >= columns.decision_threshold).cast(pl.Int8)
    weight = pl.col(columns.weight).cast(pl.Float64) if columns.weight else pl.lit(1.0)
    if columns.weight:
        _require_columns(frame, [columns.weight], source)
    # The score of the favourable outcome: P(y = 1) flips to P(y = 0) when 0 is favourable.
    score = pl.col(columns.score).cast(pl.Float64)
    score = (1.0 - score) if favourable == 0 else score
    if has_scores:
        _require_scores(frame, columns.score, source)
    bins = policy.statistics.calibration_bins
    score_bin = (
        (score * bins).floor().clip(0, bins - 1).cast(pl.Int16) if has_scores else pl.lit(NO_SCORE_BIN, pl.Int16)
    )
    rows = frame.lazy().select(
        *[pl.col(a) for a in attributes],
        (y_true == favourable).cast(pl.Int8).alias(TRUE),
        (y_pred == favourable).cast(pl.Int8).alias(PRED),
        score_bin.alias(BIN),
        weight.alias(WEIGHT),
        (score if has_scores else pl.lit(0.0)).alias(SCORE),
    )
    keys = [*attributes, TRUE, PRED, BIN]
    cells = (
        rows.group_by(keys)
        .agg(pl.len().cast(pl.Int64).alias(ROWS), pl.col(WEIGHT).sum(), (pl.col(SCORE) * pl.col(WEIGHT)).sum().alias(SCORE_SUM))
        .with_columns(pl.col(a).cast(pl.String) for a in attributes)
        .sort(keys)
        .collect()
    )
    scores = None
    if has_scores and exact_auc:
        # Rows sorted by score once, attributes as small integer codes into the cube's sorted levels.
        scores = (
            rows.select(
                *[pl.col(a).cast(pl.String).cast(pl.Enum(_levels(cells, a))).to_physical().cast(pl.Int16) for a in attributes],
                SCORE, TRUE, WEIGHT,
            )
            .sort(SCORE)
            .collect()
        )
    return Cube(cells, attributes, bins if has_scores else 1, has_scores, scores, excluded)


def _levels(cells: pl.DataFrame, attribute: str) -> list[str]:
    return sorted(cells[attribute].unique().to_list())


def _require_columns(frame: pl.DataFrame, names: list[str], source: str) -> None:
    for name in names:
        if name not in frame.columns:
            raise DataError(
                _MISSING_COLUMN.format(
                    column=name,
                    source=source,
                    present=frame.columns,
                    fix="rename the column in the data or set its name in the policy",
                )
            )


def _require_scores(frame: pl.DataFrame, column: str, source: str) -> None:
    values = frame[column].cast(pl.Float64, strict=False)
    bad = values.is_null() | values.is_nan() | (values < 0) | (values > 1)
    n_bad = int(bad.sum())
    if n_bad:
        example = frame[column].filter(bad).head(1).to_list()[0]
        raise DataError(_BAD_SCORE.format(column=column, source=source, example=example, count=n_bad))


def _binary(frame: pl.DataFrame, column: str, source: str) -> pl.Expr:
    values = frame[column]
    if values.dtype == pl.Boolean:
        return pl.col(column).cast(pl.Int8)
    bad = values.is_null() | ~values.cast(pl.Float64, strict=False).is_in([0.0, 1.0]).fill_null(False)
    n_bad = int(bad.sum())
    if n_bad:
        example = values.filter(bad).head(1).to_list()[0]
        raise DataError(
            _NOT_BINARY.format(
                column=column, source=source, example=example, count=n_bad, fix="recode it to 0 and 1"
            )
        )
    return pl.col(column).cast(pl.Float64).cast(pl.Int8)


def _normalise_attributes(frame: pl.DataFrame, policy: Policy, source: str) -> tuple[pl.DataFrame, dict[str, int]]:
    """Attributes as strings; missing values excluded or kept as the unknown group; unknown values refused.

    Categorical columns stay categorical here (grouping them is cheaper); the cube's keys become strings.
    """
    excluded: dict[str, int] = {}
    for attribute in policy.sensitive_attributes:
        column = pl.col(attribute.name)
        if frame[attribute.name].dtype not in (pl.String, pl.Categorical) and not isinstance(
            frame[attribute.name].dtype, pl.Enum
        ):
            frame = frame.with_columns(column.cast(pl.String))
        missing = frame[attribute.name].null_count()
        if missing and attribute.missing == "unknown":
            frame = frame.with_columns(column.cast(pl.String).fill_null(attribute.unknown_label))
        elif missing:
            excluded[attribute.name] = missing
            frame = frame.filter(column.is_not_null())
        allowed = attribute.declared_values
        if allowed is not None:
            present = frame[attribute.name].unique().cast(pl.String)
            stray = present.filter(~present.is_in(allowed))
            if stray.len():
                example = stray[0]
                count = int((frame[attribute.name].cast(pl.String) == example).sum())
                raise DataError(
                    f"attribute {attribute.name!r} in {source} has value {example!r} in {count} row(s) "
                    f"(undeclared values: {sorted(stray.to_list())[:5]}), which the policy does not declare "
                    f"(values: {allowed}); add them to the attribute's values in the policy, or recode the data"
                )
    if frame.height == 0:
        raise DataError(
            f"no rows of {source} are left after excluding missing attribute values ({excluded}); "
            "set missing: unknown on those attributes to audit them as their own group"
        )
    return frame, excluded
