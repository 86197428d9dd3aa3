"""VALIDATE for ``task: regression``: labels and predictions are finite numbers, none missing.

Great Expectations judges, per column, the rows DuckDB finds that are *not* finite numbers
(``sql/numeric_violations.sql``: one scan, at most a few thousand rows handed over, with exact totals), as
tasks/validate.py does for scores: a missing value, text that is not a number, NaN and infinity each fail an
expectation (not null; between the largest finite doubles). Scores are not needed by a regression audit. A
failure stops the audit (exit 2) naming the file, the column, how many rows, an example and the fix.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from fairgate.errors import DataError
from tasks.align import Staged
from tasks.gx_suite import load_great_expectations, plain_value, run_suite, suite_name
from tasks.sql import quote_identifier, render_sql
from tasks.validate import Validation, critical_check, violation_sample

_LARGEST = 1.7976931348623157e308  # the largest finite double: "between -it and it" means finite

NOT_FINITE = (
    "column {column!r} in {source} must hold a finite number in every row; {count} row(s) do not ({detail}; "
    "e.g. {example!r}). {fix}"
)
_FIXES = {
    "missing": "fill in the missing values or drop those rows",
    "not a number": "write plain numbers (a decimal point, no units or thousands separators)",
    "NaN": "replace NaN by a value or drop those rows",
    "infinite": "replace the infinite values or drop those rows",
}
NO_PREDICTIONS = (
    "{source} has no column {column!r}: a regression audit needs the predicted value of every row "
    "(set columns.y_pred in the policy to its name)"
)


def validate_regression(staged: Staged, validation: Validation, roles: tuple[str, ...]) -> None:
    """Expect y_true (labels) and y_pred (predictions) to be finite numbers; raise DataError if not."""
    cols = staged.policy.columns
    if "predictions" in roles and not staged.has_y_pred:
        raise DataError(NO_PREDICTIONS.format(source=staged.sources["predictions"].label, column=cols.y_pred))
    gx = load_great_expectations()
    for role, suite, column in (("labels", "y_true", cols.y_true), ("predictions", "y_pred", cols.y_pred)):
        if role not in roles:
            continue
        sql = render_sql("numeric_violations", column=quote_identifier(column), relation=f"stg_{role}")
        found = violation_sample(staged, sql)
        expectations = [
            gx.expectations.ExpectColumnValuesToNotBeNull(column="value"),
            gx.expectations.ExpectColumnValuesToBeBetween(column="value", min_value=-_LARGEST, max_value=_LARGEST),
        ]
        result = run_suite(f"{role}_{suite_name(suite)}_finite", found, expectations, "COMPLETE")
        _collect(validation, staged, role, column, found, result)


def _collect(validation: Validation, staged: Staged, role: str, column: str, found: pd.DataFrame, result: Any) -> None:
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
            source=source,
            count=int(found["violating_rows"].iloc[0]),
            detail=detail,
            example="(empty)" if example is None else plain_value(example),
            fix=fixes[0].upper() + fixes[1:] + ".",
        )
    )
