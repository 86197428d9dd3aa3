"""VALIDATE columns that must hold finite numbers: regression labels and predictions, and the weight column of
every kind of audit (``columns.weight``: finite and >= 0).

Great Expectations judges, per column, the rows DuckDB finds that are *not* acceptable numbers
(``sql/numeric_violations.sql``: one scan, at most a few thousand rows handed over, with exact totals), as
tasks/validate.py does for scores: a missing value, text that is not a number, NaN, infinity and (with a lower
bound, as for weights) a value below it each fail an expectation (not null; between the bound and the largest
finite double). A failure stops the audit (exit 2) naming the file, the column, how many rows of each kind, an
example and the fix.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from fairgate.errors import DataError
from tasks.align import Staged
from tasks.sql import quote_identifier, render_sql
from tasks.validate import Validation, _gx, _plain, _safe, _validate_frame, _violations, critical_check

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

    Every kind of audit runs this check (tasks/validate.py, ``validate_inputs``), so binary, multiclass,
    regression and ranking weights are refused with the same message.
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
    gx = _gx()
    # The bound is fixed by the caller (0 for weights), never a value from the policy or the data.
    below = "false" if minimum is None else f"value < {float(minimum)!r}"
    sql = render_sql("numeric_violations", column=quote_identifier(column), relation=f"stg_{role}", below=below)
    found = _violations(staged, sql)
    expectations = [
        gx.expectations.ExpectColumnValuesToNotBeNull(column="value"),
        gx.expectations.ExpectColumnValuesToBeBetween(
            column="value", min_value=-_LARGEST if minimum is None else minimum, max_value=_LARGEST
        ),
    ]
    result = _validate_frame(f"{role}_{_safe(suite)}_finite", found, expectations, "COMPLETE")
    _collect(validation, staged, role, column, found, result, minimum, suite)


def _collect(
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
    example = _plain(found["raw_value"].iloc[0]) if len(found) else None
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
            example="(empty)" if example is None else _plain(example),
            fix=fixes[0].upper() + fixes[1:] + ".",
        )
    )
