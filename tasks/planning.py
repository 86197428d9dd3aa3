"""The inputs of ``fairgate plan``: the attribute columns of a file of people, and an audit document.

Adapters only (file I/O): the planning itself is ``fairgate.engine.sample_size``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from fairgate.errors import FairgateError
from tasks.inputs.io import first_line, parse_source, register_source


def read_attribute_columns(text: str, names: Sequence[str]) -> pl.DataFrame:
    """The columns ``names`` of the attributes source ``text`` (a file, or a table in a database file)."""
    source = parse_source("attributes", text)
    with duckdb.connect() as con:
        columns = register_source(con, source, "plan_attributes", keep=list(names))
        missing = [n for n in names if n not in columns]
        if missing:
            raise FairgateError(
                f"{source.label} has no column(s) {missing} for the policy's sensitive attributes; columns "
                f"present: {columns}"
            )
        frame = pl.from_arrow(con.table("plan_attributes").select(*[duckdb.ColumnExpression(n) for n in names]).arrow())
    assert isinstance(frame, pl.DataFrame)
    if frame.height == 0:
        raise FairgateError(f"{source.label} has no rows: the groups' shares cannot be read from it")
    return frame


def read_audit_document(path: Path) -> dict[str, Any]:
    """An audit's JSON document (``fairgate audit``'s ``audit_*.json``)."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FairgateError(f"--audit {path}: no such file; give the audit's JSON document") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FairgateError(f"--audit {path} is not a readable JSON document: {first_line(exc)}") from None
    if not isinstance(document, dict) or not isinstance(document.get("results"), list):
        raise FairgateError(f"--audit {path} is not an audit document (no results list); give an audit_*.json")
    return document
