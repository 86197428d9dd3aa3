"""The cube: sufficient statistics of the audited rows, in one pass (DESIGN.md, "The central idea").

One ``group_by`` keyed by every sensitive attribute, the favourable-outcome indicators of y_true and y_pred,
and the calibration score bin gives a table whose size depends on the attributes' cardinalities, not on the
row count. Every slicing is a marginal of it; cubes of disjoint row sets add.

A second, optional table keeps (attributes, score, y_true, weight) rows for metrics that need exact score order
(ROC AUC and ROC curves): one per scored row, or per distinct (attributes, score, y_true) when scores repeat
much (rounded or discrete scores; then with their squared weights' sum). Built only on request (it can be long).

Cells carry ``rows`` (how many input rows fell in the cell), ``weight`` (the sum of row weights; equal to
``rows`` unless weights are given, e.g. probabilistic group membership from proxy inference) and
``weight_sq`` (the sum of squared row weights), from which Kish's effective sample size of any set of cells,
(sum w)^2 / sum w^2, follows: intervals, tests and ``min_group_size`` use it, so they do not depend on the
weights' scale.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np
import polars as pl

from fairgate.engine.auc import ScoreArrays
from fairgate.engine.columns import BIN as BIN
from fairgate.engine.columns import HBIN as HBIN
from fairgate.engine.columns import PERSON_SQ as PERSON_SQ
from fairgate.engine.columns import PERSON_WEIGHT as PERSON_WEIGHT
from fairgate.engine.columns import PRED as PRED
from fairgate.engine.columns import ROWS as ROWS
from fairgate.engine.columns import SCORE as SCORE
from fairgate.engine.columns import SCORE_SUM as SCORE_SUM
from fairgate.engine.columns import TRUE as TRUE
from fairgate.engine.columns import WEIGHT as WEIGHT
from fairgate.engine.columns import WEIGHT_SQ as WEIGHT_SQ
from fairgate.engine.packing import packed_codes, packed_keys
from fairgate.errors import BAD_SCORE, EMPTY_DATA, MISSING_COLUMN, NOT_BINARY, TOO_MANY_VALUES, DataError
from fairgate.policy.core import Policy

NO_SCORE_BIN = 0  # without scores every row sits in bin 0 and calibration is undefined
# Scores on a bin edge must land in the bin that starts there: 1 - 0.8 is 0.19999999999999996 in floating
# point, so a plain floor(score * bins) puts COMPAS decile 8 (favourable score 0.2) into 0.1-0.2, leaves
# 0.2-0.3 empty and merges deciles 9 and 10. The tolerance is far above the rounding error of score * bins and
# far below any real score's distance from an edge.
BIN_EDGE_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Cube:
    """Counts per cell of (attributes x y_true x y_pred x score bin), plus what is needed to audit them.

    ``cells`` is a Polars frame with the attribute columns (strings), ``__y_true``, ``__y_pred`` (favourable
    outcome indicators, 0/1), ``__score_bin``, ``__rows``, ``__weight``, ``__weight_sq`` (sum of squared
    weights) and ``__score_sum`` (weighted sum of favourable-outcome scores). ``scores`` holds the rows
    sorted by score (attribute codes into ``levels``, score, y_true, weight) when exact AUC is wanted.
    """

    cells: pl.DataFrame
    attributes: tuple[str, ...]
    calibration_bins: int
    has_scores: bool
    scores: pl.DataFrame | None = None
    # People left out before counting (missing attribute values under ``missing: exclude``), per attribute.
    excluded_missing: dict[str, int] = field(default_factory=dict)
    # The attribute whose membership is probabilistic (a person spread over its groups), if any.
    membership: str | None = None
    # The fine score histogram for AUC at scale (engine/auc_histogram.py): attributes, ``__y_true`` and
    # ``__score_hbin`` (one of ``histogram_bins`` equal bins of the favourable score on [0, 1]) with the weight.
    score_histogram: pl.DataFrame | None = None
    histogram_bins: int = 0

    @property
    def n_rows(self) -> int:
        """The number of input rows counted in the cube."""
        return int(self.cells[ROWS].sum())

    @property
    def weighted(self) -> bool:
        """Whether the rows carry weights: some cell's weight sum differs from its row count."""
        return not np.allclose(self.cells[ROWS].to_numpy(), self.cells[WEIGHT].to_numpy())

    def squares_column(self, slicing: tuple[str, ...] | list[str]) -> str:
        """The column of squared-weight sums for a slicing.

        Per row when the slicing separates a person's rows (it holds the probabilistic attribute), per person
        otherwise.
        """
        return WEIGHT_SQ if self.membership is None or self.membership in slicing else PERSON_SQ

    def effective_sizes(self, keys: list[str]) -> np.ndarray:
        """Kish's effective size, (sum w)^2 / sum w^2, of each group of ``keys`` (the row count unweighted).

        The groups are found from the cells' packed attribute codes, as a slicing finds them (a Polars group-by
        per call cost more than the planning's other work together).
        """
        squares = self.squares_column(keys)
        packed = packed_codes(self.cell_codes, keys, self.cells.height)
        if packed is None:  # too many value combinations to pack: grouped by the keys themselves
            frame = self.cells.group_by(keys).agg(pl.col(WEIGHT).sum(), pl.col(squares).sum().alias(WEIGHT_SQ))
            weight, square = frame[WEIGHT].to_numpy(), frame[WEIGHT_SQ].to_numpy()
        else:
            _, group = np.unique(packed, return_inverse=True)
            weight = np.bincount(group.reshape(-1), weights=self.cells[WEIGHT].to_numpy())
            square = np.bincount(group.reshape(-1), weights=self.cells[squares].to_numpy())
        kish: np.ndarray = np.divide(weight**2, square, out=np.zeros_like(weight), where=square > 0)
        return kish

    def levels(self, attribute: str) -> list[str]:
        """The attribute's values present in the data, sorted; score-table codes index into this list."""
        return _levels(self.cells, attribute)

    @cached_property
    def cell_codes(self) -> dict[str, tuple[list[str], np.ndarray]]:
        """Per attribute: its :meth:`levels` and each cell's index into them (computed once per cube)."""
        coded = {}
        for attribute in self.attributes:
            levels = self.levels(attribute)
            codes = self.cells[attribute].cast(pl.Enum(levels)).to_physical().to_numpy().astype(np.int64)
            coded[attribute] = (levels, codes)
        return coded

    @property
    def auc_method(self) -> str | None:
        """How AUC is computed: ``exact`` from the score table, ``histogram`` from the score histogram, or None."""
        if self.scores is not None:
            return "exact"
        return "histogram" if self.score_histogram is not None else None

    @cached_property
    def score_arrays(self) -> ScoreArrays:
        """The score table sorted by score once, shared by every slicing's AUC.

        Without a score table, the score histogram stands in for it: one row per (attributes, label, bin) at
        the bin's index as its score, so equal bins are ties (engine/auc_histogram.py bounds the error).
        """
        levels = {a: self.levels(a) for a in self.attributes}
        if self.scores is not None:
            return ScoreArrays.from_table(self.scores, levels)
        if self.score_histogram is not None:
            return ScoreArrays.from_table(histogram_score_table(self.score_histogram, levels), levels)
        raise DataError("this cube was built without a score table (exact_auc=False) or score histogram")

    def _recoded_scores(self, levels: dict[str, list[str]]) -> pl.DataFrame:
        """The score table with attribute codes re-pointed at another (larger) list of levels."""
        return _recoded_scores_impl(self, levels)

    def __add__(self, other: Cube) -> Cube:
        """The cube of the union of two disjoint row sets."""
        if (self.attributes, self.calibration_bins, self.has_scores, self.histogram_bins) != (
            other.attributes,
            other.calibration_bins,
            other.has_scores,
            other.histogram_bins,
        ):
            raise DataError(
                "cubes with different attributes, score bins, score presence or histogram bins cannot be added"
            )
        keys = [*self.attributes, TRUE, PRED, BIN]
        cells = _sum_by(pl.concat([self.cells, other.cells]), keys, [ROWS, WEIGHT, WEIGHT_SQ, PERSON_SQ, SCORE_SUM])
        scores = None
        if self.scores is not None and other.scores is not None:
            union = {a: _levels(cells, a) for a in self.attributes}
            tables = [self._recoded_scores(union), other._recoded_scores(union)]
            if any(WEIGHT_SQ in t.columns for t in tables):  # a collapsed table sums squared weights: both do
                tables = [score_squares(t) for t in tables]
            scores = pl.concat(tables).sort(SCORE)
        histogram = None
        if self.score_histogram is not None and other.score_histogram is not None:
            both = pl.concat([self.score_histogram, other.score_histogram])
            histogram = _histogram_sum(both, [*self.attributes, TRUE, HBIN])
        excluded = {
            a: self.excluded_missing.get(a, 0) + other.excluded_missing.get(a, 0)
            for a in set(self.excluded_missing) | set(other.excluded_missing)
        }
        return Cube(
            cells,
            self.attributes,
            self.calibration_bins,
            self.has_scores,
            scores,
            excluded,
            self.membership,
            histogram,
            self.histogram_bins if histogram is not None else 0,
        )


