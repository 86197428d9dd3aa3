"""AIF360's consistency (Zemel et al. 2013): similar people, similar decisions.

consistency = 1 - (1/n) sum_i |y_i - mean of y over i's k nearest neighbours|, with the neighbours AIF360 finds
(:mod:`fairgate.engine.individual.neighbours`). Decisions are 0/1, so person i's term is m_i / k with
m_i = |k y_i - (number of positive decisions among the neighbours)| in 0..k: the engine keeps the integer m_i,
and a group's consistency is a function of its counts of m = 0..k (sufficient statistics, like the cube's).

A group's consistency is that of its people, their neighbours taken from everyone (a person is judged against the
whole population, not only against their own group). Its interval treats the people's terms as a sample (people
resampled, their neighbourhoods held fixed): mean +- z sd / sqrt(n), cut to [0, 1].

For large audits the policy may ask for a seeded simple random sample of the people (:func:`sample_rows`): only
they are queried, their neighbours still searched among everyone, so each sampled term is exact and the sampled
mean is an unbiased estimate of the full value; the same interval with n the sampled count then covers the
sampling error too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fairgate.engine.individual.neighbours import CHUNK_ROWS, Scaling, neighbour_chunks, scaled

DEFAULT_K = 5  # AIF360's n_neighbors default


def disagreements(
    features: np.ndarray,
    predictions: np.ndarray,
    *,
    k: int = DEFAULT_K,
    scaling: Scaling = "none",
    n_jobs: int | None = None,
    chunk: int = CHUNK_ROWS,
    rows: np.ndarray | None = None,
) -> np.ndarray:
    """Per person, m_i = |k y_i - sum of y over the k nearest neighbours| (int, 0..k); y_i's term is m_i / k.

    With ``rows`` (person indices), the terms of those people only, in that order: their neighbours are still
    searched among everyone, so each term is the one the whole computation gives.

    >>> x = np.array([[0.0], [0.1], [5.0], [5.1]])
    >>> disagreements(x, np.array([1, 1, 0, 1]), k=2).tolist()
    [0, 0, 1, 1]
    >>> disagreements(x, np.array([1, 1, 0, 1]), k=2, rows=np.array([3, 0])).tolist()
    [1, 0]
    """
    y = np.asarray(predictions)
    matrix = np.asarray(features, dtype=np.float64)
    _check(matrix, y, k)
    positive = y.astype(np.int64)
    points = scaled(matrix, scaling)  # scaled over everyone, as the full computation scales
    asked = np.arange(y.size) if rows is None else np.asarray(rows, dtype=np.int64)
    # A query's neighbours depend on its coordinates alone: each distinct feature vector is queried once.
    distinct, person_row = np.unique(points[asked], axis=0, return_inverse=True)
    positive_near = np.empty(distinct.shape[0], dtype=np.int64)
    for chunk_rows, neighbours in neighbour_chunks(points, distinct, k, n_jobs=n_jobs, chunk=chunk):
        positive_near[chunk_rows] = positive[neighbours].sum(axis=1)
    out: np.ndarray = np.abs(k * positive[asked] - positive_near[person_row.ravel()])
    return out


def sample_rows(people: int, size: int | None, seed: int) -> np.ndarray | None:
    """A seeded simple random sample of ``size`` of ``people`` row indices (sorted), or None for everyone.

    None when no size is asked or the sample would be everyone (``size >= people``): the exact value.

    >>> sample_rows(10, 4, seed=0).tolist(), sample_rows(10, 10, seed=0)
    ([2, 4, 5, 7], None)
    """
    if size is None or size >= people:
        return None
    return np.sort(np.random.default_rng(seed).choice(people, size=size, replace=False))


def consistency_score(
    features: np.ndarray, predictions: np.ndarray, *, k: int = DEFAULT_K, scaling: Scaling = "none"
) -> float:
    """AIF360's consistency of 0/1 decisions over the features.

    Equal to ``aif360.sklearn.metrics.consistency_score(features, predictions, n_neighbors=k)`` when
    ``scaling="none"``.

    >>> round(consistency_score(np.array([[0.0], [0.1], [5.0], [5.1]]), np.array([1, 1, 0, 1]), k=2), 4)
    0.75
    """
    return 1.0 - float(disagreements(features, predictions, k=k, scaling=scaling).sum()) / (k * len(predictions))


@dataclass(frozen=True)
class GroupConsistency:
    """The consistency of each of G groups from its counts of m = 0..k (``counts`` (G, k+1))."""

    counts: np.ndarray
    k: int

    @classmethod
    def of(cls, terms: np.ndarray, codes: np.ndarray, n_groups: int, k: int) -> GroupConsistency:
        """Count each group's terms; ``codes`` gives each person's group (0..G-1, or -1: in no group).

        >>> g = GroupConsistency.of(np.array([0, 1, 2, 0]), np.array([0, 0, 1, -1]), 2, 2)
        >>> g.counts.tolist(), g.value.tolist()
        ([[1, 1, 0], [0, 0, 1]], [0.75, 0.0])
        """
        inside = codes >= 0
        flat = np.bincount(codes[inside] * (k + 1) + terms[inside], minlength=n_groups * (k + 1))
        return cls(flat.reshape(n_groups, k + 1), k)

    @property
    def n(self) -> np.ndarray:
        """People per group."""
        return np.asarray(self.counts.sum(axis=1))

    @property
    def value(self) -> np.ndarray:
        """Each group's consistency, 1 - mean term (NaN for an empty group)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(1.0 - self._mean_term())

    def _mean_term(self) -> np.ndarray:
        levels = np.arange(self.k + 1) / self.k
        return np.asarray((self.counts * levels).sum(axis=1) / self.n)

    @property
    def se(self) -> np.ndarray:
        """The standard error of each group's mean term (sample standard deviation / sqrt n; NaN below 2)."""
        levels = np.arange(self.k + 1) / self.k
        n = self.n
        with np.errstate(divide="ignore", invalid="ignore"):
            mean = self._mean_term()
            squares = (self.counts * (levels[None, :] - mean[:, None]) ** 2).sum(axis=1)
            return np.where(n > 1, np.sqrt(squares / (n - 1) / n), np.nan)

    def interval(self, z: float) -> tuple[np.ndarray, np.ndarray]:
        """Each group's normal interval at quantile ``z``, cut to [0, 1]."""
        value, se = self.value, self.se
        return np.clip(value - z * se, 0.0, 1.0), np.clip(value + z * se, 0.0, 1.0)


def _check(features: np.ndarray, predictions: np.ndarray, k: int) -> None:
    if features.ndim != 2 or features.shape[0] != predictions.size:
        raise ValueError(
            f"features must be a (people x features) matrix with one row per prediction; got shape "
            f"{features.shape} for {predictions.size} predictions"
        )
    if features.shape[1] == 0:
        raise ValueError("consistency needs at least one feature column")
    if not np.isfinite(features).all():
        raise ValueError("features must be finite numbers (no NaN or infinity)")
    if not np.isin(predictions, (0, 1)).all():
        raise ValueError("consistency needs 0/1 decisions")
    if not 1 <= k <= predictions.size:
        raise ValueError(f"k = {k} neighbours needs 1 <= k <= the number of people ({predictions.size})")
