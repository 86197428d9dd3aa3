"""READ for monitoring: one night's new rows, aligned and validated as an audit's, cubed per period.

The rows are staged, validated and aligned by the audit's own tasks (tasks/inputs/align.py,
tasks/validation/validate.py); each
aligned row then gets its period from the predictions' timestamp column (``monitoring.timestamp``, by
``sql/period_rows.sql``) and every period present is cubed on its own. Predictions without that column are
all the night's (``--night``). Only these rows are read: earlier periods come from their stored cubes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime

import duckdb
import polars as pl
import pyarrow as pa
from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

import fairgate
from fairgate.errors import DataError
from fairgate.monitoring.windows import PeriodCube, check_nights, period_end, period_start
from tasks.inputs.sql import quote_identifier, render_sql
from tasks.inputs.staged import Staged

PERIOD = "__period_start"


@dataclass(frozen=True)
class RowPeriods:
    """Each prediction id's period start (None: every row is the night's) and prediction rows per period."""

    ids: pl.DataFrame | None
    counts: dict[date, int]


@task(name="row periods", cache_policy=NO_CACHE)
def row_periods(staged: Staged, policy: fairgate.Policy, night: date | None) -> RowPeriods:
    """The period of every prediction row, from the staged predictions (before their connection closes)."""
    return _row_periods(staged.con, staged.sources["predictions"].label, policy, night)


def night_of(periods: RowPeriods, night: date | None, policy: fairgate.Policy) -> date:
    """The monitored night (its period's start): the one given, else the latest period in the rows."""
    monitoring = policy.monitoring
    assert monitoring is not None
    if night is None:
        night = max(periods.counts) if periods.counts else datetime.now(UTC).date()
    return period_start(night, monitoring.period)


def _row_periods(
    con: duckdb.DuckDBPyConnection, source: str, policy: fairgate.Policy, night: date | None
) -> RowPeriods:
    """Each prediction id's period start, and the prediction rows per period.

    Without the timestamp column every row is the night's; a timestamp that is missing or not a date is an
    error naming the column (a row without a period cannot be put in any window).
    """
    monitoring = policy.monitoring
    assert monitoring is not None
    present = [row[0] for row in con.execute("select column_name from (describe src_predictions)").fetchall()]
    if monitoring.timestamp not in present:
        if night is None:
            raise DataError(
                f"{source} has no timestamp column {monitoring.timestamp!r} (monitoring.timestamp), so the rows' "
                f"period is unknown; pass --night DATE (all rows are that night's), or add the column; "
                f"columns present: {present}"
            )
        return RowPeriods(None, {period_start(night, monitoring.period): _count(con)})
    sql = render_sql(
        "period_rows",
        id_column=quote_identifier(policy.columns.id),
        timestamp_column=quote_identifier(monitoring.timestamp),
        unit="'week'" if monitoring.period == "week" else "'day'",
    )
    frame = pl.from_arrow(con.sql(sql).to_arrow_table())
    assert isinstance(frame, pl.DataFrame)
    undated = frame.filter(pl.col("period_start").is_null()).height
    if undated:
        raise DataError(
            f"{source}: {undated} row(s) have a missing or unreadable {monitoring.timestamp!r} "
            "(monitoring.timestamp); give every prediction its date or time (ISO 8601, e.g. 2026-12-01T23:10:00)"
        )
    counts = {start: int(n) for start, n in frame.group_by("period_start").len().iter_rows()}
    check_nights(min(counts), max(counts), f"column {monitoring.timestamp!r} (monitoring.timestamp) in {source}")
    return RowPeriods(frame.rename({"period_start": PERIOD}), counts)


def _count(con: duckdb.DuckDBPyConnection) -> int:
    return int(con.execute("select count(*) from src_predictions").fetchall()[0][0])


@task(name="cube periods", cache_policy=NO_CACHE)
def cube_periods(table: pa.Table, periods: RowPeriods, policy: fairgate.Policy) -> list[PeriodCube]:
    """One cube per period present; counts are the audit's (``fairgate.build_cube``), without the score table
    (exact AUC needs every row: it is not kept per period)."""
    monitoring = policy.monitoring
    assert monitoring is not None
    rows = pl.from_arrow(table)
    assert isinstance(rows, pl.DataFrame)
    counts = periods.counts
    if periods.ids is None:
        (only,) = counts
        rows = rows.with_columns(pl.lit(only).alias(PERIOD))
    else:
        ids = periods.ids.with_columns(pl.col("id").cast(rows.schema["id"]))
        rows = rows.join(ids, on="id", how="left")
    out = []
    for start in sorted(counts):
        part = rows.filter(pl.col(PERIOD) == start).drop(PERIOD)
        if part.height == 0:
            get_run_logger().warning(f"period {start}: no prediction has its label yet; nothing to cube")
            continue
        cube = fairgate.build_cube(part, policy, source=f"the rows of period {start}", exact_auc=False)
        out.append(PeriodCube(start, period_end(start, monitoring.period), cube, int(counts[start]), part.height))
    return out