def histogram_score_table(histogram: pl.DataFrame, levels: dict[str, list[str]]) -> pl.DataFrame:
    """The score histogram as a score table (attribute codes, bin index as score, label, weight), by score."""
    return histogram.select(
        *[pl.col(a).cast(pl.Enum(m)).to_physical().cast(pl.Int16).alias(a) for a, m in levels.items()],
        pl.col(HBIN).cast(pl.Float64).alias(SCORE),
        pl.col(TRUE),
        pl.col(WEIGHT),
    ).sort(SCORE)


def score_squares(table: pl.DataFrame) -> pl.DataFrame:
    """A score table with its squared-weight sums (``WEIGHT_SQ``).

    As kept when its rows were collapsed, else each row's weight squared.
    """
    return table if WEIGHT_SQ in table.columns else table.with_columns((pl.col(WEIGHT) ** 2).alias(WEIGHT_SQ))


def _recoded_scores_impl(cube: Cube, levels: dict[str, list[str]]) -> pl.DataFrame:
    assert cube.scores is not None
    recode = {a: [levels[a].index(v) for v in cube.levels(a)] for a in cube.attributes}
    return cube.scores.with_columns(
        pl.col(a).replace_strict(list(range(len(m))), m, return_dtype=pl.Int16) for a, m in recode.items()
    )


