"""How far non-negativity narrows a hidden cell: its upper bound over the non-negative solutions of the sums.

Linear algebra finds what the published sums determine exactly. Counts are never negative, which an attacker
also knows: two hidden cells summing to 0 are each 0 though neither is a linear function of the published
cells, and hidden cells summing to 5 are each at most 5. A hidden cell whose upper bound is under the minimum
cell size is disclosed as small (or as exactly 0); :class:`Programme` solves the linear programme
``max x_j subject to A x = b, x >= 0`` for one cell after another and names the sums that bind it (non-zero
duals), where a complement must go.

The programmes of one pattern differ only in their objective, so one HiGHS model is kept and each solve starts
from the previous optimal basis (a few pivots instead of a solve from scratch: COMPAS's ~300 bounds in about
0.1 s instead of 2 s through ``scipy.optimize.linprog``).
"""

from __future__ import annotations

from dataclasses import dataclass

import highspy
import numpy as np
from scipy.sparse import csc_matrix, csr_matrix

#: A bound this close to the minimum counts as reaching it (the counts are rounded to 6 decimals).
_TOL = 1e-6


@dataclass(frozen=True)
class Bound:
    """A cell's upper bound over the non-negative solutions, and the rows (sums) that bind it."""

    value: float
    binding: tuple[int, ...]
    #: A solution reaching the bound (empty when unbounded): every unknown's value in it is feasible too.
    solution: tuple[float, ...] = ()


class Programme:
    """``max x_j subject to matrix @ x == rhs, x >= 0`` for any ``j``, on one warm-started model.

    >>> m = np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]])
    >>> p = Programme(m, np.array([3.0, 20.0]))
    >>> b = p.upper(0)
    >>> b.value, b.binding, b.solution
    (3.0, (0,), (3.0, 0.0, 20.0))
    >>> p.upper(2).value
    20.0
    """

    def __init__(self, matrix: np.ndarray | csr_matrix, rhs: np.ndarray) -> None:
        columns = csc_matrix(matrix)
        n_rows, n_cols = columns.shape
        lp = highspy.HighsLp()
        lp.num_col_, lp.num_row_ = n_cols, n_rows
        lp.col_cost_ = np.zeros(n_cols)
        lp.col_lower_, lp.col_upper_ = np.zeros(n_cols), np.full(n_cols, highspy.kHighsInf)
        lp.row_lower_ = lp.row_upper_ = np.asarray(rhs, dtype=float)
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_, lp.a_matrix_.index_ = columns.indptr, columns.indices
        lp.a_matrix_.value_ = columns.data.astype(float)
        lp.sense_ = highspy.ObjSense.kMaximize
        # The plain binding: highspy.Highs adds solver callbacks and prints a banner on stdout when created.
        self._highs = highspy._Highs()  # type: ignore[attr-defined]  # exported (highspy.__all__), not typed
        self._highs.setOptionValue("output_flag", False)
        self._highs.passModel(lp)
        self._costed: int | None = None

    def upper(self, column: int) -> Bound:
        """The largest value of unknown ``column`` (inf when unbounded), with the sums binding it."""
        highs = self._highs
        if self._costed is not None:
            highs.changeColCost(self._costed, 0.0)
        highs.changeColCost(column, 1.0)
        self._costed = column
        highs.run()
        if highs.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            # Unbounded; infeasible cannot happen with the true values: either way no information.
            highs.clearSolver()  # the next solve starts afresh rather than from an unbounded ray
            return Bound(float("inf"), ())
        solution = highs.getSolution()
        duals = np.asarray(solution.row_dual)
        binding = tuple(int(i) for i in np.flatnonzero(np.abs(duals) > _TOL))
        values = tuple(solution.col_value)  # a list of floats
        return Bound(values[column], binding, values)


def upper_bound(matrix: np.ndarray | csr_matrix, rhs: np.ndarray, column: int) -> Bound:
    """The largest value of unknown ``column`` over ``matrix @ x == rhs, x >= 0`` (one programme).

    >>> upper_bound(np.array([[1.0, 1.0]]), np.array([5.0]), 1).value
    5.0
    """
    return Programme(matrix, rhs).upper(column)


def below(bound: Bound, k: float) -> bool:
    """Whether the bound tells the cell holds fewer than ``k``."""
    return bound.value < k - _TOL
