"""The groups of a slicing, one rule for every kind: which groups there are, their order, and each row's group.

* A slicing's groups are the value combinations present in the rows, sorted by value (attribute by attribute).
* For a one-attribute slicing with declared values (``sensitive_attributes[].values``), a declared value
  without rows is a group too (n = 0, reported as insufficient), never silently absent; the order is still by
  value, declared or not.

The binary engine applies the rule to its cube's attribute codes (:func:`fairgate.engine.slicing.slicing_groups`,
with :func:`group_values`); the other kinds to their cells with :func:`frame_groups`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

if TYPE_CHECKING:
    from fairgate.policy.core import Policy

Group = dict[str, str]
_GROUP = "__group"


def declared_for(policy: Policy, slicing: Sequence[str]) -> list[str] | None:
    """The declared values that are groups of ``slicing`` even without rows: a one-attribute slicing's, else None."""
    return policy.attribute(slicing[0]).declared_values if len(slicing) == 1 else None


def group_values(present: Iterable[str], declared: Sequence[str] | None) -> list[str]:
    """The groups of a one-attribute slicing: the values present and the declared ones, sorted.

    >>> group_values(["b", "a"], ["c", "a"])
    ['a', 'b', 'c']
    """
    return sorted(set(present) | set(declared or ()))


def frame_groups(
    frame: pl.DataFrame, slicing: Sequence[str], declared: Sequence[str] | None = None
) -> tuple[list[Group], np.ndarray]:
    """The slicing's groups (the module's rule) and each row's group index, ``int64``.

    >>> frame = pl.DataFrame({"g": ["b", "a", "b"], "h": ["x", "y", "x"]})
    >>> frame_groups(frame, ("g",), ["c"])
    ([{'g': 'a'}, {'g': 'b'}, {'g': 'c'}], array([1, 0, 1]))
    >>> frame_groups(frame, ("g", "h"))[0]
    [{'g': 'a', 'h': 'y'}, {'g': 'b', 'h': 'x'}]
    """
    if not slicing:
        return [{}], np.zeros(frame.height, dtype=np.int64)
    keys = list(slicing)
    if declared is not None and len(keys) == 1:
        values = group_values(frame[keys[0]].cast(pl.String).unique().to_list(), declared)
        groups = [{keys[0]: value} for value in values]
    else:
        present = frame.select(pl.col(key).cast(pl.String) for key in keys).unique().sort(keys)
        groups = [{k: str(v) for k, v in row.items()} for row in present.iter_rows(named=True)]
    return groups, group_rows(frame, slicing, groups)


def group_rows(frame: pl.DataFrame, slicing: Sequence[str], groups: Sequence[Group]) -> np.ndarray:
    """Each row's index among ``groups`` (a slicing's groups, as :func:`frame_groups` gives them), ``int64``."""
    if not slicing:
        return np.zeros(frame.height, dtype=np.int64)
    keys = list(slicing)
    indexed = pl.DataFrame(list(groups), schema=dict.fromkeys(keys, pl.String)).with_row_index(_GROUP)
    rows = frame.select(pl.col(key).cast(pl.String) for key in keys)
    index = rows.join(indexed, on=keys, how="left", maintain_order="left")[_GROUP]
    if index.null_count():
        raise ValueError(f"rows of slicing {keys} fall in no given group")  # a bug: groups come from these rows
    return index.to_numpy().astype(np.int64)