def _sum_by(frame: pl.DataFrame, keys: list[str], values: list[str]) -> pl.DataFrame:
    return frame.group_by(keys).agg(pl.col(v).sum() for v in values).sort(keys)


def as_lazy(data: Any) -> pl.LazyFrame:
    """Accept a Polars frame or lazy frame (e.g. ``pl.scan_parquet``), a pandas frame or a pyarrow Table."""
    if isinstance(data, pl.LazyFrame):
        return data
    if isinstance(data, pl.DataFrame):
        return data.lazy()
    module = type(data).__module__
    if module.startswith("pandas"):
        return pl.from_pandas(data).lazy()
    if module.startswith("pyarrow"):
        frame = pl.from_arrow(data)
        assert isinstance(frame, pl.DataFrame)
        return frame.lazy()
    raise DataError(
        f"cannot audit a {type(data).__name__}; pass a Polars (lazy) frame, a pandas DataFrame or a pyarrow Table"
    )


_RAW_TRUE, _RAW_PRED, _BAD_SCORES, _BAD_SCORE_EXAMPLE, _BAD_WEIGHTS = (
    "__raw_y_true",
    "__raw_y_pred",
    "__bad_scores",
    "__bad_score_example",
    "__bad_weights",
)


def build_cube(data: Any, policy: Policy, *, source: str = "the audited data", exact_auc: bool | None = None) -> Cube:
    """Count the rows into a cube keyed by every sensitive attribute of the policy, in one scan.

    The scan groups by the *raw* label and prediction values and counts bad scores and weights per cell,
    so every check (binary labels, scores in [0, 1], declared attribute values, missing values) runs on the
    small grouped result instead of on the rows. Labels are then recoded to the favourable outcome
    (``policy.favorable_label``): a COMPAS-style risk flag with favourable label 0 counts "not flagged" as
    selection, and the score is flipped to match. ``exact_auc`` (default: the policy's
    ``statistics.exact_auc``) adds the score table (see ``add_score_table``).
    """
    if exact_auc is None:
        exact_auc = policy.statistics.exact_auc
    data = as_lazy(data)  # once: converting an Arrow table or pandas frame copies it
    rows, has_scores, bins = _rows(data, policy, source)
    keys = [*policy.attribute_names, _RAW_TRUE, _RAW_PRED, BIN]
    weighted = bool(policy.columns.weight) or PERSON_WEIGHT in data.collect_schema().names()
    raw_cells = rows.group_by(keys).agg(_cell_sums(weighted)).collect()
    raw_cells = raw_cells if weighted else unit_weight_sums(raw_cells)
    cube = cube_from_raw_cells(raw_cells, policy, source=source, has_scores=has_scores, bins=bins)
    return add_score_table(cube, data, policy, source=source) if exact_auc and has_scores else cube


