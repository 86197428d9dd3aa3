"""A binary slicing's groups and cells within the cube.

Shared by its statistics (engine/slicing.py) and the replicates it may sum from a larger slicing's draws
(engine/replicate_sources.py).
"""

from __future__ import annotations

import numpy as np
import polars as pl
from scipy import sparse

from fairgate.engine.cube import BIN, PRED, TRUE, Cube
from fairgate.engine.groups import group_values
from fairgate.engine.packing import packed_codes

Slicing = tuple[str, ...]

GROUP = "__group"  # index of a cell's group within a slicing


def slicing_groups(cube: Cube, slicing: Slicing, declared: list[str] | None = None) -> tuple[pl.DataFrame, np.ndarray]:
    """The groups of a slicing (sorted) and, per cube cell, the index of its group.

    A declared value with no rows is a group too (n = 0, reported as insufficient), never silently absent.
    The groups are found from the cells' attribute codes (``Cube.cell_codes``) packed into one integer per cell.
    """
    if not slicing:
        return pl.DataFrame({GROUP: [0]}, schema={GROUP: pl.UInt32}), np.zeros(cube.cells.height, dtype=np.int64)
    keys = list(slicing)
    coded = [cube.cell_codes[key] for key in keys]
    if declared is not None:  # one attribute: its values in the data and the declared ones
        levels, codes = coded[0]
        values = group_values(levels, declared)
        position = {value: i for i, value in enumerate(values)}
        groups = pl.DataFrame({keys[0]: values}, schema={keys[0]: pl.String}).with_row_index(GROUP)
        return groups, np.array([position[level] for level in levels], dtype=np.int64)[codes]
    packed = packed_codes(cube.cell_codes, slicing, cube.cells.height)
    if packed is not None:
        present, index = np.unique(packed, return_inverse=True)
        digits = []
        for levels, _ in reversed(coded):
            present, digit = np.divmod(present, len(levels))
            digits.append(digit)
        digits.reverse()
    else:  # too many combinations to pack: the code rows themselves, in the same (lexicographic) order
        rows, index = np.unique(np.column_stack([codes for _, codes in coded]), axis=0, return_inverse=True)
        digits = list(rows.T)
    columns = [  # a few dozen groups: picked in Python, cheaper than a Polars gather per attribute
        pl.Series(key, [levels[i] for i in digit.tolist()], dtype=pl.String)
        for key, (levels, _), digit in zip(keys, coded, digits, strict=True)
    ]
    return pl.DataFrame(columns).with_row_index(GROUP), index.reshape(-1).astype(np.int64)


def flat_cells(cube: Cube, group_index: np.ndarray) -> np.ndarray:
    """Each cube cell's cell of the slicing whose groups ``group_index`` gives.

    The slicing's cells are (group, y_true, y_pred, score bin), flattened.
    """
    cells, bins = cube.cells, cube.calibration_bins
    flat: np.ndarray = ((group_index * 2 + cells[TRUE].to_numpy()) * 2 + cells[PRED].to_numpy()) * bins + cells[
        BIN
    ].to_numpy()
    return flat


def summing_matrix(
    rows: np.ndarray, columns: np.ndarray, values: np.ndarray, shape: tuple[int, int]
) -> sparse.csr_matrix:
    """The sparse matrix with ``values`` at (``rows``, ``columns``), no position given twice, built as CSR directly.

    Each row's entries keep the order given, which is the order scipy's product adds them in: given with their
    columns ascending within each row, it is the matrix ``sparse.csr_matrix((values, (rows, columns)))`` builds,
    entry for entry, without its conversion from coordinates (which costs more than the product at these sizes).
    """
    order = np.argsort(rows, kind="stable")
    pointers = np.zeros(shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=shape[0]), out=pointers[1:])
    return sparse.csr_matrix((values[order], columns[order], pointers), shape=shape)
