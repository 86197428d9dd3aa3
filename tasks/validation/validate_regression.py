"""VALIDATE for ``task: regression``: labels and predictions are finite numbers, none missing.

The expectations are those of every finite-number column (``expect_finite_numbers`` in tasks/validation/validate.py: GE
on the rows DuckDB finds that are not finite numbers): a missing value, text that is not a number, NaN and
infinity each fail. Scores are not needed by a regression audit. A failure stops the audit (exit 2) naming the
file, the column, how many rows, an example and the fix.
"""

from __future__ import annotations

from fairgate.errors import DataError
from tasks.inputs.staged import Staged
from tasks.validation.validate import Validation, expect_finite_numbers

NO_PREDICTIONS = (
    "{source} has no column {column!r}: a regression audit needs the predicted value of every row "
    "(set columns.y_pred in the policy to its name)"
)


def validate_regression(staged: Staged, validation: Validation, roles: tuple[str, ...]) -> None:
    """Expect y_true (labels) and y_pred (predictions) to be finite numbers; raise DataError if not."""
    cols = staged.policy.columns
    if "predictions" in roles and not staged.has_y_pred:
        raise DataError(NO_PREDICTIONS.format(source=staged.sources["predictions"].label, column=cols.y_pred))
    for role, suite, column in (("labels", "y_true", cols.y_true), ("predictions", "y_pred", cols.y_pred)):
        if role in roles:
            expect_finite_numbers(staged, validation, role, suite, column)