def _cell_sums(weighted: bool) -> list[pl.Expr]:
    """The raw cell's sums: rows, score sums, bad scores (with an example), and with weights their sums.

    Without weights (every weight 1) the weight sums are not computed: they follow from the rows
    (:func:`unit_weight_sums`). The example (an order-dependent ``first``) also keeps the group-by on the path
    whose float sums do not depend on the run, so unit weights give bit for bit the counts of no weights.
    """
    weight = pl.col(WEIGHT)
    sums = [
        pl.len().cast(pl.Int64).alias(ROWS),
        (pl.col(SCORE) * weight).sum().alias(SCORE_SUM),
        pl.col(_BAD_SCORES).sum(),
        pl.col(_BAD_SCORE_EXAMPLE).filter(pl.col(_BAD_SCORES)).first(),
    ]
    if weighted:
        sums += [
            weight.sum(),
            (weight * weight).sum().alias(WEIGHT_SQ),
            (weight * pl.col(PERSON_WEIGHT)).sum().alias(PERSON_SQ),
            (weight.is_null() | ~weight.is_finite() | (weight < 0)).sum().alias(_BAD_WEIGHTS),
        ]
    return sums


def unit_weight_sums(raw_cells: pl.DataFrame) -> pl.DataFrame:
    """Raw cells summed without weights, with the weight sums every weight 1 gives (each the cell's rows)."""
    weight = pl.col(ROWS).cast(pl.Float64)
    return raw_cells.with_columns(
        weight.alias(WEIGHT),
        weight.alias(WEIGHT_SQ),
        weight.alias(PERSON_SQ),
        pl.lit(0, dtype=pl.UInt32).alias(_BAD_WEIGHTS),
    )


def cube_from_raw_cells(raw_cells: pl.DataFrame, policy: Policy, *, source: str, has_scores: bool, bins: int) -> Cube:
    """The cube from its raw cells: rows grouped by attributes, *raw* label and prediction and score bin.

    Shared by :func:`build_cube` (Polars over rows in memory) and the DuckDB cube of a relation
    (tasks/inputs/cube_sql.py), so both check the data and recode labels alike. ``raw_cells`` has the attribute
    columns, ``__raw_y_true``, ``__raw_y_pred``, ``__score_bin``, the sums (``__rows`` ... ``__score_sum``)
    and the per-cell counts of bad scores (with an example) and bad weights.
    """
    if raw_cells.height == 0:
        raise DataError(EMPTY_DATA.format(source=source))
    check_cardinality(raw_cells, policy, source)
    _check_cells(raw_cells, policy, source, has_scores)
    raw_cells, excluded = apply_missing_attribute_rules(raw_cells, policy, source)
    _check_weights(raw_cells, policy, source)
    attributes = tuple(policy.attribute_names)
    cells = (
        raw_cells.lazy()
        .with_columns(
            (_as_binary(_RAW_TRUE) == policy.favorable_label).cast(pl.Int8).alias(TRUE),
            (_as_binary(_RAW_PRED) == policy.favorable_label).cast(pl.Int8).alias(PRED),
        )
        .group_by([*attributes, TRUE, PRED, BIN])
        .agg(pl.col(ROWS, WEIGHT, WEIGHT_SQ, PERSON_SQ, SCORE_SUM).sum())
        .sort([*attributes, TRUE, PRED, BIN])
        .collect()
    )
    proxy = policy.proxy
    membership = proxy.attribute_name if proxy is not None and proxy.mode == "probabilistic" else None
    return Cube(cells, attributes, bins, has_scores, None, excluded, membership)


