"""The k nearest neighbours of every person, found as AIF360 finds them, fast enough for millions of rows.

AIF360's ``consistency`` (``BinaryLabelDatasetMetric.consistency`` and ``aif360.sklearn.metrics.
consistency_score``) fits ``sklearn.neighbors.NearestNeighbors(n_neighbors=k, algorithm="ball_tree")`` on the
features *as given* (no scaling) and queries the fitted points themselves, so each person's k neighbours include
the person (at distance 0). Among points at equal distance the ball tree keeps those it visits first: with more than
k exact duplicates a person's neighbourhood is k of them, which need not include the person.

The k nearest points are a *set*, and when the k-th nearest is strictly closer than the (k+1)-th that set is the
same whichever exact search finds it. fairgate therefore asks SciPy's KD-tree (``cKDTree``: exact, in C++, on
every core) for k + 1 neighbours, and keeps its first k wherever the k-th and (k+1)-th distances differ by more
than rounding could explain. Only the queries with a tie at the boundary (duplicates, features on a grid) go to
AIF360's own ball tree, fitted the same way (leaf size 30, Euclidean, the same rows in the same order), so ties
are broken as AIF360 breaks them. The ball tree is built only if some query needs it.

Queries run in chunks (bounded memory: ``chunk`` x (k+1) distances at a time); a query's answer does not depend
on how the queries are chunked and depends on the query's coordinates alone, so people with equal features
(common with counts and ages) are queried once (:func:`fairgate.engine.individual.consistency.disagreements`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

import numpy as np
from scipy.spatial import cKDTree
from sklearn.neighbors import NearestNeighbors
from sklearn.preprocessing import MinMaxScaler, StandardScaler

Scaling = Literal["none", "standard", "minmax"]

#: Rows queried at a time: 65,536 x (k+1) distances and indices (3.1 MB each at k = 5) per chunk.
CHUNK_ROWS = 65_536

#: A boundary gap below this share of the distance could be rounding: the KD-tree's and the ball tree's sums of
#: squares may differ in the last bits (1e-15 relative), so the ball tree decides such queries.
BOUNDARY_TOLERANCE = 1e-9


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


class AIF360Neighbours:
    """The k nearest of ``points`` to any query, as AIF360's ball tree over ``points`` (in their order) picks them.

    >>> x = np.array([[0.0], [1.0], [1.0], [5.0]])
    >>> search = AIF360Neighbours(x, 2)
    >>> sorted(search.nearest(np.array([[0.9], [5.0]])).tolist()[0])
    [1, 2]
    >>> search.ball_tree_queries  # for [5.0] the 2nd and 3rd nearest ([1.0] twice) tie: the ball tree chose
    1
    """

    def __init__(self, points: np.ndarray, k: int, *, n_jobs: int | None = None) -> None:
        self.points, self.k, self.n_jobs = points, k, n_jobs
        # compact_nodes/balanced_tree off: a faster build, the same exact answers.
        self._kd_tree = cKDTree(points, leafsize=16, compact_nodes=False, balanced_tree=False)
        self._ball_tree: NearestNeighbors | None = None
        self.ball_tree_queries = 0  # how many queries had a tie at the boundary (for benchmarks and tests)

    def nearest(self, queries: np.ndarray) -> np.ndarray:
        """(queries x k) row indices of each query's k nearest points (in no promised order within a row)."""
        n = self.points.shape[0]
        if self.k >= n:  # everyone is everyone's neighbour
            return np.broadcast_to(np.arange(n), (queries.shape[0], n)).copy()
        distance, index = self._kd_tree.query(queries, k=self.k + 1, workers=self.n_jobs or 1)
        neighbours = np.ascontiguousarray(index[:, : self.k])
        kth, next_out = distance[:, self.k - 1], distance[:, self.k]
        tied = next_out - kth <= BOUNDARY_TOLERANCE * np.maximum(next_out, np.finfo(np.float64).tiny)
        if tied.any():
            neighbours[tied] = self._ball_tree_nearest(queries[tied])
            self.ball_tree_queries += int(tied.sum())
        return neighbours

    def _ball_tree_nearest(self, queries: np.ndarray) -> np.ndarray:
        if self._ball_tree is None:
            self._ball_tree = NearestNeighbors(n_neighbors=self.k, algorithm="ball_tree", n_jobs=self.n_jobs)
            self._ball_tree.fit(self.points)
        return np.asarray(self._ball_tree.kneighbors(queries, return_distance=False))


def neighbour_chunks(
    points: np.ndarray, queries: np.ndarray, k: int, *, n_jobs: int | None = None, chunk: int = CHUNK_ROWS
) -> Iterator[tuple[slice, np.ndarray]]:
    """(query rows, their k nearest points' row indices) for consecutive chunks of the queries.

    >>> x = np.array([[0.0], [1.0], [5.0], [6.0]])
    >>> [np.sort(ind).tolist() for _, ind in neighbour_chunks(x, x, 2, chunk=2)]
    [[[0, 1], [0, 1]], [[2, 3], [2, 3]]]
    """
    search = AIF360Neighbours(points, k, n_jobs=n_jobs)
    for start in range(0, queries.shape[0], chunk):
        rows = slice(start, min(start + chunk, queries.shape[0]))
        yield rows, search.nearest(queries[rows])
