"""Errors fairgate raises for bad input or configuration.

Every error carries a message that names what is wrong and how to fix it; the CLI prints the message
(no traceback) and exits with code 2. Message templates are module constants, as in Fairlearn.
"""

from __future__ import annotations

_UNKNOWN_METRIC = "unknown metric {name!r}{where}; use one of: {known}"
_MISSING_COLUMN = "column {column!r} is missing from {source}; columns present: {present}. {fix}"
_EMPTY_DATA = "{source} has no rows; an audit needs at least one row with a prediction and a label"
_NOT_BINARY = (
    "column {column!r} in {source} must be binary (0/1 or true/false); found {example!r} in {count} row(s). {fix}"
)
_BAD_SCORE = "column {column!r} in {source} must hold finite scores in [0, 1]; found {example!r} in {count} row(s)"


class FairgateError(Exception):
    """Base class: bad input or configuration. The CLI maps it to exit code 2."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class PolicyError(FairgateError):
    """The policy file is invalid (unknown key, bad threshold, unknown group, ...)."""


class DataError(FairgateError):
    """The audited data is unusable as given (missing column, non-binary label, ...)."""