def add_score_table(cube: Cube, data: Any, policy: Policy, *, source: str = "the audited data") -> Cube:
    """The cube with its score table, for exact AUC.

    A second pass over the same rows, which are sorted by score with attributes as integer codes into the
    cube's sorted levels (missing values as in the cube).
    """
    rows, has_scores, _ = _rows(data, policy, source)
    if not has_scores:
        return cube
    excluded = cube.excluded_missing
    kept = pl.all_horizontal(pl.col(a).is_not_null() for a in excluded) if excluded else pl.lit(True)
    scores = (
        rows.filter(kept)
        .select(
            *[_coded(policy, a, cube.levels(a)) for a in cube.attributes],
            SCORE,
            (_as_binary(_RAW_TRUE) == policy.favorable_label).cast(pl.Int8).alias(TRUE),
            WEIGHT,
        )
        .sort(SCORE)
        .collect()
    )
    score = scores[SCORE].to_numpy()
    if score.size > 1 and np.count_nonzero(score[1:] == score[:-1]) > score.size // 2:
        # Rounded or discrete scores: rows alike in every column but the weight collapse into one (exact AUC
        # needs only the weight per attribute codes, score and label), which shortens every later pass.
        # The squared weights are summed too (the explorer's Kish sizes): a row's own is its weight squared.
        keys = [*cube.attributes, SCORE, TRUE]
        squares = (pl.col(WEIGHT) ** 2).sum().alias(WEIGHT_SQ)
        scores = scores.group_by(keys).agg(pl.col(WEIGHT).sum(), squares).sort(SCORE)
    return replace(cube, scores=scores)


def add_score_histogram(cube: Cube, data: Any, policy: Policy, bins: int, *, source: str = "the audited data") -> Cube:
    """The cube with a fine score histogram of ``bins`` equal bins for AUC (a second pass over the rows).

    The Polars twin of the histogram tasks/inputs/cube_sql.py builds in DuckDB: the same bin rule and missing values.
    """
    rows, has_scores, _ = _rows(data, policy, source)
    if not has_scores:
        return cube
    binned = rows.select(
        *cube.attributes,
        _RAW_TRUE,
        (pl.col(SCORE) * bins + BIN_EDGE_TOLERANCE).floor().clip(0, bins - 1).cast(pl.Int32).alias(HBIN),
        WEIGHT,
    )
    raw = binned.group_by([*cube.attributes, _RAW_TRUE, HBIN]).agg(pl.col(WEIGHT).sum()).collect()
    return replace(cube, score_histogram=histogram_from_raw(raw, policy), histogram_bins=bins)


def histogram_from_raw(raw: pl.DataFrame, policy: Policy) -> pl.DataFrame:
    """The score histogram from one grouped by raw label: missing values as in the cells, label recoded."""
    attributes = policy.attribute_names
    for attribute in policy.sensitive_attributes:
        column = pl.col(attribute.name).cast(pl.String)
        if attribute.missing == "unknown":
            raw = raw.with_columns(column.fill_null(attribute.unknown_label))
        else:
            raw = raw.with_columns(column).filter(pl.col(attribute.name).is_not_null())
    recoded = raw.with_columns((_as_binary(_RAW_TRUE) == policy.favorable_label).cast(pl.Int8).alias(TRUE))
    return _histogram_sum(recoded, [*attributes, TRUE, HBIN])


