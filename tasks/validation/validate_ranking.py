"""VALIDATE for ``task: ranking``: every list's ranks run 1..n without gaps or ties; relevance is finite >= 0.

Great Expectations judges DuckDB aggregates, not rows (as tasks/validation/validate.py does for binary labels):

* ``sql/ranking_list_shapes.sql`` groups the lists by their *shape* (size, lowest and highest rank, distinct,
  missing, fractional and non-numeric ranks): a handful of rows whatever the number of lists. Each shape must
  have a list id, no missing, non-numeric or fractional rank, no tie (distinct ranks = items), lowest rank 1 and
  highest rank n (with no tie, that is 1..n without a gap).
* ``sql/ranking_relevance.sql`` counts the relevance (y_true) values that are missing, not numbers, not finite
  or negative: one row, each count expected to be 0.

The first failed expectation stops the audit (exit 2) with a message naming the input, the column, the first
offending list (or row id), how many there are and the fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from fairgate.errors import DataError
from tasks.inputs.sql import quote_identifier, render_sql
from tasks.inputs.staged import Staged
from tasks.validation.gx_suite import Expectation, expect, plain_value, run_suite
from tasks.validation.validate import Validation, critical_check

# Per list-shape expectation: (kind, columns, message). Ties are checked before gaps: 1, 1, 2 has both, and the
# tie is the cause.
_LIST_CHECKS: list[tuple[str, tuple[str, ...], str]] = [
    (
        "in_set",
        ("list_missing",),
        "{count} row(s) of {source} have no list id in column {list!r}; give every row the list (query, opening, "
        "cohort) it was ranked in",
    ),
    (
        "zero",
        ("n_missing",),
        "list {first!r} of {source} (and {more} more list(s)) has items without a rank in column {rank!r}; give "
        "every item its position 1, 2, ..., n from the top",
    ),
    (
        "zero",
        ("n_not_numeric",),
        "list {first!r} of {source} (and {more} more list(s)) has ranks in column {rank!r} that are not numbers; "
        "ranks are the positions 1, 2, ..., n from the top",
    ),
    (
        "zero",
        ("n_fractional",),
        "list {first!r} of {source} (and {more} more list(s)) has fractional ranks in column {rank!r} (e.g. "
        "averaged ties); ranks are whole positions 1, 2, ..., n: break ties, e.g. by id",
    ),
    (
        "pair_equal",
        ("n_distinct", "n_items"),
        "list {first!r} of {source} (and {more} more list(s)) has tied ranks in column {rank!r}: {n_items:.0f} "
        "items but {n_distinct:.0f} distinct ranks; break the ties (e.g. by id) so that each position holds one "
        "item, numbered 1, 2, ..., n",
    ),
    (
        "one",
        ("min_rank",),
        "list {first!r} of {source} (and {more} more list(s)) does not start at rank 1 in column {rank!r} (its "
        "lowest rank is {min_rank:g}); number each list's items 1, 2, ..., n from the top",
    ),
    (
        "pair_equal",
        ("max_rank", "n_items"),
        "list {first!r} of {source} (and {more} more list(s)) has gaps in its ranks in column {rank!r}: "
        "{n_items:.0f} items ranked up to {max_rank:g}; renumber each list 1, 2, ..., n without gaps (e.g. "
        "row_number() over the list ordered by rank)",
    ),
]

_RELEVANCE_CHECKS = {
    "n_missing": "is missing",
    "n_not_numeric": "is not a number",
    "n_not_finite": "is NaN or infinite",
    "n_negative": "is negative",
}


def validate_ranking(staged: Staged, validation: Validation, roles: tuple[str, ...]) -> None:
    """Expect well-formed ranks per list (predictions) and relevance finite >= 0 (labels); raise DataError if not."""
    cols = staged.policy.columns
    if "predictions" in roles:
        shapes = staged.con.sql(
            render_sql(
                "ranking_list_shapes",
                list_column=quote_identifier(cols.list_id),
                rank_column=quote_identifier(cols.rank),
            )
        ).to_df()
        _check_lists(staged, validation, shapes)
    if "labels" in roles:
        counts = staged.con.sql(render_sql("ranking_relevance", y_true_column=quote_identifier(cols.y_true))).to_df()
        _check_relevance(staged, validation, counts)


def _list_expectation(kind: str, columns: tuple[str, ...]) -> Expectation:
    if kind == "in_set":
        return expect.ColumnValuesToBeInSet(column=columns[0], value_set=[False])
    if kind == "zero":
        return expect.ColumnValuesToBeBetween(column=columns[0], min_value=0, max_value=0)
    if kind == "one":
        return expect.ColumnValuesToBeBetween(column=columns[0], min_value=1, max_value=1)
    return expect.ColumnPairValuesToBeEqual(column_A=columns[0], column_B=columns[1])


def _check_lists(staged: Staged, validation: Validation, shapes: pd.DataFrame) -> None:
    cols = staged.policy.columns
    source = staged.sources["predictions"].label
    expectations = [_list_expectation(kind, columns) for kind, columns, _ in _LIST_CHECKS]
    result = run_suite("predictions_ranks", shapes, expectations, "COMPLETE")
    validation.ge_results.append(result.to_json_dict())
    failures: list[tuple[int, pd.DataFrame]] = []
    for outcome in result.results:
        config = outcome.expectation_config
        position = next(
            i for i, (_, columns, _) in enumerate(_LIST_CHECKS) if _expectation_columns(config.kwargs) == columns
        )
        indexes = outcome.result.get("unexpected_index_list") or []
        failing = shapes.loc[[_index_of(i) for i in indexes]] if indexes else shapes.iloc[0:0]
        lists = int(failing["n_lists"].sum())
        column = cols.list_id if position == 0 else cols.rank
        example = None if failing.empty else plain_value(failing.iloc[0]["first_list"])
        validation.checks.append(critical_check(source, column, outcome, lists, example))
        if not outcome.success:
            failures.append((position, failing))
    if not failures:
        return
    position, failing = min(failures, key=lambda f: f[0])
    first = failing.sort_values("first_list", na_position="first").iloc[0]
    message = _LIST_CHECKS[position][2]
    raise DataError(
        message.format(
            source=source,
            list=cols.list_id,
            rank=cols.rank,
            first=plain_value(first["first_list"]),
            more=int(failing["n_lists"].sum()) - 1,
            count=int(first["n_items"]),
            **{k: float(first[k]) for k in ("n_items", "n_distinct", "min_rank", "max_rank")},
        )
    )


def _expectation_columns(kwargs: Mapping[str, Any]) -> tuple[str, ...]:
    if "column_A" in kwargs:
        return (kwargs["column_A"], kwargs["column_B"])
    return (kwargs["column"],)


def _index_of(index: Any) -> Any:
    # GE reports pair expectations' unexpected indexes as dicts in some versions.
    return index.get("index", index) if isinstance(index, dict) else index


def _check_relevance(staged: Staged, validation: Validation, counts: pd.DataFrame) -> None:
    cols = staged.policy.columns
    source = staged.sources["labels"].label
    expectations = [
        expect.ColumnValuesToBeBetween(column=column, min_value=0, max_value=0) for column in _RELEVANCE_CHECKS
    ]
    result = run_suite("labels_relevance", counts, expectations, "COMPLETE")
    validation.ge_results.append(result.to_json_dict())
    row = counts.iloc[0]
    failed = None
    for outcome in result.results:
        column = outcome.expectation_config.kwargs["column"]
        validation.checks.append(
            {
                "input": source,
                "column": cols.y_true,
                "expectation": f"relevance {_RELEVANCE_CHECKS[column].replace('is ', 'never ')}",
                "kwargs": {"aggregate": column},
                "severity": "critical",
                "success": bool(outcome.success),
                "unexpected_count": int(row[column]),
                "example": plain_value(row["first_bad_id"]) if not outcome.success else None,
            }
        )
        if not outcome.success and failed is None:
            failed = column
    if failed is not None:
        raise DataError(
            f"column {cols.y_true!r} (relevance) of {source} {_RELEVANCE_CHECKS[failed]} in {int(row[failed])} "
            f"row(s) (first id among the bad rows: {plain_value(row['first_bad_id'])!r}); a ranking audit needs a "
            "finite relevance >= 0 for every item (e.g. 0 = not relevant, 1, 2, 3 = graded): fix or drop those rows"
        )
