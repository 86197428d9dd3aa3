"""The regression cube's bincount counting equals the Polars group-by counting it replaced, exactly.

``_cube`` sums rows into integer slots with ``np.bincount``; the reference below is the former implementation
(one Polars ``group_by`` per table, bins from ``Grid.bin_of``). Keys, buckets, bins, row counts and bin
extremes must be identical, the float sums equal up to the order of additions (1e-12 relative), on the real
law-school data and on generated data with weights (zeros included), Enum, Categorical, integer and string
attributes, values on bin edges, and the sparse path that many attribute combinations take.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from fairgate.engine.regression import RegressionOptions, build_regression_cube
from fairgate.engine.regression import cube as cube_module
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
    VALUE_BIN,
    WEIGHT,
    WEIGHT_SQ,
)
from fairgate.engine.regression.cube import Grid, RegressionCube

LAW_CSV = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "law" / "law_data.csv"


def group_by_cube(
    frame: pl.DataFrame, attributes: list[str], grid: Grid, buckets: int, weight: str | None, row_id: str | None
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """The cube's three tables as the former implementation computed them (Polars group-bys on every row)."""
    key = pl.col(row_id) if row_id else pl.int_range(pl.len(), dtype=pl.UInt64)
    rows = frame.lazy().select(
        *[pl.col(a).cast(pl.String) for a in attributes],
        pl.col("prediction").cast(pl.Float64).alias("__p"),
        pl.col("label").cast(pl.Float64).alias("__y"),
        (pl.col(weight).cast(pl.Float64) if weight else pl.lit(1.0)).alias(WEIGHT),
        (key.hash(seed=20190217) % buckets).cast(pl.Int16).alias(BUCKET),
    )
    w, p, y = pl.col(WEIGHT), pl.col("__p") - grid.shift, pl.col("__y") - grid.shift
    residual = pl.col("__p") - pl.col("__y")
    cells = rows.group_by([*attributes, BUCKET]).agg(
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
        rows.with_columns(grid.bin_of(column).alias(VALUE_BIN), pl.when(w > 0).then(pl.col(column)).alias("__pos"))
        .group_by([*attributes, VALUE_BIN])
        .agg(
            pl.len().cast(pl.Int64).alias(ROWS),
            w.sum().alias(WEIGHT),
            pl.col("__pos").min().fill_null(float("inf")).alias(BIN_LOW),
            pl.col("__pos").max().fill_null(float("-inf")).alias(BIN_HIGH),
        )
        for column in ("__p", "__y")
    ]
    cells_, predictions, labels = pl.collect_all([cells, *histograms])
    return (
        cells_.sort([*attributes, BUCKET]),
        predictions.sort([*attributes, VALUE_BIN]),
        labels.sort([*attributes, VALUE_BIN]),
    )


def assert_same_counting(cube: RegressionCube, frame: pl.DataFrame, weight: str | None, row_id: str | None) -> None:
    expected = group_by_cube(frame, list(cube.attributes), cube.grid, cube.buckets, weight, row_id)
    for ours, theirs in zip((cube.cells, cube.predictions, cube.labels), expected, strict=True):
        assert ours.columns == theirs.columns
        assert ours.schema == theirs.schema
        exact = [c for c, t in theirs.schema.items() if t != pl.Float64] + [
            c for c in (BIN_LOW, BIN_HIGH) if c in theirs.columns
        ]
        assert ours.select(exact).equals(theirs.select(exact))
        if weight is None and VALUE_BIN in theirs.columns:  # unweighted bin weights are counts: exact too
            assert ours[WEIGHT].equals(theirs[WEIGHT])
        sums = [c for c, t in theirs.schema.items() if t == pl.Float64 and c not in exact]
        np.testing.assert_allclose(ours.select(sums).to_numpy(), theirs.select(sums).to_numpy(), rtol=1e-12, atol=1e-9)


