"""Bootstrap replicates drawn from the cube, with no pass over the rows.

Resampling n rows with replacement puts a multinomial number of rows into each cell of the cube, so one
``(replicates x cells)`` matrix of row counts serves every metric of every slicing. Each slicing then sums
the columns that fall in its groups (a sparse matrix product). Weighted cells scale with their mean weight.
"""

from __future__ import annotations

import numpy as np

from fairgate.cube import ROWS, Cube


def draw_replicates(cube: Cube, n_bootstrap: int, seed: int) -> np.ndarray:
    """Row counts per cell for ``n_bootstrap`` resamples of the audited rows (int32, replicates x cells).

    The same ``(cube, n_bootstrap, seed)`` always gives the same matrix, so slicings computed in separate
    tasks share one set of replicates.
    """
    rows = cube.cells[ROWS].to_numpy().astype(np.float64)
    total = int(rows.sum())
    if n_bootstrap == 0 or total == 0:
        return np.zeros((0, rows.size), dtype=np.int32)
    rng = np.random.default_rng(seed)
    return rng.multinomial(total, rows / rows.sum(), size=n_bootstrap).astype(np.int32)
