"""The regression demo's inputs: a first-year-grade model fitted on half of the law-school data, audited on the other.

``fairgate demo --task regression`` audits a model that predicts a law student's standardised first-year average
(ZFYA) from the two admission numbers, LSAT and undergraduate GPA: ordinary least squares, fitted on a seeded
random half of the bundled file (``fairgate/data/law``, see its PROVENANCE.md) and applied to the other half,
which is what the audit sees. Fitting here, at demo time with numpy, keeps the demo honest and reproducible
(the same seed gives the same split and coefficients); race and sex are not model inputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import polars as pl

from tasks.inputs.sql import render_sql

#: The split's seed: the audited half is the same on every run.
SPLIT_SEED = 20170315
FEATURES = ("lsat", "ugpa")


@dataclass(frozen=True)
class LawModel:
    """The fitted model: intercept and coefficients of LSAT and UGPA, and the rows it was fitted on."""

    intercept: float
    coefficients: dict[str, float]
    n_train: int
    n_audit: int


def law_rows(law_csv: Path) -> pl.DataFrame:
    """The law-school rows (id, race, sex, lsat, ugpa, zfya) through ``sql/demo_law_rows.sql``."""
    con = duckdb.connect()
    try:
        con.read_csv(str(law_csv), header=True, sep=",").create_view("law_raw")
        rows: pl.DataFrame = con.sql(render_sql("demo_law_rows")).pl()
        return rows
    finally:
        con.close()


def fit_and_predict(rows: pl.DataFrame, seed: int = SPLIT_SEED) -> tuple[pl.DataFrame, LawModel]:
    """Fit OLS on a seeded half of the rows; return the other half with ``y_pred`` and the model."""
    rng = np.random.default_rng(seed)
    train = np.zeros(rows.height, dtype=bool)
    train[rng.permutation(rows.height)[: rows.height // 2]] = True
    design = np.column_stack([np.ones(rows.height), *[rows[f].to_numpy() for f in FEATURES]])
    beta, *_ = np.linalg.lstsq(design[train], rows["zfya"].to_numpy()[train], rcond=None)
    audited = rows.filter(pl.Series(~train)).with_columns(y_pred=pl.Series(design[~train] @ beta))
    model = LawModel(
        float(beta[0]), dict(zip(FEATURES, map(float, beta[1:]), strict=True)), int(train.sum()), audited.height
    )
    return audited, model


def write_law_inputs(law_csv: Path, workdir: Path) -> dict[str, Path]:
    """Write the held-out half as predictions, labels and attributes Parquet files (sql/demo_law_*.sql)."""
    audited, _ = fit_and_predict(law_rows(law_csv))
    con = duckdb.connect()
    try:
        con.register("law_audit", audited.to_arrow())
        files = {}
        for role in ("predictions", "labels", "attributes"):
            path = workdir / f"law_{role}.parquet"
            con.sql(render_sql(f"demo_law_{role}")).to_parquet(str(path))
            files[role] = path
    finally:
        con.close()
    return files
