"""Individual fairness in the pipeline: read the features (and counterfactual decisions), validate, assess.

The fourth input, ``--features FILE``, holds the id column and numeric feature columns; ``--counterfactual
FILE`` holds the model's decisions for the same people with the sensitive attribute flipped (the prediction
column, or the score column, as in the predictions input). Both are read in their own DuckDB connection beside the
aligned rows (``audited_people``), validated with Great Expectations on DuckDB aggregates (features numeric, finite,
not null, ids unique, every audited id present; counterfactual ids exactly the audited ids, decisions binary) and
joined on id (``sql/individual_rows.sql``). Any failure is a DataError (exit 2) that names the file and the fix.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
from prefect import task
from prefect.cache_policies import NO_CACHE

from fairgate.errors import HEADER_ONLY, MISSING_COLUMN, DataError, FairgateError
from fairgate.policy.core import Policy
from fairgate.policy.individual import ALL_NUMERIC
from tasks.inputs.io import Source, parse_source, register_source, sha256_of
from tasks.inputs.sql import quote_identifier, render_sql
from tasks.validation.gx_suite import expect, run_suite
from tasks.validation.validate import BINARY_TEXT, Validation, critical_check

if TYPE_CHECKING:
    from fairgate.engine.individual import IndividualResult

_NUMERIC_PREFIXES = (
    *("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT"),
    *("DECIMAL", "DOUBLE", "FLOAT", "REAL"),
)
_LIST = ",\n        "


@dataclass
class IndividualRun:
    """What the individual-fairness step produced: the engine's result, its inputs' provenance, its checks."""

    result: IndividualResult
    inputs: dict[str, dict[str, Any]]
    validation: Validation = field(default_factory=Validation)


def check_individual_request(policy: Policy, features: str | None, counterfactual: str | None) -> None:
    """The inputs and the policy section must come together; refused before any computing (exit 2)."""
    section = policy.individual_fairness
    if features is None and counterfactual is not None:
        raise FairgateError("--counterfactual needs --features FILE as well (the people's features, joined on id)")
    if section is None and features is not None:
        raise FairgateError(
            "--features needs an individual_fairness section in the policy, e.g. "
            "individual_fairness: {features: all numeric, k: 5, min_consistency: 0.8}"
        )
    if section is not None and features is None:
        raise FairgateError(
            "the policy has an individual_fairness section: pass the people's features with --features FILE "
            "(an id column and numeric feature columns)"
        )
    if section is not None and policy.proxy is not None:
        raise FairgateError(
            "individual_fairness cannot be combined with a proxy section: the groups of a proxy attribute are "
            "probabilities, not one group per person. Give the attribute in the attributes input"
        )


@task(name="individual fairness", cache_policy=NO_CACHE)
def assess_individual_fairness(
    aligned: pa.Table, policy: Policy, features: str, counterfactual: str | None
) -> IndividualRun:
    """Read, validate and join the features (and counterfactual decisions) to the aligned rows; assess them."""
    con = duckdb.connect()
    try:
        return _assess(con, aligned, policy, features, counterfactual)
    finally:
        con.close()


def _assess(
    con: duckdb.DuckDBPyConnection, aligned: pa.Table, policy: Policy, features: str, counterfactual: str | None
) -> IndividualRun:
    # Imported here: scikit-learn takes seconds to load, and only audits with features need it.
    from fairgate.engine.individual import IndividualInputs, assess_individual

    cols = policy.columns
    attributes = [a for a in policy.attribute_names if a in aligned.column_names]
    people = aligned.select(["id", cols.y_pred, *attributes]).rename_columns(["id", "decision", *attributes])
    con.register("audited_people", people)
    validation = Validation()
    sources = {"features": parse_source("features", features)}
    names = _stage_features(con, policy, sources["features"], validation)
    if counterfactual is not None:
        sources["counterfactual"] = parse_source("counterfactual", counterfactual)
        _stage_counterfactual(con, policy, sources["counterfactual"], validation)
    rows = _individual_rows(con, attributes, len(names), counterfactual is not None)
    inputs = IndividualInputs(
        features=np.column_stack([rows[f"f{i}"].to_numpy(dtype=np.float64) for i in range(len(names))]),
        feature_names=names,
        decisions=rows["decision"].to_numpy(dtype=np.int64),
        attributes={a: _texts(rows[f"a{i}"]) for i, a in enumerate(attributes)},
        counterfactual=None if counterfactual is None else rows["counterfactual_decision"].to_numpy(dtype=np.int64),
    )
    try:
        result = assess_individual(inputs, policy, n_jobs=os.cpu_count())  # the neighbour search on every core
    except ValueError as exc:  # e.g. k larger than the number of people
        raise DataError(f"individual fairness cannot be computed: {exc}; lower individual_fairness.k") from None
    provenance = {
        role: {"source": source.label, "sha256": sha256_of(source), "rows": _count(con, f"stg_{role}")}
        for role, source in sources.items()
    }
    return IndividualRun(result, provenance, validation)


# ----------------------------------------------------------------------------------------------- features
def _stage_features(
    con: duckdb.DuckDBPyConnection, policy: Policy, source: Source, validation: Validation
) -> list[str]:
    """Create ``stg_features`` (id, f0, f1, ...) and validate it; return the feature names in order."""
    section = policy.individual_fairness
    assert section is not None
    present = register_source(con, source, "src_features", id_column=policy.columns.id)
    id_column = policy.columns.id
    _require(id_column, present, source, "columns.id")
    types = {
        c: str(t).upper() for c, t in zip(present, con.sql("select * from src_features limit 0").types, strict=True)
    }
    if section.features == ALL_NUMERIC:
        names = [c for c in present if c != id_column and _numeric(types[c])]
        if not names:
            raise DataError(
                f"{source.label} has no numeric column besides the id {id_column!r}; columns present: {present}. "
                "Give the people's numeric features (one column each)"
            )
    else:
        names = list(section.features)
        for name in names:
            _require(name, present, source, "individual_fairness.features")
    _expect_numeric(names, types, source, validation)
    columns = _LIST.join(f"{quote_identifier(name)} as f{i}" for i, name in enumerate(names))
    sql = render_sql("stg_features", id_column=quote_identifier(id_column), feature_columns=columns)
    con.sql(sql).create_view("stg_features", replace=True)
    if _count(con, "stg_features") == 0:
        raise DataError(HEADER_ONLY.format(source=source.label))
    _check_id_type(con, "stg_features", source)
    _expect_unique_ids(con, "stg_features", source, validation)
    _expect_finite(con, names, source, validation)
    _expect_coverage(con, "stg_features", source, validation, exact=False)
    return names


def _numeric(column_type: str) -> bool:
    return column_type.startswith(_NUMERIC_PREFIXES)


def _expect_numeric(names: list[str], types: dict[str, str], source: Source, validation: Validation) -> None:
    frame = pd.DataFrame({"feature": names, "type": ["number" if _numeric(types[n]) else types[n] for n in names]})
    expectation = expect.ColumnValuesToBeInSet(column="type", value_set=["number"])
    failing = frame[frame["type"] != "number"]
    _judge(
        validation,
        source,
        "features",
        frame,
        [expectation],
        lambda: (
            f"feature column {failing.iloc[0]['feature']!r} in {source.label} is read as "
            f"{failing.iloc[0]['type'].lower()}, not numbers. Fix: encode it as numbers (e.g. one 0/1 column per "
            "category) or leave it out of individual_fairness.features"
        ),
    )


def _expect_finite(con: duckdb.DuckDBPyConnection, names: list[str], source: Source, validation: Validation) -> None:
    aggregates = []
    for i in range(len(names)):
        column = f"f{i}"
        aggregates.append(f"count(*) filter (where {column} is null) as nulls_{i}")
        aggregates.append(f"count(*) filter (where not isfinite(cast({column} as double))) as non_finite_{i}")
    counts = con.sql(render_sql("feature_profile", aggregates=_LIST.join(aggregates))).fetchall()[0]
    frame = pd.DataFrame(
        {"feature": names, "nulls": counts[0::2], "non_finite": counts[1::2]},
    )
    expectations = [
        expect.ColumnValuesToBeBetween(column="nulls", max_value=0),
        expect.ColumnValuesToBeBetween(column="non_finite", max_value=0),
    ]

    def message() -> str:
        bad = frame[(frame["nulls"] > 0) | (frame["non_finite"] > 0)].iloc[0]
        return (
            f"feature column {bad['feature']!r} in {source.label} has {int(bad['nulls'])} missing and "
            f"{int(bad['non_finite'])} non-finite (NaN or infinite) value(s). Fix: fill or impute them, or leave "
            "the column out of individual_fairness.features; neighbours need a number in every feature"
        )

    _judge(validation, source, "features", frame, expectations, message)


# ----------------------------------------------------------------------------------------------- counterfactual
def _stage_counterfactual(
    con: duckdb.DuckDBPyConnection, policy: Policy, source: Source, validation: Validation
) -> None:
    """Create ``stg_counterfactual`` (id, y_pred as 0/1) and validate: binary decisions, exactly the audited ids."""
    cols = policy.columns
    present = register_source(con, source, "src_counterfactual", id_column=cols.id)
    _require(cols.id, present, source, "columns.id")
    if cols.y_pred in present:
        decision = quote_identifier(cols.y_pred)
        counts = con.sql(render_sql("value_counts", column=decision, relation="src_counterfactual")).to_df()
        counts["value"] = counts["value"].str.lower()
        expectations = [
            expect.ColumnValuesToNotBeNull(column="value"),
            expect.ColumnValuesToBeInSet(column="value", value_set=BINARY_TEXT),
        ]

        def message() -> str:
            bad = counts[~counts["value"].isin(BINARY_TEXT)].iloc[0]
            return (
                f"column {cols.y_pred!r} in {source.label} must be binary (0/1 or true/false) like the predictions; "
                f"found {bad['value']!r} in {int(bad['n'])} row(s). Fix: recode the counterfactual decisions to 0/1"
            )

        _judge(validation, source, "counterfactual", counts, expectations, message)
        sql_decision = f"cast(lower(cast({decision} as varchar)) in ('1', '1.0', 'true') as tinyint)"
    elif cols.score in present:
        sql_decision = f"cast(cast({quote_identifier(cols.score)} as double) >= $decision_threshold as tinyint)"
    else:
        raise DataError(
            f"{source.label} has neither the prediction column {cols.y_pred!r} nor the score column {cols.score!r}; "
            f"columns present: {present}. The counterfactual input holds the model's output like the predictions"
        )
    sql = render_sql("stg_counterfactual", id_column=quote_identifier(cols.id), decision=sql_decision)
    params = {"decision_threshold": cols.decision_threshold} if "$decision_threshold" in sql_decision else None
    con.sql(sql, params=params).create_view("stg_counterfactual", replace=True)
    _check_id_type(con, "stg_counterfactual", source)
    _expect_unique_ids(con, "stg_counterfactual", source, validation)
    _expect_coverage(con, "stg_counterfactual", source, validation, exact=True)


# ----------------------------------------------------------------------------------------------- ids
def _check_id_type(con: duckdb.DuckDBPyConnection, view: str, source: Source) -> None:
    """Ids are numbers here when they are numbers in the audited rows, text when text (never converted)."""
    kinds = [_numeric(str(con.sql(f"select id from {v} limit 0").types[0]).upper()) for v in (view, "audited_people")]
    if kinds[0] != kinds[1]:
        audited = "whole numbers" if kinds[1] else "text"
        raise DataError(
            f"the ids in {source.label} are not written like the predictions' ids ({audited}); fairgate does not "
            "convert ids (00001 and 1 would be the same person). Write them the same way in every input"
        )


def _expect_unique_ids(con: duckdb.DuckDBPyConnection, view: str, source: Source, validation: Validation) -> None:
    duplicates = con.sql(render_sql("id_duplicates", relation=view), params={"max_rows": 10_000}).to_df()
    expectations = [
        expect.ColumnValuesToNotBeNull(column="id"),
        expect.ColumnValuesToBeBetween(column="occurrences", max_value=1),
    ]

    def message() -> str:
        example = duplicates.iloc[0]["id"]
        return (
            f"the id column in {source.label} has a missing or repeated id (e.g. {example!r}, "
            f"{int(duplicates['occurrences'].sum())} rows). Fix: one row per person, each with an id"
        )

    _judge(validation, source, source.role, duplicates, expectations, message)


def _expect_coverage(
    con: duckdb.DuckDBPyConnection, view: str, source: Source, validation: Validation, *, exact: bool
) -> None:
    """Every audited id has a row (and, ``exact``, no other id appears)."""
    coverage = con.sql(render_sql("id_coverage", relation=view)).to_df()
    expectations = [expect.ColumnValuesToBeBetween(column="missing", max_value=0)]
    if exact:
        expectations.append(expect.ColumnValuesToBeBetween(column="extra", max_value=0))
    row = coverage.iloc[0]

    def message() -> str:
        if int(row["missing"]) > 0:
            return (
                f"{source.label} has no row for {int(row['missing'])} audited people (e.g. id "
                f"{row['missing_example']!r}). Fix: give a row for every id of the predictions that has a label"
            )
        return (
            f"{source.label} has {int(row['extra'])} ids that are not audited people (e.g. id "
            f"{row['extra_example']!r}). Fix: give the counterfactual decisions of exactly the audited people"
        )

    _judge(validation, source, source.role, coverage, expectations, message)


# ----------------------------------------------------------------------------------------------- helpers
def _individual_rows(
    con: duckdb.DuckDBPyConnection, attributes: list[str], n_features: int, with_counterfactual: bool
) -> pd.DataFrame:
    attribute_columns = _LIST.join(f"audited.{quote_identifier(a)} as a{i}" for i, a in enumerate(attributes))
    sql = render_sql(
        "individual_rows",
        attribute_columns=attribute_columns or "null as _no_attribute",
        feature_columns=_LIST.join(f"cast(features.f{i} as double) as f{i}" for i in range(n_features)),
        counterfactual_decision="counterfactual.y_pred" if with_counterfactual else "null",
        counterfactual_join="left join stg_counterfactual as counterfactual using (id)" if with_counterfactual else "",
    )
    return con.sql(sql).to_df()


def _texts(column: pd.Series) -> np.ndarray:
    """Attribute values as text, None where missing (left out of that attribute's groups)."""
    return np.array([None if pd.isna(v) else str(v) for v in column], dtype=object)


def _judge(
    validation: Validation, source: Source, role: str, frame: pd.DataFrame, expectations: list[Any], message: Any
) -> None:
    """Run one GE suite on a DuckDB-computed table; record it; raise a DataError with ``message()`` on failure."""
    result = run_suite(f"{role}_{len(validation.ge_results)}", frame, expectations, "COMPLETE")
    validation.ge_results.append(result.to_json_dict())
    for outcome in result.results:
        column = outcome.expectation_config.kwargs.get("column")
        unexpected = int(outcome.result.get("unexpected_count") or 0)
        validation.checks.append(critical_check(source.label, column, outcome, unexpected, None))
    if not result.success:
        raise DataError(f"validation failed: {message()} (Great Expectations)")


def _require(column: str, present: list[str], source: Source, setting: str) -> None:
    if column not in present:
        fix = f"Rename the column in the file, or set {setting} in the policy to the column's name"
        raise DataError(MISSING_COLUMN.format(column=column, source=source.label, present=present, fix=fix))


def _count(con: duckdb.DuckDBPyConnection, view: str) -> int:
    return int(con.execute(f"select count(*) from {view}").fetchall()[0][0])  # view: a fixed name
