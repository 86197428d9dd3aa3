"""Fixtures for the mitigation tests (helpers in mitigation_helpers.py)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from mitigation_helpers import InProcessRunner, compas_training, split_compas


@pytest.fixture(scope="session")
def compas_train() -> pl.DataFrame:
    return compas_training()


@pytest.fixture(scope="session")
def compas_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """COMPAS split into training and held-out files (read only: tests that edit copy them)."""
    return split_compas(tmp_path_factory.mktemp("compas-split"))


@pytest.fixture(scope="session")
def runner() -> InProcessRunner:
    return InProcessRunner()
