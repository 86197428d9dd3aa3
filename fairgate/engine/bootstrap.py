"""Bootstrap replicates drawn from the cube, with no pass over the rows.

Resampling the n audited rows with replacement puts a multinomial number of rows into each cell of the cube.
Summed over the cells that make up one cell of a slicing (group x y_true x y_pred x score bin), those counts
are again multinomial, with the summed probabilities. So each slicing draws its replicates directly at its own
resolution: exactly the distribution that aggregating a draw over the whole cube would give, without drawing
the cube's finer cells or summing a (cells x replicates) matrix per slicing. Replicates of different slicings
are independent draws; nothing in an audit combines them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np


def slicing_seed(seed: int, slicing: Sequence[str]) -> np.random.SeedSequence:
    """The random stream of one slicing, fixed by the policy's seed and the slicing's attributes.

    A slicing thus gets the same replicates whether it runs in this process, another thread or a Prefect task.
    """
    digest = hashlib.sha256("\x1f".join(slicing).encode()).digest()
    return np.random.SeedSequence([seed, int.from_bytes(digest[:8], "little")])


def draw_counts(rows: np.ndarray, n_bootstrap: int, seed: np.random.SeedSequence) -> np.ndarray:
    """Row counts per cell for ``n_bootstrap`` resamples of ``rows.sum()`` rows.

    An (n_bootstrap x cells) float matrix whose rows are multinomial with cell probabilities proportional
    to ``rows``.

    >>> counts = draw_counts(np.array([2.0, 3.0, 5.0]), 4, np.random.SeedSequence(0))
    >>> counts.shape, counts.sum(axis=1).tolist()
    ((4, 3), [10.0, 10.0, 10.0, 10.0])
    """
    total = round(float(rows.sum()))
    if n_bootstrap == 0 or total == 0:
        return np.zeros((n_bootstrap, rows.size))
    draws = np.random.default_rng(seed).multinomial(total, rows / rows.sum(), size=n_bootstrap)
    return draws.astype(np.float64)
