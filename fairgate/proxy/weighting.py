"""Weighting: how a posterior becomes audited rows, and the one rule for which column carries the weights.

Rows are either weighted by P(group | ...) (probabilistic) or assigned the most likely group.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from fairgate.policy.core import Policy
from fairgate.proxy.posterior import GROUP, PERSON, PROBABILITY, most_likely

# The weight column a probabilistic proxy adds when the policy names none.
PROXY_WEIGHT_COLUMN = "proxy_weight"


def weight_column(policy: Policy) -> str | None:
    """The column the cube sums as weights: the policy's own, else ``proxy_weight`` for probabilistic proxies.

    Probabilistic membership counts each person in every inferred group with weight P(group | name, place),
    so the cube must sum weights even when the policy names no weight column; otherwise rows count 1.

    >>> policy = Policy.from_yaml('''
    ... fairness_checker:
    ...   sensitive_attributes: [{name: race}]
    ...   metrics: [{name: demographic_parity_difference, threshold: 0.1}]
    ...   proxy: {method: bisg, columns: {surname: last, zip: zip5}}
    ... ''')
    >>> weight_column(policy)
    'proxy_weight'
    """
    if policy.columns.weight is not None:
        return policy.columns.weight
    if policy.proxy is not None and policy.proxy.mode == "probabilistic":
        return PROXY_WEIGHT_COLUMN
    return None


def with_weight_column(policy: Policy) -> Policy:
    """``policy`` with ``columns.weight`` set to :func:`weight_column` (the same policy when nothing changes)."""
    column = weight_column(policy)
    if column == policy.columns.weight:
        return policy
    columns = policy.columns.model_copy(update={"weight": column})
    return policy.model_copy(update={"columns": columns})


def expand_probabilistic(
    frame: pl.DataFrame,
    posterior: pl.DataFrame,
    *,
    attribute: str,
    weight_column: str,
    labels: Mapping[str, str] | None = None,
) -> pl.DataFrame:
    """One row per (person, inferred group) with weight = P(group | ...) (times any existing weight).

    ``frame``'s rows are the people in order (person i is row i). Zero-probability rows are dropped: they
    add nothing to any count.
    """
    probs = posterior.filter(pl.col(PROBABILITY) > 0).select(
        PERSON, pl.col(GROUP).replace(dict(labels or {})).alias(attribute), PROBABILITY
    )
    base = frame.drop(attribute, strict=False).with_row_index(PERSON)
    rows = base.join(probs, on=PERSON, how="inner").sort(PERSON, maintain_order=True)
    if weight_column in frame.columns:
        weight = pl.col(weight_column).cast(pl.Float64) * pl.col(PROBABILITY)
    else:
        weight = pl.col(PROBABILITY)
    return rows.with_columns(weight.alias(weight_column)).drop(PERSON, PROBABILITY)


def assign_most_likely(
    frame: pl.DataFrame,
    posterior: pl.DataFrame,
    *,
    attribute: str,
    confidence_cut: float,
    unknown_label: str | None,
    labels: Mapping[str, str] | None = None,
) -> tuple[pl.DataFrame, dict[str, int]]:
    """Hard assignment: the most likely group when its probability reaches ``confidence_cut``.

    Below the cut a person gets ``unknown_label``, or is left out when ``unknown_label`` is None. Returns the
    rows and the counts (assigned, below_cut, excluded).
    """
    best = most_likely(posterior)
    confident = best["max_probability"] >= confidence_cut - 1e-12
    group = best["most_likely"].replace(dict(labels or {}))
    assigned = pl.select(
        pl.when(confident).then(group).otherwise(pl.lit(unknown_label, dtype=pl.String)).alias(attribute)
    ).to_series()
    rows = frame.drop(attribute, strict=False).with_row_index(PERSON)
    rows = rows.join(pl.DataFrame({PERSON: best[PERSON], attribute: assigned}), on=PERSON, how="left")
    n_below = int((~confident).sum())
    if unknown_label is None:
        rows = rows.filter(pl.col(attribute).is_not_null())
    counts = {
        "assigned": int(confident.sum()),
        "below_cut": n_below,
        "excluded": n_below if unknown_label is None else 0,
    }
    return rows.sort(PERSON).drop(PERSON), counts
