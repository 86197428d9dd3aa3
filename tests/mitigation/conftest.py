"""Fixtures for the mitigation tests (helpers in mitigation_helpers.py)."""

from __future__ import annotations

import polars as pl
import pytest
from mitigation_helpers import compas_training


@pytest.fixture(scope="session")
def compas_train() -> pl.DataFrame:
    return compas_training()
