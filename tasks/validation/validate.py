"""VALIDATE: Great Expectations suites on the staged inputs and on the aligned rows, before any metric.

How it stays fast at 10M rows (docs/concepts/pipeline.md): GE never sees a default pandas copy of the data.

* Row-level expectations (ids unique and non-null, scores finite and in [0, 1]) run on a pandas frame of just
  those one or two columns, NumPy-backed (ids as int64 where the input's ids are integers, else Arrow strings).
* Set-membership expectations (labels and predictions binary, attribute values declared by the policy) run on
  the column's *value counts*, computed by DuckDB (``sql/value_counts.sql``): a few rows per column whatever the
  row count. GE judges each distinct value; the row count of a failing value comes from its ``n``.
* Finite-number columns (every task's weight column, finite and >= 0; regression labels and predictions) run on
  the rows DuckDB finds violating (``sql/numeric_violations.sql``), with exact totals per kind of violation.
* Group sizes are checked on ``sql/group_sizes.sql`` with severity ``warning``: a small group is reported as
  insufficient (left out of the judgement, DESIGN.md), it does not stop the audit.

A failed critical expectation raises :class:`fairgate.errors.DataError` naming the file, the column, the number
of rows and an example value. The validation results (GE's own JSON) go into the audit record.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from prefect import task
from prefect.cache_policies import NO_CACHE

from fairgate.engine.kinds import kind_of
from fairgate.engine.text import ValueLabels, group_name, policy_labels
from fairgate.errors import VALIDATION_FAILED, DataError
from tasks.inputs.sql import quote_identifier, render_sql
from tasks.inputs.staged import Aligned, Staged
from tasks.validation.gx_suite import expect, great_expectations_version, plain_value, run_suite, suite_name

# Binary labels and predictions as text, lower-cased ("True" and "1.0" are binary too).
BINARY_TEXT = ["0", "1", "0.0", "1.0", "true", "false"]
# A bounded column with more distinct values than this is certainly not binary / categorical as declared.
_MAX_DISTINCT = 1000
_MAX_GROUP_WARNINGS = 10  # small groups named one by one on stderr before a summary line
# Violation samples handed to GE are capped; exact totals come with them from DuckDB.
_MAX_VIOLATIONS = 10_000


@dataclass
class Validation:
    """What validation found: one entry per expectation, plus GE's result documents."""

    checks: list[dict[str, Any]] = field(default_factory=list)
    ge_results: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def success(self) -> bool:
        return all(c["success"] or c["severity"] != "critical" for c in self.checks)

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine": "great_expectations",
            "great_expectations_version": great_expectations_version(),
            "success": self.success,
            "n_expectations": len(self.checks),
            "checks": self.checks,
            "warnings": self.warnings,
            "results": self.ge_results,
        }


@task(name="validate inputs", cache_policy=NO_CACHE)
def validate_inputs(
    staged: Staged, roles: tuple[str, ...] = ("predictions", "labels", "attributes"), id_buckets: int = 1
) -> Validation:
    """Validate the staged inputs (``roles``: all three by default); raise DataError on the first failed critical
    expectation. ``fairgate compare`` validates the shared labels and attributes once, then each further
    predictions input alone (``roles=("predictions",)``). ``id_buckets`` > 1 groups the ids for the uniqueness
    check one hash bucket at a time (a Dask partition task: DuckDB's hash table holds one bucket's ids)."""
    policy = staged.policy
    cols = policy.columns
    validation = Validation()
    for role in roles:
        duplicates = _id_duplicates(staged, role, id_buckets)
        expectations = [
            expect.ColumnValuesToNotBeNull(column="id"),
            expect.ColumnValuesToBeBetween(column="occurrences", max_value=1),
        ]
        result = run_suite(f"{role}_ids", duplicates, expectations, "COMPLETE")
        _collect(validation, staged, role, result, counts=None, frame=duplicates, column=cols.id)
    if staged.has_score and "predictions" in roles:
        scores = violation_sample(staged, render_sql("score_violations", score_column=quote_identifier(cols.score)))
        expectations = [
            expect.ColumnValuesToNotBeNull(column="score"),
            expect.ColumnValuesToBeBetween(column="score", min_value=0.0, max_value=1.0),
        ]
        result = run_suite("predictions_scores", scores, expectations, "COMPLETE")
        _collect(validation, staged, "predictions", result, counts=None, frame=scores, column=cols.score)
    if staged.weight_role in roles:  # every task's weights, with one message
        validate_weights(staged, validation)

    # (input, suite name, column, allowed values, required): suites keep the contract's names (y_true, y_pred).
    bounded: list[tuple[str, str, str, list[str] | None, bool]] = []
    # Binary labels here; every other kind's labels and predictions are validated by its own suite
    # (tasks/validate_<kind>.py, run by tasks/task_kinds.validate_kind after this one).
    if kind_of(policy.task).binary_outcomes:
        bounded.append(("labels", "y_true", cols.y_true, BINARY_TEXT, True))
        if staged.has_y_pred:
            bounded.append(("predictions", "y_pred", cols.y_pred, BINARY_TEXT, True))
    for name in staged.attributes:
        bounded.append(("attributes", name, name, policy.attribute(name).declared_values, False))
    for role, suite, column, allowed, required in bounded:
        if role not in roles:
            continue
        counts = value_counts(staged, f"stg_{role}", column, lowercase=allowed is BINARY_TEXT)
        expectations = []
        if required:
            expectations.append(expect.ColumnValuesToNotBeNull(column="value"))
        if allowed is not None:
            expectations.append(expect.ColumnValuesToBeInSet(column="value", value_set=allowed))
        if not expectations:
            continue
        result = run_suite(f"{role}_{suite_name(suite)}_values", counts, expectations, "COMPLETE")
        _collect(validation, staged, role, result, counts=counts, column=column)
    return validation


