"""Errors fairgate raises for bad input or configuration.

Also the message templates used in more than one place (or matched by tests).

Every error carries a message that names what is wrong and how to fix it. An invalid input raises a
:class:`FairgateError` subclass wherever it is found; the audit flow turns it into its ``InvalidInput`` Failed
state (in one place) and the CLI prints the message (no traceback) and exits with code 2. Message templates
are public module constants, as in Fairlearn, filled with ``str.format``.
"""

from __future__ import annotations

MISSING_COLUMN = "column {column!r} is missing from {source}; columns present: {present}. {fix}"
EMPTY_DATA = "{source} has no rows; an audit needs at least one row with a prediction and a label"
HEADER_ONLY = "{source} has a header but no rows; an audit needs at least one row per input"
NOT_BINARY = (
    "column {column!r} in {source} must be binary (0/1 or true/false); found {example!r} in {count} row(s). {fix}"
)
BAD_SCORE = "column {column!r} in {source} must hold finite scores in [0, 1]; found {example!r} in {count} row(s)"
FILE_NOT_FOUND = "--{role}: file {path!r} does not exist; check the path (relative to {cwd})"
EMPTY_FILE = "--{role}: file {path!r} is empty (0 bytes); an audit needs rows with a header"
MALFORMED_CSV = (
    "{source} is not a well-formed CSV file ({detail}). Every row needs as many comma-separated fields as the "
    "header; fix or remove the broken row"
)
NO_SUCH_TABLE = "{source}: no table {table!r} in {path}; tables present: {tables}"
VALIDATION_FAILED = (
    "validation failed: column {column!r} in {source} {what}: {count} row(s), e.g. {example!r} "
    "(Great Expectations: {expectation}). Fix: {fix}"
)
NO_TRAIL = "no audit trail at {path}; run an audit first, or pass --trail with the trail's path"


class FairgateError(Exception):
    """Base class: bad input or configuration. The CLI maps it to exit code 2."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class PolicyError(FairgateError):
    """The policy file is invalid (unknown key, bad threshold, unknown group, ...)."""


class DataError(FairgateError):
    """The audited data is unusable as given (missing column, non-binary label, ...)."""


# Policy file limits (fairgate/policy/loader.py and the ``limits:`` section; issue 10).
POLICY_DUPLICATE_KEY = (
    "{source}: key {key!r} is written twice in the same mapping (lines {first} and {second}); YAML would silently "
    "keep only the last one. Remove one of them"
)
POLICY_TOO_LARGE = (
    "{source} is {size:,} bytes; fairgate reads policies of at most {limit:,} bytes (fairgate.policy.loader."
    "MAX_POLICY_BYTES, a fixed safety limit). A policy is a short hand-written file: remove what is not needed"
)
POLICY_TOO_MANY_NODES = (
    "{source} expands to {nodes:,} YAML nodes once its aliases (*name) are expanded; fairgate accepts at most "
    "{limit:,} (fairgate.policy.loader.MAX_POLICY_NODES, a fixed safety limit against alias bombs). Write the "
    "values out instead of nesting aliases"
)
POLICY_TOO_DEEP = "{source} is nested too deeply to be a fairgate policy; remove the nesting"
POLICY_RECURSIVE_ALIAS = (
    "{source}: the YAML alias at line {line} refers to the node that contains it (a recursive structure); "
    "a policy cannot be recursive: write the values out"
)
POLICY_LIST_TOO_LONG = (
    "{where} has {count:,} entries; the limit is {limit:,} (limits.max_list_length in the policy). Remove "
    "entries, or raise limits.max_list_length"
)
TOO_MANY_VALUES = (
    "attribute {attribute!r} has {count:,} distinct values in {source}; the policy allows at most {limit:,} values "
    "per attribute (limits.max_values_per_attribute), because every value becomes a group that is audited and "
    "reported. If {attribute!r} really is a sensitive attribute, list its values under values: in "
    "sensitive_attributes or raise limits.max_values_per_attribute; otherwise remove it (an id-like column?)"
)
NOTHING_JUDGED = (
    "no policy result was judged: all {n_results} result(s) lack data, so the verdict rests on nothing. Groups "
    "below intersectional_analysis.min_group_size ({min_group_size}): {groups}. Lower min_group_size (or "
    "statistics.min_events), or audit more data"
)
EMPTY_REFERENCE = (
    "the reference group {attribute}={value!r} declared in the policy has no rows in the data, so no group of "
    "{attribute!r} is compared with it; check the value's spelling, choose another reference_group, or add data"
)

# The audit trail (tasks/store/, ``fairgate trail``). Exit 2 for "not a trail" and configuration, 1 for damage.
NOT_A_TRAIL = "{path} is not an audit trail: {why}. Pass --trail with the trail's DuckDB file"
TRAIL_DAMAGED = "the audit trail {path} is damaged: {detail}. Restore it from a backup; do not append to it"
TRAIL_BUSY = (
    "the audit trail {path} is busy: {holder} still held it after {seconds:g} s. Nothing was read or written; try "
    "again when it has finished (or set FAIRGATE_TRAIL_WAIT_SECONDS to wait longer)"
)
TRAIL_KEY_MISSING = (
    "the audit trail {path} is keyed (hmac-sha256) but {env} is not set: set it to the key the trail was "
    "recorded with, to {action}"
)
TRAIL_KEY_WRONG = (
    "{env} is not the key the audit trail {path} was recorded with (its key check differs): set the right key"
)
TRAIL_UNKEYED = (
    "the chain of {path} is unkeyed (sha256): anyone who can write the file can rewrite a run and recompute the "
    "chain, so 'intact' proves nothing against them. Set {env} (a secret) before recording to key it (HMAC-SHA256)"
)
TRAIL_WRITE_FAILED = (
    "could not record the run in the audit trail {path}: {detail}. Nothing was recorded and the trail is unchanged; "
    "fix the cause (e.g. free disk space) and run the audit again"
)
TRAIL_ANCHOR_UNUSABLE = "the trail anchor file {path} cannot be used: {detail}. {fix}"
TRAIL_NOT_WRITABLE = "the audit trail {path} cannot be written: {why}. Pass --trail with a writable path"
