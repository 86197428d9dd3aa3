"""Bootstrap replicates drawn from the cube, with no pass over the rows.

Resampling n rows with replacement puts a multinomial number of rows into each cell of the cube, so one
``(replicates x cells)`` matrix of row counts serves every metric of every slicing. Each slicing then sums
the columns that fall in its groups (a sparse matrix product). Weighted cells scale with their mean weight.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from fairgate.cube import ROWS, Cube

_STREAMS = 2


def draw_replicates(cube: Cube, n_bootstrap: int, seed: int) -> np.ndarray:
    """Row counts per cell for ``n_bootstrap`` resamples of the audited rows: a (cells x replicates) float
    matrix, laid out so that each slicing's sparse aggregation reads it without copying.

    The same ``(cube, n_bootstrap, seed)`` always gives the same matrix, so slicings computed in separate
    tasks share one set of replicates.
    """
    rows = cube.cells[ROWS].to_numpy().astype(np.float64)
    total = int(rows.sum())
    if n_bootstrap == 0 or total == 0:
        return np.zeros((rows.size, 0))
    # Two independent streams drawn on two threads (numpy releases the GIL while sampling); the split is
    # fixed, so the matrix depends only on the seed.
    streams = np.random.SeedSequence(seed).spawn(_STREAMS)
    bounds = np.cumsum([0] + [len(part) for part in np.array_split(np.arange(n_bootstrap), _STREAMS)])
    probabilities = rows / rows.sum()
    # Each stream writes its replicates straight into its columns (no intermediate copies).
    counts = np.empty((rows.size, n_bootstrap), dtype=np.float64)

    def draw(stream: np.random.SeedSequence, start: int, stop: int) -> None:
        counts[:, start:stop] = np.random.default_rng(stream).multinomial(total, probabilities, size=stop - start).T

    with ThreadPoolExecutor(_STREAMS) as pool:
        list(pool.map(draw, streams, bounds[:-1], bounds[1:]))
    return counts
