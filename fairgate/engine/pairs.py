"""The pairs of a family of groups, found once per number of groups."""

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
