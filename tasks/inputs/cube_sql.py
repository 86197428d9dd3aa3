"""The cube straight from DuckDB: one GROUP BY over a relation, so no row reaches Python (issue 13).

:func:`cube_from_relation` groups a relation with the policy's column names (``sql/matched.sql``'s output;
missing attribute values may still be null: the engine's missing-value rules apply to the grouped cells,
as :func:`fairgate.build_cube` applies them) by attributes, raw label and prediction and score bin
(``sql/cube_cells.sql``); the engine's :func:`fairgate.engine.cube.cube_from_raw_cells` then checks and
recodes those few cells exactly as it does for rows in memory. With ``score_histogram=True`` a second scan
yields a fine score histogram for AUC (engine/auc_histogram.py): a cube of any size, without a per-row
score table.

:func:`cube_partition` is the whole path for one partition's files (a Dask worker's share, or a whole audit):
its own DuckDB connection, the inputs staged and joined with the SQL in ``sql/``, then the cube.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa
from prefect import task
from prefect.cache_policies import NO_CACHE

from fairgate.engine.columns import PERSON_WEIGHT, ROWS
from fairgate.engine.cube import BIN, BIN_EDGE_TOLERANCE, Cube, add_score_table, cube_from_raw_cells, unit_weight_sums
from fairgate.errors import MISSING_COLUMN, DataError
from fairgate.policy.core import Policy
from tasks.inputs.align import id_buckets, join_report, matched_relation, restrict_to_bucket, sort_group_sizes
from tasks.inputs.io import first_line
from tasks.inputs.sql import load_sql, quote_identifier, render_sql
from tasks.inputs.staged import Aligned, Staged
from tasks.inputs.weights import check_streamed_weights_joined

_LIST = ",\n        "


def cube_from_relation(
    con: duckdb.DuckDBPyConnection,
    relation_sql: str,
    policy: Policy,
    *,
    score_histogram: bool,
    source: str = "the aligned rows",
    histogram_table: str | None = None,
) -> Cube:
    """The cube of the rows of ``relation_sql`` (a SELECT), computed inside DuckDB in one scan.

    Its cells equal those of :func:`fairgate.build_cube` on the same rows (same columns, dtypes and order;
    counts exactly, float sums up to summation order). ``score_histogram`` adds the score histogram of
    ``policy.execution.auc_bins`` bins; with ``histogram_table`` (one id bucket of a partition) that histogram
    is added into the DuckDB table of that name instead, and the cube returned without it.
    """
    present = list(con.sql(relation_sql).columns)
    columns = policy.columns
    attributes = policy.attribute_names
    weight = columns.weight
    has_scores = _check_columns(present, policy, source)
    bins = policy.statistics.calibration_bins if has_scores else 1
    histogram_bins = policy.execution.auc_bins if (score_histogram and has_scores) else 0
    quoted = [quote_identifier(a) for a in attributes]
    score = f"try_cast({quote_identifier(columns.score)} as double)" if has_scores else "cast(0.0 as double)"
    y_pred = (
        quote_identifier(columns.y_pred) if columns.y_pred in present else f"cast({score} >= $threshold as tinyint)"
    )
    weight_value = f"try_cast({quote_identifier(weight)} as double)" if weight else "cast(1.0 as double)"
    person = f"cast({quote_identifier(PERSON_WEIGHT)} as double)" if PERSON_WEIGHT in present else weight_value
    fragments = {
        "relation": relation_sql,
        "attribute_columns": _LIST.join(f"cast({q} as varchar) as {q}" for q in quoted) or "null as _none",
        "attribute_names": _LIST.join(quoted) or "null as _none",
        "y_true_column": quote_identifier(columns.y_true),
        "score_value": score,
        "weight_value": weight_value,
    }
    weighted = bool(weight) or PERSON_WEIGHT in present
    sql = _cells_sql(policy, fragments | {"y_pred_value": y_pred, "person_weight_value": person}, weighted)
    params: dict[str, object] = {"bins": bins, "tolerance": BIN_EDGE_TOLERANCE}
    if columns.y_pred not in present:  # predictions from the score, as the engine derives them
        params["threshold"] = columns.decision_threshold
    raw_cells = clipped_bins(con.sql(sql, params=params).pl(), bins)
    raw_cells = raw_cells if weighted else unit_weight_sums(raw_cells)  # every weight 1: the sums are the rows
    cube = cube_from_raw_cells(raw_cells, policy, source=source, has_scores=has_scores, bins=bins)
    if not histogram_bins:
        return cube
    # A second scan: grouping sets in one query were several times slower than two plain GROUP BYs.
    sql, params = _histogram_sql(policy, fragments, histogram_bins)
    if histogram_table is not None:
        _add_into(con, histogram_table, sql, params)
        return cube
    return with_histogram(cube, con.sql(sql, params=params).pl(), histogram_bins)


def _cells_sql(policy: Policy, fragments: dict[str, str], weighted: bool) -> str:
    """``sql/cube_cells.sql`` for the policy: the favourable score and the score sum as fixed SQL (no per-row
    choice in the scan), the weight sums only when the rows carry weights."""
    return render_sql(
        "cube_cells",
        weight_sums=load_sql("cube_weight_sums").rstrip() if weighted else "",
        favourable_score="1.0 - __raw_score" if policy.favorable_label == 0 else "__raw_score",
        weighted_score="__score * __weight" if weighted else "__score",
        **fragments,
    )


def clipped_bins(raw_cells: pl.DataFrame, bins: int) -> pl.DataFrame:
    """The raw cells with their score bins as integers in ``0 .. bins - 1``; a bad score's bin (NaN, null or out
    of range: the data is refused) reads as a bin like any other.

    sql/cube_cells.sql leaves the bin a double: casting every row in the scan costs more than casting the few
    thousand grouped cells here, and a far-out bad score would fail the cast before the engine names it.
    """
    score_bin = pl.col(BIN).fill_nan(0.0).fill_null(0.0).clip(0, bins - 1).cast(pl.Int16)
    return raw_cells.with_columns(score_bin)


def _check_columns(present: list[str], policy: Policy, source: str) -> bool:
    """Check that the relation has the columns the policy names; whether it has scores."""
    columns = policy.columns
    weight = columns.weight
    for name in [columns.y_true, *policy.attribute_names, *([weight] if weight else [])]:
        if name not in present:
            fix = "rename the column in the data or set its name in the policy"
            raise DataError(MISSING_COLUMN.format(column=name, source=source, present=present, fix=fix))
    has_scores = columns.score in present
    if columns.y_pred not in present and not has_scores:
        fix = f"give predictions in {columns.y_pred!r}, or scores in {columns.score!r} to threshold"
        raise DataError(MISSING_COLUMN.format(column=columns.y_pred, source=source, present=present, fix=fix))
    return has_scores


def with_histogram(cube: Cube, histogram: pl.DataFrame, histogram_bins: int) -> Cube:
    """``cube`` carrying the score histogram ``histogram`` of ``histogram_bins`` bins."""
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


def _add_into(con: duckdb.DuckDBPyConnection, table: str, sql: str, params: dict[str, object]) -> None:
    """Add a score histogram into the DuckDB table ``table`` (a fixed name), re-summed so that it stays one row
    per cell (at most groups x 2 x bins) however many buckets are added; summed in DuckDB, not in Polars."""
    known = con.sql("select 1 from duckdb_tables() where table_name = $name", params={"name": table})
    if not known.fetchall():
        con.execute(f"create temp table {table} as {sql}", params)
        return
    keys = [quote_identifier(c) for c in con.table(table).columns if c != "__weight"]
    added = f"select * from {table} union all ({sql})"
    summed = f"select {', '.join(keys)}, sum(__weight) as __weight from ({added}) group by all"
    con.execute(f"create or replace temp table {table} as {summed}", params)


def _histogram_sql(policy: Policy, fragments: dict[str, str], histogram_bins: int) -> tuple[str, dict[str, object]]:
    """The score histogram, final from DuckDB (``sql/score_histogram.sql``): its cells can be millions (groups x
    2 x bins), too many to recode in Python. Unknown labels are bound parameters, never spliced into the SQL."""
    params: dict[str, object] = {
        "flip": policy.favorable_label == 0,
        "favourable": policy.favorable_label,
        "histogram_bins": histogram_bins,
        "tolerance": BIN_EDGE_TOLERANCE,
    }
    columns: list[str] = []
    kept: list[str] = []
    for attribute in policy.sensitive_attributes:
        quoted = quote_identifier(attribute.name)
        if attribute.missing == "unknown":
            label = f"unknown_{len(columns)}"
            params[label] = attribute.unknown_label
            columns.append(f"coalesce(cast({quoted} as varchar), ${label}) as {quoted}")
        else:
            kept.append(f"{quoted} is not null")
            columns.append(f"cast({quoted} as varchar) as {quoted}")
    fragments = fragments | {
        "attribute_columns": _LIST.join(columns) or "null as _none",
        "kept_rows": " and ".join(kept) or "true",
    }
    return render_sql("score_histogram", **fragments), params


def cube_partition(sources: dict[str, str], policy: Policy, *, score_histogram: bool, memory_limit: str | None) -> Cube:
    """The cube of one partition's files: ``sources`` maps predictions/labels/attributes to a path or glob.

    Opens its own DuckDB connection (bounded by ``memory_limit``, spilling to a temporary directory), stages
    and joins the inputs with the SQL in ``sql/`` (tasks/inputs/align.py) and cubes the joined rows without pulling
    them; no shared state, so it runs on a Dask worker as it runs here.
    """
    from tasks.inputs.align import stage  # the staging code, without its Prefect task wrapper

    with tempfile.TemporaryDirectory(prefix="fairgate-duckdb-") as spill:
        staged = stage(policy, sources["predictions"], sources["labels"], sources["attributes"])
        try:
            configure(staged.con, memory_limit, Path(spill))
            return _cube_by_buckets(staged, policy, score_histogram)
        except duckdb.OutOfMemoryException as exc:  # a limit the policy set too low for these inputs
            raise DataError(
                f"DuckDB ran out of memory within execution.memory_limit {memory_limit!r} ({first_line(exc)}); "
                "raise execution.memory_limit in the policy, or set it to null for DuckDB's default"
            ) from None
        finally:
            staged.con.close()


def _cube_by_buckets(staged: Staged, policy: Policy, score_histogram: bool) -> Cube:
    """The cube of the staged inputs, joined and cubed one id bucket at a time (tasks/inputs/align.py, id_buckets):
    the join's hash tables hold one bucket, so memory stays flat as partitions grow. Cubes of disjoint rows add.
    A bucket with no row left (possible only for tiny matches) adds nothing."""
    source = f"the rows of {staged.sources['predictions'].label}"
    buckets = id_buckets(staged)
    if buckets == 1:
        relation = matched_relation(staged)
        return cube_from_relation(staged.con, relation, policy, score_histogram=score_histogram, source=source)
    # The buckets' score histograms are summed in DuckDB (Polars' sum of two histograms of a million cells
    # costs more memory than a bucket's join); the small cells are summed as cubes.
    histograms = "bucket_histograms"
    total: Cube | None = None
    empty: DataError | None = None
    for bucket in range(buckets):
        restrict_to_bucket(staged, bucket, buckets)
        relation = matched_relation(staged)
        try:
            cube = cube_from_relation(
                staged.con, relation, policy, score_histogram=score_histogram, source=source, histogram_table=histograms
            )
        except DataError as exc:
            if not exc.message.startswith("no rows of"):
                raise
            empty = empty or exc
            continue
        total = cube if total is None else total + cube
    if total is None:
        assert empty is not None
        raise empty
    if not score_histogram or not total.has_scores:
        return total
    return with_histogram(total, staged.con.table(histograms).pl(), policy.execution.auc_bins)


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


def wants_histogram(policy: Policy, rows: int) -> bool:
    """Whether AUC comes from the score histogram (``execution.auc``; never when ``exact_auc`` is off)."""
    return policy.statistics.exact_auc and policy.execution.histogram_auc(rows)


@task(name="cube in DuckDB", cache_policy=NO_CACHE)
def stream_cube(staged: Staged) -> tuple[Aligned, Cube]:
    """The streaming audit's ALIGN and CUBE: join report, cube and group sizes computed inside DuckDB.

    The rows stay in DuckDB (the ``matched`` view, bounded by the connection's memory_limit); only when AUC is
    exact (``execution.auc``) does the score table, four columns of the scored rows, come into Python.
    The result is what the in-memory path has after align_inputs and build_cube, without the rows.
    """
    policy = staged.policy
    relation = matched_relation(staged)
    report = join_report(staged)
    histogram = wants_histogram(policy, report["matched"])
    check_streamed_weights_joined(staged, relation)
    try:
        cube = cube_from_relation(
            staged.con, relation, policy, score_histogram=histogram, source=staged.sources["attributes"].label
        )
    except DataError as exc:
        if exc.message.startswith("no rows of"):  # every matched person has a missing attribute value
            raise DataError(NO_ROWS_LEFT.format(attributes=staged.attributes)) from None
        raise
    if cube.has_scores and policy.statistics.exact_auc and not histogram:
        cube = add_score_table(cube, _score_rows(staged, relation), policy, source="the aligned rows")
    report["aligned_rows"] = cube.n_rows
    report["excluded_for_missing_attributes"] = report["matched"] - cube.n_rows
    # The join report counts the people left out for missing values, as on the in-memory path, whose cube
    # never sees them: the cube's own count would report them twice.
    cube = replace(cube, excluded_missing={})
    aligned = Aligned(table=pa.table({}), join_report=report, group_sizes=_group_sizes(staged, cube))
    return aligned, cube


NO_ROWS_LEFT = (
    "no rows are left after leaving out people with missing attribute values ({attributes}); "
    "set missing: unknown on those attributes in the policy to audit them as their own group"
)


def _score_rows(staged: Staged, relation: str) -> pa.Table:
    """The columns exact AUC reads (attributes, label, score, weight), for the score table."""
    cols = staged.policy.columns
    present = set(staged.con.sql(relation).columns)
    wanted = [*staged.policy.attribute_names, cols.y_true, cols.score, cols.weight, PERSON_WEIGHT]
    names = ", ".join(quote_identifier(c) for c in dict.fromkeys(wanted) if c is not None and c in present)
    return staged.con.sql(f"select {names} from ({relation})").to_arrow_table()  # names: quoted identifiers


def _group_sizes(staged: Staged, cube: Cube) -> list[dict[str, Any]]:
    """Rows per (attribute, group), from the cube's cells (as sql/group_sizes.sql counts the aligned rows)."""
    sizes = [
        {"attribute": name, "group": group, "n": int(n)}
        for name in staged.attributes
        for group, n in cube.cells.group_by(name).agg(pl.col(ROWS).sum()).iter_rows()
    ]
    return sort_group_sizes(staged, sizes)
