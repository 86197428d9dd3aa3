"""How far non-negativity narrows a hidden cell: its upper bound over the non-negative solutions of the sums.

Linear algebra finds what the published sums determine exactly. Counts are never negative, which an attacker
also knows: two hidden cells summing to 0 are each 0 though neither is a linear function of the published
cells, and hidden cells summing to 5 are each at most 5. A hidden cell whose upper bound is under the minimum
cell size is disclosed as small (or as exactly 0); :func:`upper_bound` solves the linear programme
``max x_j subject to A x = b, x >= 0`` and names the sums that bind it (non-zero duals), where a complement
must go.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import csr_matrix

#: A bound this close to the minimum counts as reaching it (the counts are rounded to 6 decimals).
_TOL = 1e-6


@dataclass(frozen=True)
class Bound:
    """A cell's upper bound over the non-negative solutions, and the rows (sums) that bind it."""

    value: float
    binding: tuple[int, ...]
    #: A solution reaching the bound (empty when unbounded): every unknown's value in it is feasible too.
    solution: tuple[float, ...] = ()


def upper_bound(matrix: np.ndarray | csr_matrix, rhs: np.ndarray, column: int | list[int]) -> Bound:
    """The largest value of unknown ``column`` over ``matrix @ x == rhs, x >= 0`` (inf when unbounded).

    With a list of columns, the largest value of their sum (one solution that may put several at k or more).

    >>> m = np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]])
    >>> b = upper_bound(m, np.array([3.0, 20.0]), 0)
    >>> b.value, b.binding, b.solution
    (3.0, (0,), (3.0, 0.0, 20.0))
    >>> upper_bound(m, np.array([3.0, 20.0]), 2).value
    20.0
    """
    objective = np.zeros(matrix.shape[1])
    objective[column] = -1.0
    result = linprog(objective, A_eq=csr_matrix(matrix), b_eq=rhs, bounds=(0, None), method="highs")
    if result.status == 3:  # unbounded
        return Bound(float("inf"), ())
    if result.status != 0:  # infeasible cannot happen with the true values; treat it as no information
        return Bound(float("inf"), ())
    duals = np.asarray(result.eqlin.marginals)
    binding = tuple(int(i) for i in np.flatnonzero(np.abs(duals) > _TOL))
    return Bound(float(-result.fun), binding, tuple(float(x) for x in result.x))


def below(bound: Bound, k: float) -> bool:
    """Whether the bound tells the cell holds fewer than ``k``."""
    return bound.value < k - _TOL