# Columns that must hold finite numbers: regression labels and predictions (tasks/validation/validate_regression.py)
# and the
# weight column of every kind of audit (``columns.weight``: finite and >= 0). GE judges the rows DuckDB finds that
# are not acceptable numbers (``sql/numeric_violations.sql``: one scan, at most _MAX_VIOLATIONS rows handed over,
# with exact totals): a missing value, text that is not a number, NaN, infinity and (with a lower bound, as for
# weights) a value below it each fail an expectation (not null; between the bound and the largest finite double).
_LARGEST = 1.7976931348623157e308  # the largest finite double: "between -it and it" means finite

NOT_FINITE = (
    "column {column!r}{meaning} in {source} must hold {what} in every row; {count} row(s) do not ({detail}; "
    "e.g. {example!r}). {fix}"
)
_FIXES = {
    "missing": "fill in the missing values or drop those rows",
    "not a number": "write plain numbers (a decimal point, no units or thousands separators)",
    "NaN": "replace NaN by a value or drop those rows",
    "infinite": "replace the infinite values or drop those rows",
    "negative": "a weight says how much a row counts (0 leaves it out): replace the negative weights",
}


def validate_weights(staged: Staged, validation: Validation) -> None:
    """Expect the policy's weight column (in the input holding it) finite and >= 0; raise DataError if not.

    Every kind of audit runs this check (in :func:`validate_inputs`), so binary, multiclass, regression and
    ranking weights are refused with the same message.
    """
    role, weight = staged.weight_role, staged.policy.columns.weight
    if role is None or weight is None:
        return
    expect_finite_numbers(staged, validation, role, "weight", weight, minimum=0.0)


def expect_finite_numbers(
    staged: Staged, validation: Validation, role: str, suite: str, column: str, *, minimum: float | None = None
) -> None:
    """Expect ``column`` of the staged input ``role`` to hold a finite number (>= ``minimum``) in every row.

    Each expectation's outcome goes into ``validation``; the first failing column raises a DataError with the
    rows of every kind of violation and their fixes.
    """
    # The bound is fixed by the caller (0 for weights), never a value from the policy or the data.
    below = "false" if minimum is None else f"value < {float(minimum)!r}"
    sql = render_sql("numeric_violations", column=quote_identifier(column), relation=f"stg_{role}", below=below)
    found = violation_sample(staged, sql)
    expectations = [
        expect.ColumnValuesToNotBeNull(column="value"),
        expect.ColumnValuesToBeBetween(
            column="value", min_value=-_LARGEST if minimum is None else minimum, max_value=_LARGEST
        ),
    ]
    result = run_suite(f"{role}_{suite_name(suite)}_finite", found, expectations, "COMPLETE")
    _collect_numbers(validation, staged, role, column, found, result, minimum, suite)


