"""The distances' sorting network (``distribution._pieces``) gives exactly what sorting the six points gave.

The reference is the former ``_pieces`` (``np.sort`` of the stacked points); the KS and Wasserstein bounds of
every group against the rest and the reference must be identical, bit for bit, on real cubes (law-school grades,
unweighted) and generated weighted ones with empty bins, zero weights and values on bin edges.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from fairgate.engine.regression import RegressionOptions, build_regression_cube, regression_slicing
from fairgate.engine.regression import distribution as distribution_module
from fairgate.engine.regression.cube import RegressionCube
from fairgate.engine.regression.distribution import Histogram, cdf_at_edges

LAW_CSV = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "law" / "law_data.csv"


def _span(histogram: Histogram, left: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    empty = histogram.weight <= 0
    return np.where(empty, left, histogram.low), np.where(empty, left, histogram.high)


def sorted_pieces(a: Histogram, b: Histogram) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Lower and upper bounds of |F_a - F_b| and the length of every piece ``(..., bins, 5)``; the edge gap."""
    ca, cb = cdf_at_edges(a.weight), cdf_at_edges(b.weight)
    left, right = a.edges[:-1], a.edges[1:]
    a_low, a_high = _span(a, left)
    b_low, b_high = _span(b, left)
    shape = np.broadcast_shapes(a_low.shape, b_low.shape)
    points = np.sort(
        np.stack([np.broadcast_to(x, shape) for x in (left, a_low, a_high, b_low, b_high, right)], axis=-1), axis=-1
    )
    start, end = points[..., :-1], points[..., 1:]
    middle = (start + end) / 2.0
    bounds = []
    for c, low, high in ((ca, a_low, a_high), (cb, b_low, b_high)):
        below, above = c[..., :-1, None], c[..., 1:, None]
        # Below the bin's smallest value F is the mass below the bin; from its largest value on, all of it.
        bounds.append(
            (
                np.where(middle >= high[..., None], above, below),
                np.where(middle < low[..., None], below, above),
            )
        )
    (a0, a1), (b0, b1) = bounds
    length = end - start
    valid = length > 0
    lower = np.where(valid, np.maximum(0.0, np.maximum(a0 - b1, b0 - a1)), np.nan)
    upper = np.where(valid, np.maximum(a1 - b0, b1 - a0), np.nan)
    edge_gap = np.abs(ca - cb).max(axis=-1)
    return lower, upper, length, edge_gap


@pytest.fixture(scope="module")
def cubes() -> dict[str, RegressionCube]:
    law = pl.read_csv(LAW_CSV).select(
        "race", pl.col("sex").cast(pl.String), pl.col("ZFYA").alias("label"), pl.col("UGPA").alias("prediction")
    )
    rng = np.random.default_rng(5)
    rows = 30_000
    generated = pl.DataFrame(
        {
            "g": rng.choice(["a", "b", "c", "d"], rows, p=[0.7, 0.2, 0.09, 0.01]),
            "h": rng.choice(["x", "y"], rows),
            "prediction": np.round(rng.normal(0.0, 1.0, rows), 1).clip(-4, 4),
            "label": rng.normal(0.0, 1.0, rows).clip(-4, 4),
            "weight": np.where(rng.random(rows) < 0.2, 0.0, rng.gamma(2.0, 1.0, rows)),
        }
    )
    kwargs: dict[str, Any] = {"prediction": "prediction", "label": "label"}
    return {
        "law": build_regression_cube(law, attributes=["race", "sex"], **kwargs),
        # 64 bins on [-4, 4]: predictions rounded to 0.1 fall on bin edges; a fifth of the weights are 0.
        "weighted": build_regression_cube(
            generated,
            attributes=["g", "h"],
            weight="weight",
            options=RegressionOptions(histogram_range=(-4.0, 4.0), histogram_bins=64),
            **kwargs,
        ),
        "fine": build_regression_cube(generated, attributes=["g", "h"], **kwargs),
    }


@pytest.mark.parametrize(
    ("name", "slicing"),
    [
        ("law", ("race",)),
        ("law", ("race", "sex")),
        ("weighted", ("g",)),
        ("weighted", ("g", "h")),
        ("fine", ("g", "h")),
    ],
)
def test_sorting_network_equals_sorting(
    monkeypatch: pytest.MonkeyPatch, cubes: dict[str, RegressionCube], name: str, slicing: tuple[str, ...]
) -> None:
    ours = regression_slicing(cubes[name], slicing, n_bootstrap=0).distribution
    monkeypatch.setattr(distribution_module, "_pieces", sorted_pieces)
    theirs = regression_slicing(cubes[name], slicing, n_bootstrap=0).distribution
    assert len(ours) == len(theirs) > 0
    assert ours == theirs  # every distance, bound and p-value identical
