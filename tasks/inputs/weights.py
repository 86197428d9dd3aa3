"""The policy's weight column (columns.weight): which input holds it, how staging carries it to the aligned
rows, and the refusal when an audited row has no weight."""

from __future__ import annotations

import pyarrow as pa

from fairgate.engine.kinds import kind_of
from fairgate.errors import DataError
from fairgate.policy.core import Policy
from tasks.inputs.io import Source
from tasks.inputs.sql import quote_identifier, render_sql
from tasks.inputs.staged import Staged

WEIGHT_ROLES = ("predictions", "labels", "attributes")


def weight_role_of(policy: Policy, sources: dict[str, Source], present: dict[str, list[str]]) -> str | None:
    """The input holding ``columns.weight``: the predictions', else the labels', else the attributes'.

    Refused (exit 2) when the name is one the audit already reads as something else, or when no input has it,
    unless a proxy section writes it after alignment (P(group | ...) per row, or 1 for a most-likely group).
    """
    cols, weight = policy.columns, policy.columns.weight
    if weight is None:
        return None
    taken = {cols.id: "columns.id", cols.y_true: "columns.y_true", cols.y_pred: "columns.y_pred"}
    taken |= {cols.score: "columns.score"} | {name: "a sensitive attribute" for name in policy.attribute_names}
    if kind_of(policy.task).ranked_lists:
        taken |= {cols.list_id: "columns.list_id", cols.rank: "columns.rank"}
    if weight in taken:
        raise DataError(
            f"columns.weight names {weight!r}, which the policy also reads as {taken[weight]}; a weight column "
            "holds only the rows' weights: name that column in columns.weight"
        )
    for role in WEIGHT_ROLES:
        if weight in present[role]:
            return role
    if policy.proxy is not None:
        return None  # the proxy adds it
    listed = "; ".join(f"{sources[r].label}: {present[r]}" for r in WEIGHT_ROLES)
    raise DataError(
        f"columns.weight names {weight!r}, but no input has that column (columns present: {listed}). Add the "
        "weights to the predictions, labels or attributes input, or set columns.weight to their column's name "
        "(remove it for an unweighted audit)"
    )


def weight_column(staged: Staged, role: str, prefix: str = "") -> str:
    """The weight column as a fragment continuing a select list of ``role``'s rows (empty for another role)."""
    weight = staged.policy.columns.weight
    if weight is None or staged.weight_role != role:
        return ""
    return f",\n        {prefix}{quote_identifier(weight)}"


def weight_value(staged: Staged) -> str:
    """The weight column cast to double (validated finite and >= 0 before), continuing a select list."""
    if staged.weight_role is None:
        return ""
    weight = quote_identifier(str(staged.policy.columns.weight))
    return f",\n        cast({weight} as double) as {weight}"


def check_weights_joined(staged: Staged, table: pa.Table) -> None:
    """Weights read from the attributes input: a person audited without an attributes row (``missing: unknown``)
    has no weight, which is refused (exit 2) rather than guessed."""
    weight = staged.policy.columns.weight
    if staged.weight_role == "attributes" and weight is not None:
        refuse_unweighted_rows(staged, table.column(weight).null_count)


def check_streamed_weights_joined(staged: Staged, relation: str) -> None:
    """The streaming path's :func:`check_weights_joined`, counted in DuckDB over the matched rows it keeps."""
    weight = staged.policy.columns.weight
    if staged.weight_role != "attributes" or weight is None:
        return
    excluded_when_missing = [a.name for a in staged.policy.sensitive_attributes if a.missing == "exclude"]
    sql = render_sql(
        "unweighted_rows",
        relation=relation,
        weight_column=quote_identifier(weight),
        kept_rows="".join(f"\n        and {quote_identifier(a)} is not null" for a in excluded_when_missing),
    )
    (unweighted,) = staged.con.execute(sql).fetchall()[0]
    refuse_unweighted_rows(staged, int(unweighted))


def refuse_unweighted_rows(staged: Staged, unweighted: int) -> None:
    """Exit 2 when ``unweighted`` audited rows have no row in the attributes input, which holds the weights."""
    if unweighted:
        raise DataError(
            f"{unweighted} audited row(s) have no row in {staged.sources['attributes'].label}, which holds the "
            f"weight column {staged.policy.columns.weight!r}, so their weight is unknown; add their attribute "
            "rows with a weight, or give the weights in the predictions input"
        )
