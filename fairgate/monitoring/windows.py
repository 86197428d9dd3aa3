"""Windowed cubes: one cube per period, stored as plain records; a window is the sum of its periods' cubes.

Cubes of disjoint row sets add (``Cube.__add__``), so a 7-, 30- or 90-day window, or everything since
deployment, is a sum of stored period cubes: a monitoring run never re-reads the rows of earlier periods.
The counts of a summed window equal those of the cube of all its rows exactly; float sums (weights, score
sums) equal them up to the order of addition (about 1e-15 relative).

Pure: the records are stored and read by ``tasks/store/monitor.py``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

import polars as pl

from fairgate.engine.columns import BIN, PERSON_SQ, PRED, ROWS, SCORE_SUM, TRUE, WEIGHT, WEIGHT_SQ
from fairgate.engine.cube import NO_SCORE_BIN, Cube
from fairgate.errors import DataError
from fairgate.policy.core import Policy
from fairgate.policy.monitoring import SINCE_DEPLOYMENT, Window

# The cells' dtypes as text in a stored record, and back: the few types a cube's cells have.
_DTYPES: dict[str, pl.DataType] = {
    str(t): t for t in (pl.String(), pl.Int8(), pl.Int16(), pl.Int32(), pl.Int64(), pl.UInt32(), pl.Float64())
}
COUNT_COLUMNS = _COUNTS = [ROWS, WEIGHT, WEIGHT_SQ, PERSON_SQ, SCORE_SUM]  # the cells' additive counts


# The nights a monitor can date: a window (at most 3660 days) back from the earliest and a week on from the
# latest stay inside Python's dates. A timestamp outside (year 0001, 9999) is a data error, not a crash.
EARLIEST_NIGHT = date(1900, 1, 1)
LATEST_NIGHT = date(9998, 12, 31)


def check_nights(first: date, last: date, where: str) -> None:
    """Refuse (DataError) nights before EARLIEST_NIGHT or after LATEST_NIGHT, naming ``where`` they came from.

    >>> check_nights(date(1, 1, 1), date(2026, 12, 1), "timestamp column 'ts' in p.csv")
    Traceback (most recent call last):
    fairgate.errors.DataError: timestamp column 'ts' in p.csv dates a night 0001-01-01, outside 1900-01-01 ...
    """
    for day in (first, last):
        if not EARLIEST_NIGHT <= day <= LATEST_NIGHT:
            raise DataError(
                f"{where} dates a night {day.isoformat()}, outside {EARLIEST_NIGHT.isoformat()} to "
                f"{LATEST_NIGHT.isoformat()}; fix the dates (a default such as 0001-01-01 for a missing time?)"
            )


def period_start(day: date, period: str) -> date:
    """The first day of the period holding ``day``: the day itself, or the Monday of its ISO week.

    >>> period_start(date(2026, 12, 3), "week"), period_start(date(2026, 12, 3), "day")
    (datetime.date(2026, 11, 30), datetime.date(2026, 12, 3))
    """
    return day - timedelta(days=day.weekday()) if period == "week" else day


def period_end(start: date, period: str) -> date:
    """The last day (inclusive) of the period starting on ``start``."""
    return start + timedelta(days=6 if period == "week" else 0)


@dataclass(frozen=True)
class PeriodCube:
    """One period's cube as stored: its dates, version, row counts and the cube."""

    start: date
    end: date
    cube: Cube
    rows: int  # prediction rows of the period
    labelled_rows: int  # rows the cube counts (joined with labels and attributes)
    version: int = 1
    seq: int | None = None  # its row in the trail, once stored


def cube_record(cube: Cube) -> dict[str, Any]:
    """A cube as a JSON-ready record (without the score table, which has one row per person)."""
    return {
        "attributes": list(cube.attributes),
        "calibration_bins": cube.calibration_bins,
        "has_scores": cube.has_scores,
        "excluded_missing": dict(sorted(cube.excluded_missing.items())),
        "membership": cube.membership,
        "columns": cube.cells.columns,  # the trail stores JSON with sorted keys: the order is kept here
        "dtypes": {name: str(dtype) for name, dtype in cube.cells.schema.items()},
        "cells": cube.cells.to_dict(as_series=False),  # by column: compact, and fast to read back
    }