def _collect_numbers(
    validation: Validation,
    staged: Staged,
    role: str,
    column: str,
    found: pd.DataFrame,
    result: Any,
    minimum: float | None,
    suite: str,
) -> None:
    """Record each expectation; on failure raise a DataError with the rows of every kind and the fixes."""
    validation.ge_results.append(result.to_json_dict())
    source = staged.sources[role].label
    unexpected = int(found["violating_rows"].iloc[0]) if len(found) else 0
    example = plain_value(found["raw_value"].iloc[0]) if len(found) else None
    for outcome in result.results:
        validation.checks.append(critical_check(source, column, outcome, unexpected, example))
    if all(outcome.success for outcome in result.results):
        return
    kinds = found.drop_duplicates("kind").sort_values(["kind_rows", "kind"], ascending=[False, True])
    detail = ", ".join(f"{int(row.kind_rows)} {row.kind}" for row in kinds.itertuples())
    shown = found["raw_value"].dropna()  # an example that is there to see, when there is one
    example = shown.iloc[0] if len(shown) else None
    fixes = "; ".join(_FIXES[str(kind)] for kind in kinds["kind"])
    raise DataError(
        NOT_FINITE.format(
            column=column,
            meaning=" (weights)" if suite == "weight" else "",
            source=source,
            what="a finite number" if minimum is None else f"a finite number >= {minimum:g}",
            count=int(found["violating_rows"].iloc[0]),
            detail=detail,
            example="(empty)" if example is None else plain_value(example),
            fix=fixes[0].upper() + fixes[1:] + ".",
        )
    )


@task(name="validate aligned", cache_policy=NO_CACHE)
def validate_aligned(staged: Staged, aligned: Aligned, validation: Validation) -> Validation:
    """Group sizes against min_group_size (severity warning: small groups are reported, not fatal)."""
    minimum = staged.policy.intersectional_analysis.min_group_size
    if not aligned.group_sizes:
        return validation
    sizes = pd.DataFrame(aligned.group_sizes)
    expectation = expect.ColumnValuesToBeBetween(column="n", min_value=minimum, severity="warning")
    result = run_suite("group_sizes", sizes, [expectation], "COMPLETE")
    validation.ge_results.append(result.to_json_dict())
    small = sizes[sizes["n"] < minimum]
    validation.checks.append(
        {
            "input": "aligned rows",
            "column": "sensitive attribute groups",
            "expectation": "expect_column_values_to_be_between",
            "kwargs": {"column": "n", "min_value": minimum},
            "severity": "warning",
            "success": bool(result.success),
            "unexpected_count": len(small),
            "example": None if small.empty else f"{small.iloc[0]['attribute']}={small.iloc[0]['group']}",
        }
    )
    labels = policy_labels(staged.policy)
    for _, row in small.head(_MAX_GROUP_WARNINGS).iterrows():
        validation.warnings.append(small_group_warning(str(row["attribute"]), row["group"], minimum, labels))
    if len(small) > _MAX_GROUP_WARNINGS:
        # One line per group floods stderr when an attribute has thousands of small groups; the JSON has them all.
        validation.warnings.append(
            f"... and {len(small) - _MAX_GROUP_WARNINGS} more groups with fewer than min_group_size {minimum} rows "
            "(listed in the JSON document's diagnostics.insufficient_groups)"
        )
    return validation


def small_group_warning(attribute: str, value: Any, minimum: int, labels: ValueLabels | None = None) -> str:
    """The warning for a group under min_group_size, in words: the group by its one name (the policy's labels).

    No count: the reports print these lines, and a size may be one the small-cell rule hides (the groups' tables
    show each size under that rule; the JSON's diagnostics.insufficient_groups has them all).

    >>> small_group_warning("race", "Asian", 30)
    'race group Asian has fewer than min_group_size 30 rows: it is reported but left out of the judgement'
    >>> small_group_warning("sex", 2, 30, {"sex": {"2": "Female"}})[:20]
    'sex group Female has'
    """
    name = group_name({attribute: value}, labels=labels)
    return (
        f"{attribute} group {name} has fewer than min_group_size {minimum} rows: it is reported but left out of the "
        "judgement"
    )


def violation_sample(staged: Staged, sql: str) -> pd.DataFrame:
    """The candidate violations DuckDB selects in one scan (at most _MAX_VIOLATIONS rows), for GE to judge."""
    return staged.con.sql(sql, params={"max_rows": _MAX_VIOLATIONS}).to_df()


def _id_duplicates(staged: Staged, role: str, buckets: int) -> pd.DataFrame:
    """The ids of one input that are null or repeated, found bucket by bucket (an id's rows share a bucket;
    null ids hash alike too); at most _MAX_VIOLATIONS rows in all."""
    if buckets == 1:
        return violation_sample(staged, render_sql("id_duplicates", relation=f"stg_{role}"))
    frames = []
    for bucket in range(buckets):  # role and the bucket numbers: fixed names and integers
        relation = f"(select id from stg_{role} where hash(id) % {int(buckets)} = {int(bucket)})"
        frames.append(violation_sample(staged, render_sql("id_duplicates", relation=relation)))
    found = [frame for frame in frames if len(frame)]
    return pd.concat(found, ignore_index=True).head(_MAX_VIOLATIONS) if found else frames[0]


