"""The ranking cube: per (attributes x list bucket) cell, the sums every exposure and top-k metric needs.

A row is one item of one ranked list: its list, its rank (1 = top), its relevance (>= 0) and its group. Per cell
the cube holds the row count, the sums of weights and squared weights (Kish's effective size), the weighted
count of rows at rank <= k for each k of ``ranking.top_k``, and the weighted sums of the position discount
(exposure) and of relevance. Every group metric (share of the top k, mean exposure, exposure per unit of
relevance) is a ratio of these sums, so a slicing is a marginal (a ``group_by().sum()``) and cubes of disjoint
sets of lists add.

The bucket is a hash of the list id: all rows of one list fall into one bucket, so the buckets are clusters of
whole lists, the unit a ranking audit resamples (see ``bootstrap``). A second small table counts weight and
exposure per (attributes x position) for positions 1..``curve_positions`` (later positions pooled in one more),
from which the report draws exposure curves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from fairgate.engine.cube import as_lazy
from fairgate.engine.ranking.columns import BUCKET, EXPOSURE, LISTS, POSITION, RELEVANCE, ROWS, WEIGHT, WEIGHT_SQ, top
from fairgate.engine.ranking.discount import discount_expr
from fairgate.errors import EMPTY_DATA, MISSING_COLUMN, DataError
from fairgate.policy.ranking import RankingOptions

BAD_RANK = (
    "column {column!r} in {source} must hold whole-number ranks >= 1 (1 = top of the list); found {count} row(s) "
    "that are missing, not whole numbers or below 1. Number each list's items 1, 2, 3, ... from the top"
)
BAD_RELEVANCE = (
    "column {column!r} (relevance) in {source} must hold finite numbers >= 0; found {count} row(s) that are "
    "missing, NaN, infinite or negative. Fix or drop those rows, or shift the relevance scale to start at 0"
)
BAD_WEIGHT = "column {column!r} (weight) in {source} must hold finite weights >= 0; found {count} bad row(s). Fix them"
MISSING_ATTRIBUTE = (
    "attribute {attribute!r} in {source} is missing in {count} row(s); recode missing values as their own group "
    "or exclude those rows before cubing"
)
MISSING_LIST = "column {column!r} (list id) in {source} is missing in {count} row(s); give every row its list"


@dataclass(frozen=True)
class RankingCube:
    """Sums per (attributes x bucket) cell and weight/exposure per (attributes x position).

    ``cells`` holds the attribute columns (strings), ``__bucket``, ``__rows``, ``__weight``, ``__weight_sq``,
    ``__top_<k>`` for each k, ``__exposure`` and ``__relevance``; ``positions`` the attribute columns,
    ``__position``, ``__weight`` and ``__exposure``; ``lists`` the number of lists per bucket (counted by their
    rank-1 items: the pipeline validates that every list has exactly one).
    """

    cells: pl.DataFrame
    positions: pl.DataFrame
    lists: pl.DataFrame
    attributes: tuple[str, ...]
    options: RankingOptions
    weighted: bool

    @property
    def n_rows(self) -> int:
        """The number of rows (ranked items) counted in the cube."""
        return int(self.cells[ROWS].sum())

    @property
    def n_lists(self) -> int:
        """The number of ranked lists."""
        return int(self.lists[LISTS].sum())

    @property
    def sums(self) -> tuple[str, ...]:
        """The summed value columns of ``cells``, in order."""
        return (WEIGHT, *[top(k) for k in self.options.top_k], EXPOSURE, RELEVANCE)

    def __add__(self, other: RankingCube) -> RankingCube:
        """The cube of the union of two disjoint sets of lists (same attributes and options)."""
        if (self.attributes, self.options) != (other.attributes, other.options):
            raise DataError("ranking cubes with different attributes or ranking options cannot be added")
        keys = list(self.attributes)
        return RankingCube(
            _sum_by(self.cells, other.cells, [*keys, BUCKET]),
            _sum_by(self.positions, other.positions, [*keys, POSITION]),
            _sum_by(self.lists, other.lists, [BUCKET]),
            self.attributes,
            self.options,
            self.weighted or other.weighted,
        )


def build_ranking_cube(
    data: Any,
    *,
    attributes: list[str] | tuple[str, ...],
    list_id: str,
    rank: str,
    relevance: str,
    weight: str | None = None,
    options: RankingOptions | None = None,
    source: str = "the audited data",
) -> RankingCube:
    """Cube the rows of ``data`` (a Polars frame or lazy frame, pandas frame or Arrow table).

    One scan checks the columns, a second groups the rows. Whether each list's ranks run 1..n without gaps or
    ties is the pipeline's validation (``tasks/validation/validate_ranking.py``); the sums here are defined either way.

    >>> frame = pl.DataFrame({"q": [1, 1, 1, 2, 2], "r": [1, 2, 3, 1, 2], "y": [2.0, 0, 1, 1, 0],
    ...                       "g": ["a", "b", "a", "b", "a"]})
    >>> cube = build_ranking_cube(frame, attributes=["g"], list_id="q", rank="r", relevance="y")
    >>> cube.n_rows, cube.n_lists
    (5, 2)

    Raises
    ------
    DataError
        A missing column, a rank that is not a whole number >= 1, a relevance that is not finite and >= 0, a bad
        weight, a missing attribute value or list id, or no rows.
    """
    options = options or RankingOptions()
    lazy = as_lazy(data)
    attributes = tuple(attributes)
    present = lazy.collect_schema().names()
    for column in [*attributes, list_id, rank, relevance, *([weight] if weight else [])]:
        if column not in present:
            raise DataError(
                MISSING_COLUMN.format(
                    column=column, source=source, present=present, fix="rename the column or name it in the policy"
                )
            )
    buckets = options.bootstrap_buckets
    schema = lazy.collect_schema()
    rows = lazy.select(
        # Categoricals stay categorical through the scans (cheaper to group); the cube's columns are strings.
        *[pl.col(a) if _is_categorical(schema[a]) else pl.col(a).cast(pl.String) for a in attributes],
        pl.col(list_id).alias("__list"),
        pl.col(rank).cast(pl.Float64, strict=False).alias("__rank"),
        pl.col(relevance).cast(pl.Float64, strict=False).alias("__y"),
        (pl.col(weight).cast(pl.Float64, strict=False) if weight else pl.lit(1.0)).alias(WEIGHT),
    )
    _check(rows, attributes, source, {"rank": rank, "relevance": relevance, "weight": weight, "list": list_id})
    rows = rows.with_columns(
        # The list's hash, not the row's: a list's rows stay together (lists are the bootstrap's units).
        (pl.col("__list").hash(seed=20180719) % buckets).cast(pl.Int32).alias(BUCKET),
        pl.col("__rank").cast(pl.Int64),
    )
    return _cube(rows, attributes, options, weighted=weight is not None)


def _is_categorical(dtype: pl.DataType) -> bool:
    return dtype == pl.Categorical or isinstance(dtype, pl.Enum)


def _check(rows: pl.LazyFrame, attributes: tuple[str, ...], source: str, names: dict[str, str | None]) -> None:
    """One scan: every rank a whole number >= 1, every relevance finite >= 0, weights good, no missing keys."""
    r, y, w = pl.col("__rank"), pl.col("__y"), pl.col(WEIGHT)
    found = (
        rows.select(
            pl.len().alias("rows"),
            (r.is_null() | ~r.is_finite() | (r < 1) | (r != r.floor())).sum().alias("rank"),
            (y.is_null() | ~y.is_finite() | (y < 0)).sum().alias("relevance"),
            (w.is_null() | ~w.is_finite() | (w < 0)).sum().alias("weight"),
            pl.col("__list").is_null().sum().alias("list"),
            *[pl.col(a).is_null().sum().alias(f"null_{a}") for a in attributes],
        )
        .collect()
        .row(0, named=True)
    )
    if found["rows"] == 0:
        raise DataError(EMPTY_DATA.format(source=source))
    for key, message in (("rank", BAD_RANK), ("relevance", BAD_RELEVANCE), ("weight", BAD_WEIGHT)):
        if found[key]:
            raise DataError(message.format(column=names[key], source=source, count=found[key]))
    if found["list"]:
        raise DataError(MISSING_LIST.format(column=names["list"], source=source, count=found["list"]))
    for attribute in attributes:
        if found[f"null_{attribute}"]:
            raise DataError(
                MISSING_ATTRIBUTE.format(attribute=attribute, source=source, count=found[f"null_{attribute}"])
            )


def _cube(rows: pl.LazyFrame, attributes: tuple[str, ...], options: RankingOptions, *, weighted: bool) -> RankingCube:
    keys = list(attributes)
    w, rank = pl.col(WEIGHT), pl.col("__rank")
    exposure = discount_expr(rank, options)
    cells = rows.group_by([*keys, BUCKET]).agg(
        pl.len().cast(pl.Int64).alias(ROWS),
        w.sum().alias(WEIGHT),
        (w * w).sum().alias(WEIGHT_SQ),
        *[(w * (rank <= k).cast(pl.Float64)).sum().alias(top(k)) for k in options.top_k],
        (w * exposure).sum().alias(EXPOSURE),
        (w * pl.col("__y")).sum().alias(RELEVANCE),
        # Each list has one item at rank 1 (validated): counting those counts the lists, without a distinct.
        (rank == 1).sum().cast(pl.Int64).alias(LISTS),
    )
    positions = (
        rows.with_columns(rank.clip(upper_bound=options.curve_positions + 1).cast(pl.Int32).alias(POSITION))
        .group_by([*keys, POSITION])
        .agg(w.sum().alias(WEIGHT), (w * exposure).sum().alias(EXPOSURE))
    )
    cells_frame, positions_frame = pl.collect_all([cells, positions])
    as_strings = [pl.col(a).cast(pl.String) for a in attributes]
    cells_frame, positions_frame = cells_frame.with_columns(as_strings), positions_frame.with_columns(as_strings)
    lists = cells_frame.group_by(BUCKET).agg(pl.col(LISTS).sum()).sort(BUCKET)
    # Weighted means some weight differs from 1 (as for every other kind): a column of ones is the plain audit.
    ones = cells_frame[WEIGHT].equals(cells_frame[ROWS].cast(pl.Float64)) and cells_frame[WEIGHT_SQ].equals(
        cells_frame[WEIGHT]
    )
    return RankingCube(
        cells_frame.drop(LISTS).sort([*keys, BUCKET]),
        positions_frame.sort([*keys, POSITION]),
        lists,
        attributes,
        options,
        weighted and not ones,
    )


def _sum_by(first: pl.DataFrame, second: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    values = [c for c in first.columns if c not in keys]
    return (
        pl.concat([first, second.select(first.columns)])
        .group_by(keys)
        .agg(pl.col(v).sum() for v in values)
        .sort(keys)
        .select(first.columns)
    )
