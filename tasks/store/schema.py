"""The trail's tables: created from ``sql/store/`` when written to, older trails migrated, and what a read-only
reader may find missing in an older trail.

Tables: ``runs`` (one row per audit), ``metric_results`` (one row per judged metric and slicing), ``cubes`` (the
run's cube, for monitoring), ``deliveries`` (report e-mails), ``registrations`` (model registration events,
accepted or rejected, written by the ``fairgate-registration`` flow) and ``mitigations`` (one row per mitigation
run, a failing audit's proposal or ``fairgate mitigate``: the audit run it answers, the method, its files with
their sha256 and the verdict before and after); ``trail_meta`` (the trail version and the key check) and the
monitoring tables (tasks/store/monitor.py). The DDL is in ``sql/store/<table>.sql``, one file per table, then
``sql/store/migrations.sql`` (what an older trail gains).
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from fairgate.errors import NOT_A_TRAIL, TRAIL_DAMAGED
from tasks.inputs.sql import load_sql
from tasks.store.columns import TRAIL_VERSION
from tasks.store.errors import TrailDamaged, TrailError

_CORE_TABLES = ("runs", "metric_results", "cubes", "deliveries")
MONITOR_TABLES = ("period_cubes", "monitor_nights", "drift_alerts", "label_estimates")
# In the order they are created (sql/store/<table>.sql).
_TABLES = (*_CORE_TABLES, "registrations", "trail_meta", *MONITOR_TABLES, "mitigations")
_ALL_TABLES = frozenset(_TABLES)


def _create_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Create the missing tables, migrate an older trail's, and record the trail version."""
    for table in _TABLES:
        con.execute(load_sql(f"store/{table}"))
    con.execute(load_sql("store/migrations"))
    con.execute(
        "insert into trail_meta values ('trail_version', $v) on conflict do update set value = $v",
        {"v": str(TRAIL_VERSION)},
    )


def _check_tables(con: duckdb.DuckDBPyConnection, trail_path: Path, *, write: bool) -> None:
    """A trail has its four core tables; a new (empty) file gets them when written to."""
    present = {row[0] for row in con.execute("select table_name from duckdb_tables()").fetchall()}
    missing = [table for table in _CORE_TABLES if table not in present]
    if not missing or (write and not present):
        return
    if not present & _ALL_TABLES:
        why = f"it is a DuckDB database without the trail's tables (it has {sorted(present) or 'no tables'})"
        raise TrailError(NOT_A_TRAIL.format(path=trail_path, why=why))
    raise TrailDamaged(TRAIL_DAMAGED.format(path=trail_path, detail=f"table(s) {', '.join(missing)} are missing"))


def has_table(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    """Whether the trail has ``table`` (an older trail lacks the tables added after it was made)."""
    return bool(con.execute("select 1 from duckdb_tables() where table_name = ?", [table]).fetchall())


def _has_registration_status(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the trail's ``registrations`` table can hold recorded registrations (read-only: no schema change)."""
    columns = con.execute("select column_name from duckdb_columns() where table_name = 'registrations'").fetchall()
    return ("status",) in columns


def _chain_column(con: duckdb.DuckDBPyConnection, table: str) -> str:
    """``chain``, or NULL for a version-1 trail opened read-only (it has no such column)."""
    columns = con.execute("select column_name from duckdb_columns() where table_name = ?", [table]).fetchall()
    return "chain" if ("chain",) in columns else "null as chain"
