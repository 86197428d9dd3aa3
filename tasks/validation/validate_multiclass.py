"""VALIDATE for ``task: multiclass``: labels and predictions are among the declared ``multiclass.classes``.

Great Expectations judges each column's *value counts* (DuckDB, ``sql/value_counts.sql``: a few rows whatever
the row count), as tasks/validation/validate.py does for binary labels: values not null, values in the declared set. A
number read as a float (1.0 from a CSV or pandas) counts as its integer text ("1"), as the multiclass cube reads
it. An undeclared class stops the audit (exit 2) naming it, its rows and the fix.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from fairgate.errors import DataError
from fairgate.policy.core import Policy
from tasks.inputs.staged import Staged
from tasks.validation.gx_suite import expect, plain_value, run_suite, suite_name
from tasks.validation.validate import Validation, critical_check, value_counts

_INTEGRAL_FLOAT = re.compile(r"^(-?\d+)\.0+$")

UNDECLARED = (
    "column {column!r} in {source} holds {example!r} in {count} row(s), which is not among the declared classes "
    "{classes} (undeclared: {undeclared}); add it to multiclass.classes in the policy, or recode the data"
)
MISSING = (
    "column {column!r} in {source} has no value in {count} row(s); every row needs a class among {classes}: "
    "fill in or drop those rows"
)


def validate_multiclass(staged: Staged, validation: Validation, roles: tuple[str, ...]) -> None:
    """Expect y_true (labels) and y_pred (predictions) among the declared classes; raise DataError if not."""
    policy: Policy = staged.policy
    if policy.multiclass is None:  # Policy guarantees the section with task: multiclass
        raise DataError("task: multiclass needs a multiclass: section declaring the classes")
    classes = list(policy.multiclass.classes)
    cols = policy.columns
    columns = [("labels", "y_true", cols.y_true)]
    if "predictions" in roles and not staged.has_y_pred:
        source = staged.sources["predictions"].label
        raise DataError(
            f"{source} has no column {cols.y_pred!r}: a multiclass audit needs the predicted class of every row "
            "(set columns.y_pred in the policy to its name)"
        )
    columns.append(("predictions", "y_pred", cols.y_pred))
    for role, suite, column in columns:
        if role not in roles:
            continue
        counts = _as_labels(value_counts(staged, f"stg_{role}", column, lowercase=False))
        expectations = [
            expect.ColumnValuesToNotBeNull(column="value"),
            expect.ColumnValuesToBeInSet(column="value", value_set=classes),
        ]
        result = run_suite(f"{role}_{suite_name(suite)}_classes", counts, expectations, "COMPLETE")
        _collect(validation, staged, role, column, counts, result, classes)


def _as_labels(counts: pd.DataFrame) -> pd.DataFrame:
    """Integral floats as their integer text ("1.0" -> "1"), counts of equal labels summed."""
    labels = counts["value"].map(lambda v: _INTEGRAL_FLOAT.sub(r"\1", v) if isinstance(v, str) else v)
    frame = counts.assign(value=labels)
    return frame.groupby("value", dropna=False, sort=False, as_index=False)["n"].sum()


def _collect(
    validation: Validation,
    staged: Staged,
    role: str,
    column: str,
    counts: pd.DataFrame,
    result: Any,
    classes: list[str],
) -> None:
    """Record each expectation; on failure raise a DataError naming the class, its rows and the fix."""
    validation.ge_results.append(result.to_json_dict())
    source = staged.sources[role].label
    for outcome in result.results:
        config = outcome.expectation_config
        indexes = outcome.result.get("unexpected_index_list") or []
        failing = counts.loc[indexes] if indexes else counts.iloc[0:0]
        count = int(failing["n"].sum())
        example = plain_value(failing.iloc[0]["value"]) if len(failing) else None
        validation.checks.append(critical_check(source, column, outcome, count, example))
        if outcome.success:
            continue
        if config.type == "expect_column_values_to_not_be_null":
            raise DataError(MISSING.format(column=column, source=source, count=count, classes=classes))
        undeclared = [str(plain_value(v)) for v in failing["value"].tolist()]
        raise DataError(
            UNDECLARED.format(
                column=column,
                source=source,
                example=example,
                count=int(failing.iloc[0]["n"]) if len(failing) else 0,
                classes=classes,
                undeclared=undeclared[:5],
            )
        )
