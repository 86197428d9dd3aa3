"""ALIGN: join predictions, labels and sensitive attributes on id with the DuckDB SQL in ``sql/``.

Two steps, so that validation sits between them: :func:`stage_inputs` makes each input queryable under the
contract's column names (``stg_*`` views, values as given, so validation sees what the files hold);
:func:`align_inputs` joins the staged inputs (ids validated unique first, so the join cannot multiply rows),
reports the join and returns the aligned rows as an Arrow table in the engine's terms: the policy's column
names, missing attribute values handled as the policy says (``sql/aligned.sql``). Column names from the
policy are checked against each input's schema and quoted as identifiers; values are bound as parameters.
"""

from __future__ import annotations

from typing import Any

import duckdb
import pyarrow as pa
from prefect import task
from prefect.cache_policies import NO_CACHE

from fairgate.engine.kinds import kind_of
from fairgate.errors import HEADER_ONLY, MISSING_COLUMN, DataError
from fairgate.policy.core import Policy
from fairgate.policy.proxy import DEFAULT_ATTRIBUTE
from tasks.inputs.column_types import binary_value, check_id_types, check_score_type
from tasks.inputs.io import Source, explain_scan_error, parse_source, register_source, sha256_of
from tasks.inputs.sql import quote_identifier, render_sql
from tasks.inputs.staged import Aligned, Staged
from tasks.inputs.weights import check_weights_joined, weight_column, weight_role_of, weight_value

_LIST = ",\n        "  # how column lists are joined in the rendered SQL


def proxy_attribute(policy: Policy) -> str | None:
    """The sensitive attribute the proxy infers, if the policy has a proxy section."""
    if policy.proxy is None:
        return None
    return policy.proxy.attribute or DEFAULT_ATTRIBUTE[policy.proxy.method]


@task(name="stage inputs", cache_policy=NO_CACHE)
def stage_inputs(policy: Policy, predictions: str, labels: str | None, attributes: str) -> Staged:
    """Register the three inputs in a fresh DuckDB connection and create the ``stg_*`` views."""
    return stage(policy, predictions, labels, attributes)


def stage(policy: Policy, predictions: str, labels: str | None, attributes: str) -> Staged:
    """:func:`stage_inputs` outside a flow (a Dask worker's partition, tasks/inputs/cube_sql.py).

    ``labels`` None: an audit without labels; the predictions stand in as the labels input with a placeholder
    label (``sql/stg_no_labels.sql``), which nothing published reads (fairgate/engine/label_checks.py).
    """
    given = {"predictions": predictions, "labels": labels or predictions, "attributes": attributes}
    sources = {role: parse_source(role, text) for role, text in given.items()}
    con = duckdb.connect()
    keep = {"attributes": attribute_file_columns(policy)}  # a very wide attributes CSV: only these are read
    present = {
        role: register_source(con, source, f"src_{role}", id_column=policy.columns.id, keep=keep.get(role))
        for role, source in sources.items()
    }
    staged = _checked_columns(con, policy, sources, present, labels_absent=labels is None)
    _create_staging_views(staged)
    for role in sources:
        staged.row_counts[role] = _count(staged, f"stg_{role}")
        if staged.row_counts[role] == 0:
            raise DataError(HEADER_ONLY.format(source=sources[role].label))
    check_id_types(staged)  # after the counts: a header-only CSV's columns are typed as text
    check_score_type(staged)
    staged.sha256 = {role: sha256_of(source) for role, source in sources.items()}
    staged.provenance = _provenance(con, present["predictions"])
    return staged


# Rows per id bucket when a partition task joins or groups its inputs bucket by bucket: DuckDB's hash tables
# (the joins, ids grouped for the uniqueness check) then hold this many rows whatever the partition's size, so
# a Dask worker's memory stays flat as partitions grow (issue 13); each bucket rescans the files.
ROWS_PER_BUCKET = 500_000