def value_counts(staged: Staged, view: str, column: str, *, lowercase: bool) -> pd.DataFrame:
    """Each distinct value of ``column`` in ``view`` with its rows ``n`` (at most _MAX_DISTINCT values), for GE."""
    sql = render_sql("value_counts", column=quote_identifier(column), relation=view)
    frame = staged.con.sql(sql).limit(_MAX_DISTINCT).to_df()
    if lowercase:
        frame["value"] = frame["value"].str.lower()
    return frame


def _collect(
    validation: Validation,
    staged: Staged,
    role: str,
    result: Any,
    *,
    counts: pd.DataFrame | None,
    column: str | None = None,
    frame: pd.DataFrame | None = None,
) -> None:
    """Record each expectation's outcome; raise a DataError naming file, column, rows and example on failure."""
    document = result.to_json_dict()
    validation.ge_results.append(document)
    source = staged.sources[role]
    for outcome in result.results:
        config = outcome.expectation_config
        input_column = column or ""
        unexpected, example = _unexpected(outcome.result, counts if counts is not None else frame, config.type)
        validation.checks.append(critical_check(source.label, input_column, outcome, unexpected, example))
        if not outcome.success:
            raise DataError(_failure_message(source.label, input_column, config.type, unexpected, example, staged))


def critical_check(source: str, column: str | None, outcome: Any, unexpected: int, example: Any) -> dict[str, Any]:
    """One expectation's outcome as an entry of the document's ``validation.checks``; critical: it stops the audit.

    Every suite (binary, each task's, the features input) records its outcomes with this.
    """
    config = outcome.expectation_config
    return {
        "input": source,
        "column": column,
        "expectation": config.type,
        "kwargs": {k: v for k, v in config.kwargs.items() if k != "batch_id"},
        "severity": "critical",
        "success": bool(outcome.success),
        "unexpected_count": unexpected,
        "example": example,
    }


def _unexpected(result: dict[str, Any], frame: pd.DataFrame | None, expectation: str) -> tuple[int, Any]:
    """Rows failing, and one failing value, from GE's unexpected index list over a DuckDB-computed table.

    value counts (``n``): the failing values' rows summed; id duplicates (``occurrences``): the failing ids'
    occurrences summed; score violations: GE's count, or DuckDB's exact total when the sample was capped.
    """
    indexes = result.get("unexpected_index_list") or []
    if frame is None or not indexes:
        examples = result.get("partial_unexpected_list") or []
        return int(result.get("unexpected_count") or 0), plain_value(examples[0] if examples else None)
    failing = frame.loc[indexes]
    if "n" in frame.columns:
        return int(failing["n"].sum()), plain_value(failing["value"].iloc[0])
    if "occurrences" in frame.columns:  # the column first: a row of mixed columns would make an integer id 1.0
        example = failing["id"].iloc[0]
        return int(failing["occurrences"].sum()), plain_value(None if pd.isna(example) else example)
    count = int(result.get("unexpected_count") or 0)
    if len(frame) >= _MAX_VIOLATIONS and "violating_rows" in frame.columns:
        count = max(count, int(frame["violating_rows"].iloc[0]))
    return count, plain_value(failing["score"].iloc[0])


def _failure_message(source: str, column: str, expectation: str, unexpected: int, example: Any, staged: Staged) -> str:
    is_id = column == staged.input_columns["id"]
    if expectation == "expect_column_values_to_not_be_null":
        what, fix = "has missing (null or NaN) values", "fill in the missing values or drop those rows"
    elif expectation == "expect_column_values_to_be_between" and is_id:
        what, fix = "has duplicate values", "each id may appear once per input; remove or merge the duplicate rows"
    elif expectation == "expect_column_values_to_be_between":
        what, fix = "has values outside [0, 1] (or infinite)", "scores must be probabilities; rescale or drop them"
    elif expectation == "expect_column_values_to_be_in_set":
        what = "has values outside the allowed set"
        fix = (
            "recode labels and predictions to 0/1"
            if column in (staged.input_columns["y_true"], staged.input_columns["y_pred"])
            else "declare the value under the attribute's values in the policy, or recode the data"
        )
    else:
        what, fix = f"fails {expectation}", "correct the input"
    return VALIDATION_FAILED.format(
        column=column, source=source, what=what, count=unexpected, example=example, expectation=expectation, fix=fix
    )