def cube_from_record(record: dict[str, Any]) -> Cube:
    """The cube a :func:`cube_record` describes (cells with their original dtypes and order)."""
    try:
        schema = {name: _DTYPES[record["dtypes"][name]] for name in record["columns"]}
    except KeyError as exc:
        raise DataError(f"a stored cube has a cell type fairgate cannot read back: {exc}") from None
    cells = pl.DataFrame(record["cells"], schema=schema)
    return Cube(
        cells,
        tuple(record["attributes"]),
        int(record["calibration_bins"]),
        bool(record["has_scores"]),
        None,
        {str(k): int(v) for k, v in (record.get("excluded_missing") or {}).items()},
        record.get("membership"),
    )


def audit_cube(cells: Sequence[dict[str, Any]], template: Cube) -> Cube:
    """An audit's cube as the trail's ``cubes`` table holds it (its cells only), shaped like ``template``.

    The audit and the monitored periods use one policy, so they share attributes, score bins and cell types.
    """
    if not cells:
        raise DataError("the baseline audit recorded an empty cube")
    missing = [name for name in template.cells.columns if name not in cells[0]]
    if missing:
        raise DataError(
            f"the baseline audit's cube lacks {missing}: it was recorded under a policy with other sensitive "
            "attributes; choose a baseline audited under this policy (monitoring.baseline.run_id)"
        )
    frame = pl.DataFrame([{k: row[k] for k in template.cells.columns} for row in cells], schema=template.cells.schema)
    has_scores = bool((frame[BIN] != NO_SCORE_BIN).any()) or template.has_scores
    return Cube(frame, template.attributes, template.calibration_bins, has_scores, None, {}, template.membership)


def cells_cube(cells: Sequence[dict[str, Any]], policy: Policy) -> Cube:
    """An audit's cube from its recorded cells alone (no period cube to shape it on, e.g. before a night is read).

    The attributes are the policy's; a cell without a score (bin 0 everywhere) makes a cube without scores.
    """
    if not cells:
        raise DataError("the baseline audit recorded an empty cube")
    attributes = tuple(policy.attribute_names)
    missing = [name for name in (*attributes, TRUE, PRED, BIN, *_COUNTS) if name not in cells[0]]
    if missing:
        raise DataError(
            f"the baseline audit's cube lacks {missing}: it was recorded under a policy with other sensitive "
            "attributes; choose a baseline audited under this policy (monitoring.baseline.run_id)"
        )
    frame = pl.DataFrame(list(cells)).with_columns(pl.col(a).cast(pl.Utf8) for a in attributes)
    has_scores = bool((frame[BIN] != NO_SCORE_BIN).any())
    bins = policy.statistics.calibration_bins if has_scores else 1
    return Cube(frame, attributes, bins, has_scores, None, {}, None)


def sum_cubes(cubes: Iterable[Cube]) -> Cube | None:
    """The sum of the cubes (their rows' union), cells in the engine's order; None for no cube.

    One group-by over all cells instead of pairwise additions: the cost grows with the number of cells, not
    with the number of periods squared.
    """
    cubes = list(cubes)
    if not cubes:
        return None
    if len(cubes) == 1:
        return cubes[0]
    first = cubes[0]
    for other in cubes[1:]:
        if (other.attributes, other.calibration_bins, other.has_scores) != (
            first.attributes,
            first.calibration_bins,
            first.has_scores,
        ):
            raise DataError("period cubes with different attributes, score bins or scores cannot be summed")
    keys = [*first.attributes, TRUE, PRED, BIN]
    cells = pl.concat([c.cells for c in cubes]).group_by(keys).agg(pl.col(v).sum() for v in _COUNTS).sort(keys)
    cells = cells.select(first.cells.columns).cast(first.cells.schema)
    excluded: dict[str, int] = {}
    for cube in cubes:
        for name, count in cube.excluded_missing.items():
            excluded[name] = excluded.get(name, 0) + count
    return Cube(cells, first.attributes, first.calibration_bins, first.has_scores, None, excluded, first.membership)


def window_periods(periods: Sequence[PeriodCube], window: Window, night: date, policy: Policy) -> list[PeriodCube]:
    """The stored periods a window ending on ``night`` sums.

    Those starting within its last ``window`` days; every period up to the night for since_deployment.
    """
    monitoring = policy.monitoring
    period = monitoring.period if monitoring is not None else "day"
    last = period_start(night, period)
    if window == SINCE_DEPLOYMENT:
        return [p for p in periods if p.start <= last]
    first = last - timedelta(days=int(window) - (7 if period == "week" else 1))
    return [p for p in periods if first <= p.start <= last]


def window_label(window: Window) -> str:
    """A window as text: ``30`` or ``since_deployment``."""
    return str(window)
