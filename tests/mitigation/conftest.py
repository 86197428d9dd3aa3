"""Fixtures for the mitigation tests (helpers in mitigation_helpers.py); the real COMPAS file as training
data and as two models' inputs."""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl
import pytest
from mitigation_helpers import InProcessRunner, compas_training, split_compas


@pytest.fixture(scope="session")
def compas_train() -> pl.DataFrame:
    return compas_training()


DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
COMPAS_CSV = DATA / "compas" / "compas-scores-two-years.csv"


@pytest.fixture(scope="session")
def compas_rows() -> pl.DataFrame:
    """COMPAS as aligned rows: id, label, the decile score and the attributes (one row per person)."""
    raw = pl.read_csv(COMPAS_CSV)
    assert raw.height == 7214  # shared/data/README.md: guard against reading the wrong file
    return raw.select(
        pl.col("id"),
        pl.col("two_year_recid").cast(pl.Int64).alias("y_true"),
        pl.col("decile_score").alias("decile"),  # the first of the file's two decile_score columns
        pl.col("race"),
        pl.col("sex"),
        pl.col("age_cat"),
    )


# Each model's high-risk flag (1 = flagged, the unfavourable outcome) as SQL over the COMPAS file.
MODELS = {
    # Northpointe's own cut: score_text Medium or High (decile 5 and above).
    "baseline": "score_text in ('Medium', 'High')",
    # The same model with a higher cut (decile 7): flags fewer people, and the race gap in flags shrinks.
    "higher_cut": "decile_score >= 7",
    # A perturbed model: a lower cut for African-American defendants only, widening the race gap.
    "race_dependent_cut": "case when race = 'African-American' then decile_score >= 3 else decile_score >= 5 end",
}


@pytest.fixture(scope="session")
def compas_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """COMPAS split into training and held-out files (read only: tests that edit copy them)."""
    return split_compas(tmp_path_factory.mktemp("compas-split"))


@pytest.fixture(scope="session")
def runner() -> InProcessRunner:
    return InProcessRunner()


@pytest.fixture(scope="session")
def compare_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The COMPAS split into labels, attributes and one predictions file per model in ``MODELS``."""
    folder = tmp_path_factory.mktemp("compas-compare")
    candidates = MODELS
    con = duckdb.connect()
    con.read_csv(str(COMPAS_CSV), header=True).create_view("compas")
    queries = {
        "labels": "select id, two_year_recid from compas",
        "attributes": "select id, race, sex, age_cat from compas",
    }
    queries |= {stem: f"select id, cast({flag} as integer) as y_pred from compas" for stem, flag in candidates.items()}
    paths = {}
    for stem, query in queries.items():
        paths[stem] = folder / f"{stem}.csv"
        con.sql(query).to_csv(str(paths[stem]))
    con.close()
    return paths