def _histogram_sum(frame: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """Weights summed per histogram cell, in no particular order.

    The keys (attribute values, label, bin) are packed into one integer per row and the weights summed with
    numpy (one sort of integers and a bincount): a Polars group_by over the four text keys of two partition
    histograms (2.6 million rows) was the costliest step of summing a Dask audit's cubes, in time and memory.
    Null keys, or keys too many to pack into 63 bits, take Polars' group_by. Sorting millions of cells by their
    text keys took longer than building them, and AUC sorts the histogram by bin anyway
    (``histogram_score_table``).
    """
    packed = packed_keys(frame, keys)
    if packed is None:
        return frame.group_by(keys).agg(pl.col(WEIGHT).sum())
    codes, digits_of = packed
    cells, row_cell = np.unique(codes, return_inverse=True)
    weights = np.bincount(row_cell, weights=frame[WEIGHT].to_numpy(), minlength=cells.size)
    columns: dict[str, pl.Series] = {}
    for key, digits in reversed(list(zip(keys, digits_of, strict=True))):
        cells, digit = np.divmod(cells, digits.radix)
        columns[key] = digits.decode(key, digit)
    return pl.DataFrame([columns[key] for key in keys]).with_columns(pl.Series(WEIGHT, weights, dtype=pl.Float64))


def _rows(data: Any, policy: Policy, source: str) -> tuple[pl.LazyFrame, bool, int]:
    """The rows as the cube sees them (lazy): attributes, raw label and prediction, score bin, weight, score."""
    lazy = as_lazy(data)
    columns = policy.columns
    attributes = tuple(policy.attribute_names)
    present = lazy.collect_schema().names()
    has_scores = columns.score in present
    _require_columns(present, [columns.y_true, *attributes, *([columns.weight] if columns.weight else [])], source)
    if columns.y_pred not in present and not has_scores:
        raise DataError(
            MISSING_COLUMN.format(
                column=columns.y_pred,
                source=source,
                present=present,
                fix=f"give predictions in {columns.y_pred!r}, or scores in {columns.score!r} to threshold",
            )
        )
    bins = policy.statistics.calibration_bins if has_scores else 1
    raw_score = pl.col(columns.score).cast(pl.Float64, strict=False) if has_scores else pl.lit(0.0)
    bad_score = raw_score.is_null() | raw_score.is_nan() | (raw_score < 0) | (raw_score > 1)
    # The score of the favourable outcome: P(y = 1) flips to P(y = 0) when 0 is favourable.
    flipped = (1.0 - raw_score) if policy.favorable_label == 0 else raw_score
    score = pl.when(bad_score).then(0.0).otherwise(flipped)
    y_pred = (
        pl.col(columns.y_pred) if columns.y_pred in present else (raw_score >= columns.decision_threshold).cast(pl.Int8)
    )
    weight = pl.col(columns.weight).cast(pl.Float64, strict=False) if columns.weight else pl.lit(1.0)
    rows = lazy.select(
        *[_attribute_expression(policy, a, lazy) for a in attributes],
        pl.col(columns.y_true).alias(_RAW_TRUE),
        y_pred.alias(_RAW_PRED),
        (score * bins + BIN_EDGE_TOLERANCE).floor().clip(0, bins - 1).cast(pl.Int16).alias(BIN),
        weight.alias(WEIGHT),
        (pl.col(PERSON_WEIGHT).cast(pl.Float64) if PERSON_WEIGHT in present else weight).alias(PERSON_WEIGHT),
        score.alias(SCORE),
        bad_score.alias(_BAD_SCORES),
        raw_score.alias(_BAD_SCORE_EXAMPLE),
    )
    return rows, has_scores, bins


def _attribute_expression(policy: Policy, name: str, lazy: pl.LazyFrame) -> pl.Expr:
    """The attribute as grouped: strings and categoricals as they are, anything else as its string form."""
    dtype = lazy.collect_schema()[name]
    column = pl.col(name)
    if dtype == pl.String or dtype == pl.Categorical or isinstance(dtype, pl.Enum):
        return column
    return column.cast(pl.String)


def _coded(policy: Policy, name: str, levels: list[str]) -> pl.Expr:
    attribute = policy.attribute(name)
    column = pl.col(name)
    if attribute.missing == "unknown":
        column = column.cast(pl.String).fill_null(attribute.unknown_label)
    # Strings and categoricals cast straight to the Enum of the cube's levels (no string round trip).
    return column.cast(pl.Enum(levels)).to_physical().cast(pl.Int16).alias(name)


def _as_binary(column: str) -> pl.Expr:
    return pl.col(column).cast(pl.Float64, strict=False).cast(pl.Int8)


def check_cardinality(data: Any, policy: Policy, source: str) -> None:
    """Refuse an attribute without declared values that holds more distinct values than the policy allows.

    ``data`` is any frame :func:`as_lazy` accepts (the rows, or the cube's first grouped result); attributes
    it lacks are skipped. Run before any slicing: an id-like column audited as an attribute would otherwise
    become thousands of groups (hours of work and a report nobody can read).

    Raises
    ------
    DataError
        Naming the attribute, its count of distinct values and ``limits.max_values_per_attribute``.
    """
    frame = data if isinstance(data, pl.DataFrame) else as_lazy(data)  # a frame's few cells: counted eagerly
    present = set(frame.collect_schema().names())
    undeclared = [a.name for a in policy.sensitive_attributes if a.values is None and a.name in present]
    if not undeclared:
        return
    counted = frame.select(pl.col(name).drop_nulls().n_unique() for name in undeclared)
    counts = (counted if isinstance(counted, pl.DataFrame) else counted.collect()).row(0)
    limit = policy.limits.max_values_per_attribute
    for name, count in zip(undeclared, counts, strict=True):
        if count > limit:
            raise DataError(TOO_MANY_VALUES.format(attribute=name, count=count, source=source, limit=limit))


def _check_cells(cells: pl.DataFrame, policy: Policy, source: str, has_scores: bool) -> None:
    """Refuse non-binary labels or predictions and bad scores, naming an example and a count."""
    columns = policy.columns
    for raw, name in ((_RAW_TRUE, columns.y_true), (_RAW_PRED, columns.y_pred if columns.y_pred else "")):
        values = cells[raw]
        if values.dtype == pl.Boolean:
            continue
        numeric = values.cast(pl.Float64, strict=False)
        bad = numeric.is_null() | ~numeric.is_in([0.0, 1.0]).fill_null(False)
        if bad.any():
            example = values.filter(bad)[0]
            count = int(cells[ROWS].filter(bad).sum())
            shown = name if raw == _RAW_TRUE or name in cells.columns else f"{name} (derived from scores)"
            raise DataError(
                NOT_BINARY.format(column=shown, source=source, example=example, count=count, fix="recode it to 0 and 1")
            )
    if has_scores and int(cells[_BAD_SCORES].sum()):
        bad_cells = cells.filter(pl.col(_BAD_SCORES) > 0)
        raise DataError(
            BAD_SCORE.format(
                column=columns.score,
                source=source,
                example=bad_cells[_BAD_SCORE_EXAMPLE][0],
                count=int(bad_cells[_BAD_SCORES].sum()),
            )
        )


def _check_weights(cells: pl.DataFrame, policy: Policy, source: str) -> None:
    """Refuse bad weights among the rows the audit keeps (a row left out for a missing attribute needs none)."""
    weight = policy.columns.weight
    if weight and int(cells[_BAD_WEIGHTS].sum()):
        raise DataError(
            f"column {weight!r} in {source} must hold finite, non-negative weights; "
            f"{int(cells[_BAD_WEIGHTS].sum())} row(s) do not"
        )


def apply_missing_attribute_rules(
    cells: pl.DataFrame, policy: Policy, source: str
) -> tuple[pl.DataFrame, dict[str, int]]:
    """Missing attribute values excluded (and counted) or kept as the unknown group; undeclared values refused."""
    excluded: dict[str, int] = {}
    for attribute in policy.sensitive_attributes:
        name = attribute.name
        cells = cells.with_columns(pl.col(name).cast(pl.String))
        missing = cells.filter(pl.col(name).is_null())
        if missing.height and attribute.missing == "unknown":
            cells = cells.with_columns(pl.col(name).fill_null(attribute.unknown_label))
        elif missing.height:
            excluded[name] = int(missing[ROWS].sum())
            cells = cells.filter(pl.col(name).is_not_null())
        allowed = attribute.declared_values
        if allowed is not None:
            stray = cells.filter(~pl.col(name).is_in(allowed))
            if stray.height:
                values = sorted(stray[name].unique().to_list())
                count = int(stray.filter(pl.col(name) == values[0])[ROWS].sum())
                raise DataError(
                    f"attribute {name!r} in {source} has value {values[0]!r} in {count} row(s) "
                    f"(undeclared values: {values[:5]}), which the policy does not declare "
                    f"(values: {allowed}); add them to the attribute's values in the policy, or recode the data"
                )
    if cells.height == 0:
        raise DataError(
            f"no rows of {source} are left after excluding missing attribute values ({excluded}); "
            "set missing: unknown on those attributes to audit them as their own group"
        )
    return cells, excluded


def _levels(cells: pl.DataFrame, attribute: str) -> list[str]:
    return sorted(cells[attribute].unique().to_list())


def _require_columns(present: list[str], names: list[str], source: str) -> None:
    for name in names:
        if name not in present:
            raise DataError(
                MISSING_COLUMN.format(
                    column=name,
                    source=source,
                    present=present,
                    fix="rename the column in the data or set its name in the policy",
                )
            )
