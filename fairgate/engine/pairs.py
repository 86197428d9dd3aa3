"""The pairs of a family of groups (found once per number of groups), their differences and standard errors."""

from __future__ import annotations

import functools

import numpy as np


@functools.lru_cache(maxsize=256)
def pair_indices(size: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.triu_indices(size, k=1)``: the pairs (i < j) of ``size`` groups, found once per size (read-only).

    A family is built for every summary of every slicing, most of them over the same few group counts.

    >>> [a.tolist() for a in pair_indices(3)]
    [[0, 0, 1], [1, 2, 2]]
    """
    first, second = np.triu_indices(size, k=1)
    first.flags.writeable = second.flags.writeable = False
    return first, second


def pair_differences(values: np.ndarray) -> np.ndarray:
    """Every pair's difference of the groups' values (last axis, in :func:`pair_indices` order).

    Several components over the same groups at once when stacked on a leading axis.
    """
    first, second = pair_indices(values.shape[-1])
    differences: np.ndarray = values[..., first] - values[..., second]
    return differences


def pair_se(variance: np.ndarray) -> np.ndarray:
    """Every pair's standard error from the groups' variances (last axis), as :func:`pair_differences` pairs them."""
    first, second = pair_indices(variance.shape[-1])
    se: np.ndarray = np.sqrt(variance[..., first] + variance[..., second])
    return se


def studentizable(d: np.ndarray, se: np.ndarray) -> np.ndarray:
    """Whether every pair (last axis) has a finite difference and a positive, finite standard error.

    A family (:func:`pair_family`) exists only then.
    """
    valid: np.ndarray = np.isfinite(d).all(axis=-1) & np.isfinite(se).all(axis=-1) & (se > 0).all(axis=-1)
    return valid


def range_ends(gap: np.ndarray, se: np.ndarray, critical: float) -> tuple[np.ndarray, np.ndarray]:
    """The range's simultaneous ends over the pairs (last axis), before folding: max(|d| - c se), max(|d| + c se)."""
    return np.max(gap - critical * se, axis=-1), np.max(gap + critical * se, axis=-1)
