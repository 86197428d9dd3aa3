"""The k nearest neighbours of every person, found as AIF360 finds them, in chunks that scale to millions of rows.

AIF360's ``consistency`` (``BinaryLabelDatasetMetric.consistency`` and ``aif360.sklearn.metrics.
consistency_score``) fits ``sklearn.neighbors.NearestNeighbors(n_neighbors=k, algorithm="ball_tree")`` on the
features *as given* (no scaling) and queries the fitted points themselves, so each person's k neighbours include
the person (at distance 0). Among points at equal distance the ball tree keeps those it visits first: with more than
k exact duplicates a person's neighbourhood is k of them, which need not include the person. fairgate fits the same
tree (leaf size 30, Euclidean) on the same rows in the same order, so it picks the same neighbours, ties included.

Queries run in chunks (bounded memory: ``chunk`` x k indices at a time) and each chunk on ``n_jobs`` threads
(the tree releases the GIL); a query's answer does not depend on how the queries are chunked, and depends on the
query's coordinates alone, so people with equal features (common with counts and ages) are queried once.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

import numpy as np
from sklearn.neighbors import NearestNeighbors
from sklearn.preprocessing import MinMaxScaler, StandardScaler

Scaling = Literal["none", "standard", "minmax"]

#: Rows queried at a time: 65,536 x k neighbour indices (2.6 MB at k = 5) per chunk.
CHUNK_ROWS = 65_536


def scaled(features: np.ndarray, scaling: Scaling) -> np.ndarray:
    """The features scaled as asked, with scikit-learn's own scalers (so the floats match a user's pipeline).

    ``none`` is AIF360's behaviour (distances on the raw features); ``standard`` is ``StandardScaler`` (mean 0,
    population standard deviation 1; a constant column stays 0); ``minmax`` is ``MinMaxScaler`` (each column to
    [0, 1]).

    >>> scaled(np.array([[1.0, 10.0], [3.0, 10.0]]), "standard").tolist()
    [[-1.0, 0.0], [1.0, 0.0]]
    """
    matrix = np.ascontiguousarray(features, dtype=np.float64)
    if scaling == "none":
        return matrix
    scaler = StandardScaler() if scaling == "standard" else MinMaxScaler()
    return np.ascontiguousarray(scaler.fit_transform(matrix), dtype=np.float64)


def neighbour_chunks(
    points: np.ndarray, queries: np.ndarray, k: int, *, n_jobs: int | None = None, chunk: int = CHUNK_ROWS
) -> Iterator[tuple[slice, np.ndarray]]:
    """(query rows, their k nearest points' row indices, nearest first) for consecutive chunks of the queries.

    The index is built over ``points`` in their order (as AIF360 builds it over its dataset's rows).

    >>> x = np.array([[0.0], [1.0], [5.0], [6.0]])
    >>> [ind.tolist() for _, ind in neighbour_chunks(x, x, 2, chunk=2)]
    [[[0, 1], [1, 0]], [[2, 3], [3, 2]]]
    """
    index = NearestNeighbors(n_neighbors=k, algorithm="ball_tree", n_jobs=n_jobs).fit(points)
    for start in range(0, queries.shape[0], chunk):
        rows = slice(start, min(start + chunk, queries.shape[0]))
        yield rows, np.asarray(index.kneighbors(queries[rows], return_distance=False))
