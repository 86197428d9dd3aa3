"""The one loader for the DuckDB SQL in ``sql/`` (one relation per file)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

SQL_DIR = Path(__file__).resolve().parents[1] / "sql"


@cache
def load_sql(name: str) -> str:
    """The text of ``sql/<name>.sql`` (read once, then cached)."""
    return (SQL_DIR / f"{name}.sql").read_text()
