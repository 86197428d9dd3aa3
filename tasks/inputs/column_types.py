"""The column types staging checks before any SQL compares or joins them: ids of one type in every input, a
numeric score, and binary columns read as 0/1 whatever their stored type."""

from __future__ import annotations

import re

import duckdb

from fairgate.errors import DataError
from tasks.inputs.sql import quote_identifier
from tasks.inputs.staged import Staged

INTEGER_TYPES = {
    "TINYINT",
    "SMALLINT",
    "INTEGER",
    "BIGINT",
    "HUGEINT",
    "UTINYINT",
    "USMALLINT",
    "UINTEGER",
    "UBIGINT",
    "BOOLEAN",
}
_DECIMAL = re.compile(r"DOUBLE|FLOAT|REAL|DECIMAL(\(\d+, *\d+\))?")


def type_family(con: duckdb.DuckDBPyConnection, view: str, column: str) -> str:
    """``number`` or ``text`` (or another type's name) for a column of a fixed view; ``column`` quoted."""
    column_type = str(con.sql(f"select {column} from {view} limit 0").types[0]).upper()
    if column_type in INTEGER_TYPES or _DECIMAL.fullmatch(column_type):  # DOUBLE[] (a list) is not a number
        return "number"
    return "text" if column_type == "VARCHAR" else column_type.lower()


def check_id_types(staged: Staged) -> None:
    """Ids are numbers in every input or text in every input: DuckDB would cast text ids to numbers (so
    '00001' silently matches 1) or fail mid-join with a raw conversion error."""
    families = {role: type_family(staged.con, f"stg_{role}", "id") for role in staged.sources}
    if len(set(families.values())) > 1:
        listed = ", ".join(f"{staged.sources[r].label}: {f}" for r, f in families.items())
        raise DataError(
            f"the id column {staged.policy.columns.id!r} has different types in the inputs ({listed}); "
            "fairgate does not convert ids (00001 and 1 would be the same person). Write the ids the same way "
            "in every input: all whole numbers, or all text with the same spelling and zero-padding"
        )


def check_score_type(staged: Staged) -> None:
    """A score column read as text (a stray word in a CSV, a text column in a database) is named, with an
    example value, before any SQL compares it with numbers."""
    if not staged.has_score:
        return
    score = quote_identifier(staged.policy.columns.score)
    family = type_family(staged.con, "stg_predictions", score)
    if family == "number":
        return
    example = staged.con.sql(
        f"select cast({score} as varchar) from stg_predictions "  # score: quoted identifier
        f"where {score} is not null and try_cast({score} as double) is null limit 1"
    ).fetchall()
    found = f", e.g. {example[0][0]!r}" if example else " (every cell is empty)"
    raise DataError(
        f"column {staged.policy.columns.score!r} in {staged.sources['predictions'].label} must hold numbers "
        f"(scores in [0, 1]) but is read as {family}{found}; remove or fix the non-numeric values (an empty "
        "cell is a missing value), or store the column as a number"
    )


def binary_value(con: duckdb.DuckDBPyConnection, view: str, column: str) -> str:
    """SQL turning a validated binary column into 0/1: a plain cast for integer/boolean inputs (fast), a text
    match for anything else (text "true"/"1", floats 1.0). ``view`` is a fixed name, ``column`` a quoted one."""
    column_type = str(con.sql(f"select {column} from {view} limit 0").types[0]).upper()
    if column_type in INTEGER_TYPES:
        return f"cast({column} as tinyint)"
    return f"cast(lower(cast({column} as varchar)) in ('1', '1.0', 'true') as tinyint)"
