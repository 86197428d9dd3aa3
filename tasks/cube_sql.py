"""The cube straight from DuckDB: one GROUP BY over a relation, so no row reaches Python (issue 13).

:func:`cube_from_relation` groups a relation with the policy's column names (``sql/matched.sql``'s output;
missing attribute values may still be null: the engine's missing-value rules apply to the grouped cells,
as :func:`fairgate.build_cube` applies them) by attributes, raw label and prediction and score bin
(``sql/cube_cells.sql``); the engine's :func:`fairgate.engine.cube.cube_from_raw_cells` then checks and
recodes those few cells exactly as it does for rows in memory. With ``score_histogram=True`` the same scan
also yields a fine score histogram for AUC (engine/auc_histogram.py): a cube of any size, without a per-row
score table.

:func:`cube_partition` is the whole path for one partition's files (a Dask worker's share, or a whole audit):
its own DuckDB connection, the inputs staged and joined with the SQL in ``sql/``, then the cube.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import duckdb
import polars as pl

from fairgate.engine.columns import BIN, HBIN, PERSON_WEIGHT, WEIGHT
from fairgate.engine.cube import BIN_EDGE_TOLERANCE, Cube, cube_from_raw_cells, histogram_from_raw
from fairgate.errors import MISSING_COLUMN, DataError
from fairgate.policy.core import Policy
from tasks.sql import quote_identifier, render_sql

_RAW_TRUE, _RAW_PRED, _SET = "__raw_y_true", "__raw_y_pred", "__grouping_set"
_LIST = ",\n        "


def cube_from_relation(
    con: duckdb.DuckDBPyConnection,
    relation_sql: str,
    policy: Policy,
    *,
    score_histogram: bool,
    source: str = "the aligned rows",
) -> Cube:
    """The cube of the rows of ``relation_sql`` (a SELECT), computed inside DuckDB in one scan.

    Its cells equal those of :func:`fairgate.build_cube` on the same rows (same columns, dtypes and order;
    counts exactly, float sums up to summation order). ``score_histogram`` adds the score histogram of
    ``policy.execution.auc_bins`` bins.
    """
    present = list(con.sql(relation_sql).columns)
    columns = policy.columns
    attributes = policy.attribute_names
    weight = columns.weight
    for name in [columns.y_true, *attributes, *([weight] if weight else [])]:
        if name not in present:
            fix = "rename the column in the data or set its name in the policy"
            raise DataError(MISSING_COLUMN.format(column=name, source=source, present=present, fix=fix))
    has_scores = columns.score in present
    if columns.y_pred not in present and not has_scores:
        fix = f"give predictions in {columns.y_pred!r}, or scores in {columns.score!r} to threshold"
        raise DataError(MISSING_COLUMN.format(column=columns.y_pred, source=source, present=present, fix=fix))
    bins = policy.statistics.calibration_bins if has_scores else 1
    histogram_bins = policy.execution.auc_bins if (score_histogram and has_scores) else 0
    quoted = [quote_identifier(a) for a in attributes]
    score = f"try_cast({quote_identifier(columns.score)} as double)" if has_scores else "cast(0.0 as double)"
    y_pred = (
        quote_identifier(columns.y_pred) if columns.y_pred in present else f"cast({score} >= $threshold as tinyint)"
    )
    weight_value = f"try_cast({quote_identifier(weight)} as double)" if weight else "cast(1.0 as double)"
    person = f"cast({quote_identifier(PERSON_WEIGHT)} as double)" if PERSON_WEIGHT in present else weight_value
    cell_keys = [*quoted, _RAW_TRUE, _RAW_PRED, BIN]
    sets = [f"({', '.join(cell_keys)})"]
    if histogram_bins:
        sets.append(f"({', '.join([*quoted, _RAW_TRUE, HBIN])})")
    sql = render_sql(
        "cube_cells",
        relation=relation_sql,
        attribute_columns=_LIST.join(f"cast({q} as varchar) as {q}" for q in quoted) or "null as _none",
        attribute_names=_LIST.join(quoted) or "null as _none",
        y_true_column=quote_identifier(columns.y_true),
        y_pred_value=y_pred,
        score_value=score,
        weight_value=weight_value,
        person_weight_value=person,
        grouping_sets=", ".join(sets),
        histogram_bin=HBIN if histogram_bins else f"cast(null as integer) as {HBIN}",
    )
    params = {
        "flip": policy.favorable_label == 0,
        "bins": bins,
        "histogram_bins": max(histogram_bins, 1),
        "tolerance": BIN_EDGE_TOLERANCE,
    }
    if columns.y_pred not in present:  # predictions from the score, as the engine derives them
        params["threshold"] = columns.decision_threshold
    grouped = con.sql(sql, params=params).pl()
    raw_cells = grouped.filter(pl.col(_SET) == 0).drop(_SET, HBIN)
    cube = cube_from_raw_cells(raw_cells, policy, source=source, has_scores=has_scores, bins=bins)
    if not histogram_bins:
        return cube
    raw_histogram = grouped.filter(pl.col(_SET) == 1).select(*attributes, _RAW_TRUE, HBIN, WEIGHT)
    histogram = histogram_from_raw(raw_histogram, policy)
    return Cube(
        cube.cells,
        cube.attributes,
        cube.calibration_bins,
        cube.has_scores,
        None,
        cube.excluded_missing,
        cube.membership,
        histogram,
        histogram_bins,
    )


def cube_partition(sources: dict[str, str], policy: Policy, *, score_histogram: bool, memory_limit: str | None) -> Cube:
    """The cube of one partition's files: ``sources`` maps predictions/labels/attributes to a path or glob.

    Opens its own DuckDB connection (bounded by ``memory_limit``, spilling to a temporary directory), stages
    and joins the inputs with the SQL in ``sql/`` (tasks/align.py) and cubes the joined rows without pulling
    them; no shared state, so it runs on a Dask worker as it runs here.
    """
    from tasks.align import matched_relation, stage  # the staging code, without its Prefect task wrapper

    with tempfile.TemporaryDirectory(prefix="fairgate-duckdb-") as spill:
        staged = stage(policy, sources["predictions"], sources["labels"], sources["attributes"])
        try:
            configure(staged.con, memory_limit, Path(spill))
            relation = matched_relation(staged)
            return cube_from_relation(
                staged.con,
                relation,
                policy,
                score_histogram=score_histogram,
                source=f"the rows of {staged.sources['predictions'].label}",
            )
        finally:
            staged.con.close()


def configure(con: duckdb.DuckDBPyConnection, memory_limit: str | None, spill: Path) -> None:
    """Bound DuckDB's memory and let joins and aggregates spill beyond it (values as parameters)."""
    if memory_limit is not None:
        con.execute(f"set memory_limit = '{_size(memory_limit)}'")
    con.execute(f"set temp_directory = '{_path(spill)}'")
    con.execute("set preserve_insertion_order = false")  # order-free aggregates need no row order


def _size(text: str) -> str:
    """A memory size already checked by the policy (digits and a unit), safe to place in a SET statement."""
    if not all(ch.isalnum() or ch in ". " for ch in text):
        raise DataError(f"memory_limit {text!r} is not a size; write e.g. '3GB'")
    return text


def _path(path: Path) -> str:
    return str(path).replace("'", "''")