def generated(rows: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pl.DataFrame(
        {
            "region": pl.Series(rng.choice(["north", "south", "east", "west"], rows)).cast(
                pl.Enum(["west", "unused", "south", "north", "east"])
            ),
            "band": pl.Series(rng.choice(["b", "a", "c"], rows)).cast(pl.Categorical),
            "code": rng.integers(1, 4, rows),
            "text": rng.choice(["zz", "Zz", "ä", "a b"], rows),
            # Rounded values put many rows exactly on bin edges of the [-4, 4] grid of 16 bins.
            "prediction": np.round(rng.normal(0.0, 1.5, rows), 1).clip(-4, 4),
            "label": rng.normal(0.2, 1.0, rows).clip(-4, 4),
            "weight": np.where(rng.random(rows) < 0.1, 0.0, rng.gamma(2.0, 1.0, rows)),
        }
    )
    return frame.with_columns(pl.int_range(pl.len()).alias("id"))


@pytest.mark.parametrize("weight", [None, "weight"])
@pytest.mark.parametrize("row_id", [None, "id"])
@pytest.mark.parametrize("attributes", [["region"], ["region", "band"], ["code", "text", "band"]])
@pytest.mark.parametrize("chunk", [997, 1 << 15])  # many chunks (a prime: uneven last chunk) or one
def test_generated_cube_equals_group_by_counting(
    monkeypatch: pytest.MonkeyPatch, weight: str | None, row_id: str | None, attributes: list[str], chunk: int
) -> None:
    monkeypatch.setattr(cube_module, "_CHUNK", chunk)
    frame = generated(20_000, seed=len(attributes))
    options = RegressionOptions(histogram_range=(-4.0, 4.0), histogram_bins=16, bootstrap_buckets=32)
    kwargs: dict[str, Any] = {"prediction": "prediction", "label": "label", "weight": weight, "row_id": row_id}
    cube = build_regression_cube(frame, attributes=attributes, options=options, **kwargs)
    assert_same_counting(cube, frame, weight, row_id)
    default_grid = build_regression_cube(frame, attributes=attributes, **kwargs)  # the data's own range, 2048 bins
    assert_same_counting(default_grid, frame, weight, row_id)


def test_law_school_cube_equals_group_by_counting() -> None:
    law = pl.read_csv(LAW_CSV).select(
        "race", pl.col("sex").cast(pl.String), pl.col("ZFYA").alias("label"), pl.col("UGPA").alias("prediction")
    )
    cube = build_regression_cube(law, attributes=["race", "sex"], prediction="prediction", label="label")
    assert cube.n_rows == 21_791
    assert_same_counting(cube, law, None, None)


@pytest.mark.parametrize("limit", [4, 200, 5_000])
def test_sparse_path_equals_dense_path(monkeypatch: pytest.MonkeyPatch, limit: int) -> None:
    monkeypatch.setattr(cube_module, "_CHUNK", 1009)
    # Past _DENSE possible slots the present ones are renumbered (by a bincount, or by np.unique past _DENSE
    # combinations) instead of counted into a dense array: 36 combinations x 100 buckets or x 2048 bins.
    frame = generated(5_000, seed=9)
    kwargs: dict[str, Any] = {"attributes": ["code", "text", "band"], "prediction": "prediction", "label": "label"}
    dense = build_regression_cube(frame, weight="weight", **kwargs)
    monkeypatch.setattr(cube_module, "_DENSE", limit)
    sparse = build_regression_cube(frame, weight="weight", **kwargs)
    for ours, theirs in ((sparse.cells, dense.cells), (sparse.predictions, dense.predictions)):
        assert ours.equals(theirs)
    assert_same_counting(sparse, frame, "weight", None)


def test_numpy_bins_equal_polars_bins_on_and_around_edges() -> None:
    grid = Grid(-3.7, 11.3, 2048)
    edges = grid.edges
    values = np.concatenate(
        [
            edges,
            np.nextafter(edges, -np.inf),
            np.nextafter(edges, np.inf),
            np.random.default_rng(1).uniform(-4, 12, 10_000),
        ]
    )
    values = values[(values >= grid.low) & (values <= grid.high)]
    theirs = pl.DataFrame({"v": values}).select(grid.bin_of("v"))["v"].to_numpy()
    assert np.array_equal(grid.bins_of(values), theirs)
    ours = grid.bins_of(values)
    assert ((edges[ours] <= values) & ((values < edges[ours + 1]) | (ours == grid.bins - 1))).all()
