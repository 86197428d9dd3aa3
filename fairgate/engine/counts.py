"""The sufficient statistics of a binary classifier per group (:class:`GroupCounts`) and Kish's effective size.

What every group metric (``fairgate.engine.metrics``) is computed from: confusion counts, calibration bins and,
where rows carry weights, the sums of squared weights that give the effective sample sizes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class GroupCounts:
    """Sufficient statistics per group of a binary classifier (weighted counts where membership is soft).

    ``tp, fp, tn, fn`` have shape ``(..., G)``; the calibration arrays ``bin_n, bin_positive, bin_score``
    have shape ``(..., G, bins)`` (count, favourable labels, and sum of scores per equal-width score bin).

    With weights (probabilistic membership), ``tp_sq, fp_sq, tn_sq, fn_sq`` hold the sums of squared weights
    of the same cells; interval and test inputs then come from Kish's effective sample size
    (``effective_fraction``, ``n_effective``), which does not change when every weight is multiplied by a
    constant. Without them (unweighted data, bootstrap replicates) the counts are used as they are.
    """

    tp: np.ndarray
    fp: np.ndarray
    tn: np.ndarray
    fn: np.ndarray
    bin_n: np.ndarray
    bin_positive: np.ndarray
    bin_score: np.ndarray
    tp_sq: np.ndarray | None = None
    fp_sq: np.ndarray | None = None
    tn_sq: np.ndarray | None = None
    fn_sq: np.ndarray | None = None

    @property
    def n(self) -> np.ndarray:
        """The (weighted) group size: ``tp + fp + tn + fn``."""
        size: np.ndarray = self.tp + self.fp + self.tn + self.fn
        return size

    @property
    def bin_total(self) -> np.ndarray:
        """Each group's calibration-bin counts summed over the bins (found once: both calibration errors read it).

        Kept in the instance's ``__dict__`` (the counts are frozen; ``functools.cached_property`` would lock
        every instance's first read against the other slicing thread's).
        """
        total: np.ndarray | None = self.__dict__.get("_bin_total")
        if total is None:
            total = self.__dict__["_bin_total"] = self.bin_n.sum(axis=-1)
        return total

    @property
    def weighted(self) -> bool:
        """Whether squared-weight sums are present (effective sizes differ from the counts)."""
        return self.tp_sq is not None

    def total(self, names: tuple[str, ...]) -> np.ndarray:
        """The sum of some of the confusion cells, named as in ``("tp", "fn")`` (a new array)."""
        return _summed([getattr(self, name) for name in names], self.tp)

    def total_sq(self, names: tuple[str, ...]) -> np.ndarray:
        """The sum of squared weights over some of the confusion cells (the counts when unweighted)."""
        if not self.weighted:
            return self.total(names)
        return _summed([getattr(self, f"{name}_sq") for name in names], self.tp)

    @property
    def n_effective(self) -> np.ndarray:
        """Kish's effective group size (sum w)^2 / sum w^2; the group size itself when unweighted.

        >>> counts = GroupCounts(*(np.array([1.0]) for _ in range(7)), *(np.array([0.25]) for _ in range(4)))
        >>> counts.n.tolist(), counts.n_effective.tolist()
        ([4.0], [16.0])
        """
        if not self.weighted:
            return self.n
        return effective_size(self.n, self.total_sq(CONFUSION))

    def scaled(self, factor: np.ndarray) -> GroupCounts:
        """Every count and calibration sum of group g multiplied by ``factor[g]`` (rates are unchanged)."""
        factor = np.asarray(factor, dtype=float)
        per_bin = factor[..., None]
        return GroupCounts(
            tp=self.tp * factor,
            fp=self.fp * factor,
            tn=self.tn * factor,
            fn=self.fn * factor,
            bin_n=self.bin_n * per_bin,
            bin_positive=self.bin_positive * per_bin,
            bin_score=self.bin_score * per_bin,
        )

    def effective_scale(self) -> np.ndarray:
        """Per group, Kish's effective size over the sum of weights (1 when unweighted or empty)."""
        n = self.n
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(n > 0, self.n_effective / np.where(n > 0, n, 1.0), 1.0)

    def in_effective_units(self) -> GroupCounts:
        """The counts rescaled per group so that they sum to Kish's effective size.

        This is what variance formulas that take counts (a bin's label variance, a rate's p(1 - p) / n) need;
        the counts themselves when unweighted.
        """
        return self.scaled(self.effective_scale()) if self.weighted else self

    def effective_class_sizes(self, positives: np.ndarray, negatives: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Kish sizes of the favourable (y_true = 1) and unfavourable rows, for AUC standard errors.

        The given (weighted) class sizes are returned as they are when unweighted.
        """
        if not self.weighted:
            return positives, negatives
        return (
            effective_size(self.tp + self.fn, self.total_sq(("tp", "fn"))),
            effective_size(self.fp + self.tn, self.total_sq(("fp", "tn"))),
        )

    def effective_fraction(
        self, numerator: tuple[str, ...], denominator: tuple[str, ...]
    ) -> tuple[np.ndarray, np.ndarray]:
        """(successes, trials) for interval and test formulas.

        The weighted proportion p times Kish's effective size of the denominator, and that size. Equal to the
        plain counts when unweighted.
        """
        successes, trials = self.total(numerator), self.total(denominator)
        if not self.weighted:
            return successes, trials
        n_eff = effective_size(trials, self.total_sq(denominator))
        with np.errstate(divide="ignore", invalid="ignore"):
            proportion = np.where(trials > 0, successes / np.where(trials > 0, trials, 1.0), 0.0)
        return proportion * n_eff, n_eff


CONFUSION = ("tp", "fp", "tn", "fn")


def _summed(arrays: list[np.ndarray], like: np.ndarray) -> np.ndarray:
    """``arrays`` added in order into a new array (zeros like ``like`` when there are none).

    The same values, bit for bit, as ``0 + a + b + ...``: counts are never -0.
    """
    if not arrays:
        return np.zeros_like(like)
    total = np.array(arrays[0], dtype=np.result_type(like, *arrays), copy=True)
    for array in arrays[1:]:
        total = total + array if np.shape(array) != total.shape else np.add(total, array, out=total)
    return total


def effective_size(weight_sum: np.ndarray, weight_sq_sum: np.ndarray) -> np.ndarray:
    """Kish's effective sample size (sum w)^2 / sum w^2, 0 where there is no weight.

    Invariant to the weights' scale, and equal to the number of rows when every weight is 1.

    >>> effective_size(np.array([3.0, 0.6, 0.0]), np.array([3.0, 0.12, 0.0])).tolist()
    [3.0, 3.0, 0.0]
    """
    weight_sum = np.asarray(weight_sum, dtype=float)
    weight_sq_sum = np.asarray(weight_sq_sum, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(weight_sq_sum > 0, weight_sum**2 / np.where(weight_sq_sum > 0, weight_sq_sum, 1.0), 0.0)