def id_buckets(staged: Staged) -> int:
    """How many hash buckets of ids the staged inputs' joins run in (1: the inputs are small enough)."""
    return max(1, -(-max(staged.row_counts.values(), default=0) // ROWS_PER_BUCKET))


def restrict_to_bucket(staged: Staged, bucket: int, buckets: int) -> None:
    """Point the ``src_*`` views (and so ``stg_*``, ``joined`` and ``matched``) at the rows whose id hashes to
    ``bucket`` of ``buckets``: one person's rows in every input fall in the same bucket, so joins and cubes of
    the buckets add up to those of the whole inputs. The whole inputs stay as the ``whole_*`` views."""
    id_column = quote_identifier(staged.policy.columns.id)
    for role in staged.sources:
        whole, source = f"whole_{role}", f"src_{role}"  # fixed names
        known = staged.con.sql("select 1 from duckdb_views() where view_name = $name", params={"name": whole})
        if not known.fetchall():  # first bucket: keep the whole input under its own name
            staged.con.execute(f"alter view {source} rename to {whole}")
        filtered = f"select * from {whole} where hash({id_column}) % {int(buckets)} = {int(bucket)}"
        _create_view(staged.con, source, filtered)


def _checked_columns(
    con: duckdb.DuckDBPyConnection,
    policy: Policy,
    sources: dict[str, Source],
    present: dict[str, list[str]],
    *,
    labels_absent: bool = False,
) -> Staged:
    """The staged inputs' shape, once every column the policy names is found in its input."""
    cols = policy.columns
    pred_cols = present["predictions"]
    _require(cols.id, pred_cols, sources["predictions"], "columns.id")
    has_score, has_y_pred = cols.score in pred_cols, cols.y_pred in pred_cols
    ranking_columns = []
    if kind_of(policy.task).ranked_lists:  # a ranking's output is each item's list and position, not a score
        _require(cols.list_id, pred_cols, sources["predictions"], "columns.list_id")
        _require(cols.rank, pred_cols, sources["predictions"], "columns.rank")
        ranking_columns = [cols.list_id, cols.rank]
    elif not (has_score or has_y_pred):
        raise DataError(
            f"{sources['predictions'].label} has neither the prediction column {cols.y_pred!r} nor the score "
            f"column {cols.score!r}; columns present: {pred_cols}. Set columns.y_pred or columns.score in the "
            "policy to the column holding the model's output"
        )
    _require(cols.id, present["labels"], sources["labels"], "columns.id")
    if not labels_absent:
        _require(cols.y_true, present["labels"], sources["labels"], "columns.y_true")
    attr_cols = present["attributes"]
    _require(cols.id, attr_cols, sources["attributes"], "columns.id")
    inferred = proxy_attribute(policy)
    read_attributes = []
    for name in policy.attribute_names:
        if name == inferred and name not in attr_cols:
            continue  # the proxy adds it after alignment
        _require(name, attr_cols, sources["attributes"], f"sensitive_attributes (name: {name})")
        read_attributes.append(name)
    return Staged(
        con=con,
        policy=policy,
        sources=sources,
        input_columns={"id": cols.id, "y_true": cols.y_true, "y_pred": cols.y_pred, "score": cols.score},
        attributes=read_attributes,
        passthrough=_proxy_columns(policy, attr_cols, exclude={cols.id, *read_attributes}),
        has_score=has_score,
        has_y_pred=has_y_pred,
        ranking_columns=ranking_columns,
        weight_role=weight_role_of(policy, sources, present),
        labels_absent=labels_absent,
    )


# Where a weight column is looked for, in order: the first input that has it holds the weights.
def _ranking_columns(staged: Staged, prefix: str = "") -> str:
    """The ranking columns as a fragment continuing a select list (empty for every other task)."""
    return "".join(f",\n        {prefix}{quote_identifier(c)}" for c in staged.ranking_columns)


def _create_staging_views(staged: Staged) -> None:
    """The ``stg_*`` views: each input's id as ``id``, every other column under the policy's name for it."""
    cols = staged.policy.columns
    id_q = quote_identifier(cols.id)
    score, y_pred, y_true = (quote_identifier(c) for c in (cols.score, cols.y_pred, cols.y_true))
    predictions = render_sql(
        "stg_predictions",
        id_column=id_q,
        score_value=score if staged.has_score else "cast(null as double)",
        score_column=score,
        y_pred_value=y_pred if staged.has_y_pred else "null",
        y_pred_column=y_pred,
        ranking_columns=_ranking_columns(staged),
        weight_column=weight_column(staged, "predictions"),
    )
    attribute_list = [f"cast({quote_identifier(a)} as varchar) as {quote_identifier(a)}" for a in staged.attributes]
    attribute_list += [quote_identifier(c) for c in staged.passthrough]
    views = {
        "stg_predictions": predictions,
        "stg_labels": render_sql(
            "stg_no_labels" if staged.labels_absent else "stg_labels",
            id_column=id_q,
            y_true_column=y_true,
            weight_column=weight_column(staged, "labels"),
        ),
        "stg_attributes": render_sql(
            "stg_attributes",
            id_column=id_q,
            attribute_columns=_columns(attribute_list),
            weight_column=weight_column(staged, "attributes"),
        ),
    }
    for name, sql in views.items():
        _create_view(staged.con, name, sql)


@task(name="align", cache_policy=NO_CACHE)
def align_inputs(staged: Staged) -> Aligned:
    """Join the staged inputs, report the join, and return the aligned rows (the policy's column names).

    One join, streamed straight into Arrow (``sql/matched.sql``); the report is an aggregate over that Arrow
    result, and ``sql/aligned.sql`` then applies each attribute's missing-value rule (a copy made only when
    a value is actually missing).
    """
    matched = _matched_rows(staged)
    report = _join_report(staged, matched)
    table = _apply_missing_rules(staged, matched, report)
    report["aligned_rows"] = table.num_rows
    report["excluded_for_missing_attributes"] = report["matched"] - table.num_rows
    check_weights_joined(staged, table)
    if table.num_rows == 0:
        raise DataError(
            f"no rows are left after leaving out people with missing attribute values ({staged.attributes}); "
            "set missing: unknown on those attributes in the policy to audit them as their own group"
        )
    return Aligned(table=table, join_report=report, group_sizes=_group_sizes(staged, table))


def _matched_rows(staged: Staged) -> pa.Table:
    """The people with a prediction and a label, values cast, attributes as given (``sql/matched.sql``)."""
    sql, params = _matched_sql(staged)
    return _run(staged, lambda: staged.con.sql(sql, params=params).to_arrow_table())


def matched_relation(staged: Staged) -> str:
    """The matched rows as the view ``matched`` (not pulled: DuckDB streams it), and a SELECT of it.

    The streaming audit cubes this relation inside DuckDB; missing attribute values are still null in it,
    and the cube applies each attribute's missing-value rule as :func:`fairgate.build_cube` does.
    """
    sql, params = _matched_sql(staged)
    relation = staged.con.sql(sql, params=params)
    relation.create_view("matched", replace=True)
    drop = {"has_attributes", "_none"} | (set() if staged.has_score else {staged.policy.columns.score})
    kept = [quote_identifier(c) for c in relation.columns if c not in drop]
    return f"select {', '.join(kept)} from matched"


def _matched_sql(staged: Staged) -> tuple[str, dict[str, Any]]:
    con, cols = staged.con, staged.policy.columns
    columns = [quote_identifier(c) for c in (*staged.attributes, *staged.passthrough)]
    names = {
        "y_true_column": quote_identifier(cols.y_true),
        "y_pred_column": quote_identifier(cols.y_pred),
        "score_column": quote_identifier(cols.score),
    }
    joined_sql = render_sql(
        "joined",
        attribute_columns=_columns(f"attributes.{c}" for c in columns),
        ranking_columns=_ranking_columns(staged, "predictions."),
        weight_column=weight_column(staged, staged.weight_role or "", f"{staged.weight_role}."),
        **names,
    )
    _create_view(con, "joined", joined_sql)
    binary = kind_of(staged.policy.task).binary_outcomes  # other kinds keep labels and predictions as given
    matched_sql = render_sql(
        "matched",
        attribute_columns=_columns(columns),
        y_true_value=binary_value(con, "stg_labels", names["y_true_column"]) if binary else names["y_true_column"],
        y_pred_value=binary_value(con, "stg_predictions", names["y_pred_column"]) if binary else names["y_pred_column"],
        y_pred_fallback=f"cast({names['score_column']} >= $decision_threshold as tinyint)" if binary else "null",
        ranking_columns=_ranking_columns(staged),
        weight_value=weight_value(staged),
        **names,
    )
    return matched_sql, ({"decision_threshold": cols.decision_threshold} if binary else {})


def join_report(staged: Staged) -> dict[str, Any]:
    """The join report over the ``matched`` view (the streaming audit: the rows stay in DuckDB)."""
    return _join_report(staged, None)


def _join_report(staged: Staged, matched: pa.Table | None) -> dict[str, Any]:
    """How the inputs matched on id, and the missing values per attribute with the rule applied to them."""
    policy = staged.policy
    missing_counts = [
        f"count(*) filter (where {quote_identifier(a)} is null) as {quote_identifier(a)}" for a in staged.attributes
    ]
    report_sql = render_sql("join_report", missing_counts=_columns(missing_counts, empty="0 as _none"))
    params = {"n_predictions": staged.row_counts["predictions"], "n_labels": staged.row_counts["labels"]}
    values = _one_row(staged.con, report_sql, params, matched=matched)
    counted = ("matched", "predictions_without_labels", "labels_without_predictions", "people_without_attributes")
    report: dict[str, Any] = {k: int(values[k]) for k in counted}
    if report["matched"] == 0:
        raise DataError(
            f"no id of {staged.sources['predictions'].label} matches an id of {staged.sources['labels'].label} "
            f"(columns {policy.columns.id!r}); check that both files describe the same people and the same id"
        )
    report["missing_attribute_values"] = {}
    for name in staged.attributes:
        attribute = policy.attribute(name)
        report["missing_attribute_values"][name] = {
            "count": int(values[name]),
            "handling": attribute.missing,
            "unknown_label": attribute.unknown_label if attribute.missing == "unknown" else None,
        }
    return report


def _apply_missing_rules(staged: Staged, matched: pa.Table, report: dict[str, Any]) -> pa.Table:
    """The aligned rows (``sql/aligned.sql``): each attribute's missing-value rule applied, helper columns gone.

    Without a missing value the rules change nothing, and the matched rows are kept as they are (no copy).
    """
    keep = [c for c in matched.column_names if c not in {"has_attributes", "_none"}]
    if not staged.has_score:
        keep.remove(staged.policy.columns.score)
    missing = {name for name, entry in report["missing_attribute_values"].items() if entry["count"]}
    if not missing:
        return matched.select(keep)
    columns: list[str] = []
    kept: list[str] = []
    params: dict[str, str] = {}  # unknown labels are values: bound, never spliced into the SQL
    for column in keep:
        quoted = quote_identifier(column)
        attribute = staged.policy.attribute(column) if column in missing else None
        if attribute is not None and attribute.missing == "unknown":
            label = f"unknown_{len(params)}"
            params[label] = attribute.unknown_label
            quoted = f"coalesce({quoted}, ${label}) as {quoted}"
        elif attribute is not None:
            kept.append(f"{quoted} is not null")
        columns.append(quoted)
    sql = render_sql("aligned", columns=_columns(columns), kept=" and ".join(kept) or "true")
    staged.con.register("matched", matched)
    try:
        return staged.con.sql(sql, params=params).to_arrow_table()
    finally:
        staged.con.unregister("matched")


def sort_group_sizes(staged: Staged, sizes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Group sizes in the report's order: attributes in policy order, largest group first within each."""
    order = {a: i for i, a in enumerate(staged.attributes)}
    return sorted(sizes, key=lambda s: (order[s["attribute"]], -s["n"], s["group"]))


def _group_sizes(staged: Staged, table: pa.Table) -> list[dict[str, Any]]:
    """Rows per (attribute, group) among the aligned rows, largest group first within each attribute."""
    if not staged.attributes:
        return []
    quoted = [quote_identifier(a) for a in staged.attributes]
    group_sql = render_sql(
        "group_sizes", attribute_columns=", ".join(quoted), grouping_sets=", ".join(f"({q})" for q in quoted)
    )
    staged.con.register("aligned", table)
    try:
        rows = staged.con.execute(group_sql).fetchall()
    finally:
        staged.con.unregister("aligned")
    sizes: list[dict[str, Any]] = []
    for *group_values, n in rows:
        # Exactly one attribute is set per grouping set (aligned attributes hold no nulls).
        position = next(i for i, v in enumerate(group_values) if v is not None)
        sizes.append({"attribute": staged.attributes[position], "group": group_values[position], "n": int(n)})
    return sort_group_sizes(staged, sizes)


def _one_row(
    con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, Any], *, matched: pa.Table | None
) -> dict[str, Any]:
    """The single row of an aggregate over the matched rows (an Arrow table, or the ``matched`` view)."""
    if matched is not None:
        con.register("matched", matched)
    try:
        cursor = con.execute(sql, params)
        names = [d[0] for d in cursor.description]
        return dict(zip(names, cursor.fetchall()[0], strict=True))
    finally:
        if matched is not None:
            con.unregister("matched")


def _columns(items: Any, empty: str = "null as _none") -> str:
    """A column list for a SQL placeholder; a placeholder column when there is none (SQL needs one)."""
    return _LIST.join(items) or empty


PROVENANCE_COLUMNS = ("model_name", "model_version", "timestamp")


def _provenance(con: duckdb.DuckDBPyConnection, present: list[str]) -> list[dict[str, Any]]:
    """Which model(s) and time span the predictions input names, from its optional provenance columns."""
    if not set(PROVENANCE_COLUMNS) & set(present):
        return []
    fragments = {
        "model_name": "cast(model_name as varchar)" if "model_name" in present else "null",
        "model_version": "cast(model_version as varchar)" if "model_version" in present else "null",
        "first_timestamp": "cast(min(timestamp) as varchar)" if "timestamp" in present else "null",
        "last_timestamp": "cast(max(timestamp) as varchar)" if "timestamp" in present else "null",
    }
    relation = con.sql(render_sql("prediction_provenance", **fragments)).limit(100)
    return [dict(zip(relation.columns, row, strict=True)) for row in relation.fetchall()]


def release(staged: Staged) -> None:
    """Close the inputs' DuckDB connection once the aligned rows are in Arrow (frees DuckDB's buffers before
    the engine builds the cube; at 10M rows this and :func:`release_rows` keep the run under 3 GB)."""
    staged.con.close()


def release_rows(aligned: Aligned) -> None:
    """Drop the aligned rows once the cube holds what the metrics need (the join report stays)."""
    aligned.table = aligned.table.schema.empty_table()


def _proxy_wanted(policy: Policy) -> list[str]:
    """Attribute-file columns the proxy reads (names, zip codes, model inputs)."""
    if policy.proxy is None:
        return []
    wanted = [v for v in policy.proxy.columns.model_dump().values() if isinstance(v, str)]
    features = getattr(policy.proxy, "proxy_features", None)
    wanted += list(getattr(features, "columns", []) or [])
    return list(dict.fromkeys(wanted))


def _proxy_columns(policy: Policy, present: list[str], exclude: set[str]) -> list[str]:
    """Attribute-file columns the proxy reads, when they are present."""
    return [c for c in _proxy_wanted(policy) if c in present and c not in exclude]


def attribute_file_columns(policy: Policy) -> set[str]:
    """Every column the audit may read from the attributes input: the id, the sensitive attributes, the weight
    and the proxy's inputs (staging reads nothing else from it, stg_attributes.sql)."""
    weight = [policy.columns.weight] if policy.columns.weight is not None else []
    return {policy.columns.id, *policy.attribute_names, *weight, *_proxy_wanted(policy)}


def _require(column: str, present: list[str], source: Source, setting: str) -> None:
    if column not in present:
        fix = f"Rename the column in the file, or set {setting} in the policy to the column's name"
        raise DataError(MISSING_COLUMN.format(column=column, source=source.label, present=present, fix=fix))


def _create_view(con: duckdb.DuckDBPyConnection, name: str, sql: str) -> None:
    con.sql(sql).create_view(name, replace=True)


def _count(staged: Staged, view: str) -> int:
    row = _run(staged, lambda: staged.con.execute(f"select count(*) from {view}").fetchall()[0])  # view: fixed name
    return int(row[0]) if row else 0


def _run(staged: Staged, action: Any) -> Any:
    """Run a query; a scan error (a broken CSV row far into a file) becomes a DataError naming the file."""
    try:
        return action()
    except duckdb.Error as exc:
        raise explain_scan_error(list(staged.sources.values()), exc) from None


# ------------------------------------------------------------------------------- several models, one reading
_HELD = ("labels", "attributes")


def hold_shared_inputs(staged: Staged) -> None:
    """Read the labels and attributes into the staging connection once (DuckDB tables behind their views), so
    that aligning several models' predictions against them reads their files once (``fairgate compare``)."""
    for role in _HELD:
        view, table = f"src_{role}", f"held_{role}"
        _run(staged, lambda v=view, t=table: staged.con.execute(f"create table {t} as select * from {v}"))  # fixed
        _create_view(staged.con, view, f"select * from {table}")  # fixed names


@task(name="stage predictions", cache_policy=NO_CACHE)
def restage_predictions(staged: Staged, predictions: str) -> Staged:
    """Another model's predictions staged beside the same (held) labels and attributes, in the same connection.

    The returned ``Staged`` shares the connection: validate it with ``roles=("predictions",)`` and align it
    before staging the next one (the ``stg_predictions`` view is replaced). Closed by :func:`release` on the
    first ``Staged``.
    """
    source = parse_source("predictions", predictions)
    present = register_source(staged.con, source, "src_predictions", id_column=staged.policy.columns.id)
    cols = staged.policy.columns
    _require(cols.id, present, source, "columns.id")
    has_score, has_y_pred = cols.score in present, cols.y_pred in present
    if not (has_score or has_y_pred):
        raise DataError(
            f"{source.label} has neither the prediction column {cols.y_pred!r} nor the score column {cols.score!r}; "
            f"columns present: {present}. Every compared model's predictions need the same column names"
        )
    restaged = Staged(
        con=staged.con,
        policy=staged.policy,
        sources={**staged.sources, "predictions": source},
        input_columns=staged.input_columns,
        attributes=staged.attributes,
        passthrough=staged.passthrough,
        has_score=has_score,
        has_y_pred=has_y_pred,
        row_counts=dict(staged.row_counts),
        sha256=dict(staged.sha256),
    )
    _create_staging_views(restaged)
    restaged.row_counts["predictions"] = _count(restaged, "stg_predictions")
    if restaged.row_counts["predictions"] == 0:
        raise DataError(HEADER_ONLY.format(source=source.label))
    check_id_types(restaged)
    check_score_type(restaged)
    restaged.sha256["predictions"] = sha256_of(source)
    restaged.provenance = _provenance(staged.con, present)
    return restaged
