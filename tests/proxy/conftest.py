"""Shared fixtures for the proxy tests: the shared reference tables, read independently of the product."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
BISG_GROUPS = ["white", "black", "api", "native", "multiple", "hispanic"]


def read_prob_rows(path: Path, key: str, wanted: set[str]) -> dict[str, dict[str, float]]:
    """Rows of a shared BISG CSV, with the csv module (no NA parsing): key -> {group: probability}."""
    out: dict[str, dict[str, float]] = {}
    with path.open(newline="") as handle:
        for row in csv.DictReader(handle):
            if row[key] in wanted:
                out[row[key]] = {g: float(row[g]) if row[g] != "" else float("nan") for g in BISG_GROUPS}
    return out


@pytest.fixture(scope="session")
def prob_rows():  # type: ignore[no-untyped-def]
    return read_prob_rows


@pytest.fixture(scope="session")
def data_dir() -> Path:
    assert DATA.is_dir(), f"shared data folder missing: {DATA}"
    return DATA
