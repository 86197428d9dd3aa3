"""Per-group multiclass metrics from K x K confusion counts, one-vs-rest per class.

A confusion array has shape ``(..., G, K, K)``: rows the true class, columns the predicted class, one matrix per
group, with optional leading axes (bootstrap replicates). Every per-class metric is a *rate*: a sum of some
cells of the matrix over a sum of others, written as two masks of shape ``(C, K, K)`` (C = K for per-class
metrics, 1 for accuracy), so all of them, for all groups and replicates, are two matrix products.

Names follow sklearn and Fairlearn, one-vs-rest: class c's ``true_positive_rate`` is sklearn's
``recall_score(average=None)[c]``, its ``positive_predictive_value`` is ``precision_score(average=None)[c]``,
its ``selection_rate`` is Fairlearn's selection rate of the indicator ``y_pred == c``. A rate whose denominator
is 0 is undefined (NaN), never 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fairgate.engine.metrics import effective_size


@dataclass(frozen=True)
class ClassRate:
    """A rate over the confusion matrix: ``sum(M * numerator[c]) / sum(M * denominator[c])`` for each c.

    ``per_class`` is False for a single value per group (accuracy: C = 1).
    """

    name: str
    per_class: bool
    description: str


def rate_masks(name: str, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The numerator and denominator masks, shape ``(C, K, K)``, of the rate called ``name`` for K classes.

    >>> numerator, denominator = rate_masks("true_positive_rate", 3)
    >>> numerator[1].astype(int).tolist(), denominator[1].astype(int).tolist()
    ([[0, 0, 0], [0, 1, 0], [0, 0, 0]], [[0, 0, 0], [1, 1, 1], [0, 0, 0]])
    """
    eye = np.eye(k)
    diagonal = np.einsum("ci,cj->cij", eye, eye)  # [c, c, c] = 1: the correct predictions of class c
    true_is = np.repeat(eye[:, :, None], k, axis=2)  # [c, c, :] = 1: the people of true class c
    pred_is = np.repeat(eye[:, None, :], k, axis=1)  # [c, :, c] = 1: the people predicted c
    everyone = np.ones((k, k, k))
    masks = {
        "selection_rate": (pred_is, everyone),
        "base_rate": (true_is, everyone),
        "true_positive_rate": (diagonal, true_is),
        "false_negative_rate": (true_is - diagonal, true_is),
        "false_positive_rate": (pred_is - diagonal, everyone - true_is),
        "positive_predictive_value": (diagonal, pred_is),
        "accuracy": (np.eye(k)[None], np.ones((1, k, k))),
    }
    if name not in masks:
        raise ValueError(f"unknown multiclass rate {name!r}; use one of {sorted(masks)}")
    return masks[name]


RATES: dict[str, ClassRate] = {
    rate.name: rate
    for rate in (
        ClassRate("selection_rate", True, "share of the group predicted the class"),
        ClassRate("base_rate", True, "share of the group whose true class it is"),
        ClassRate("true_positive_rate", True, "share of the class's members predicted the class (recall)"),
        ClassRate("false_negative_rate", True, "share of the class's members predicted another class"),
        ClassRate("false_positive_rate", True, "share of the other classes' members predicted the class"),
        ClassRate("positive_predictive_value", True, "share of the predictions of the class that are right"),
        ClassRate("accuracy", False, "share of correct predictions"),
    )
}


def masked_sums(matrix: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``sum(matrix * mask[c])`` over the K x K axes, for every c: shape ``(..., G, C)``."""
    k = matrix.shape[-1]
    flat: np.ndarray = matrix.reshape(*matrix.shape[:-2], k * k) @ mask.reshape(mask.shape[0], k * k).T
    return flat


def divide(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """Numerator / denominator, NaN (undefined) where the denominator is zero."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator > 0, numerator / np.where(denominator > 0, denominator, 1.0), np.nan)


def rate(matrix: np.ndarray, name: str) -> np.ndarray:
    """The rate per group (and class): shape ``(..., G, C)``.

    >>> m = np.array([[[5.0, 1.0, 0.0], [2.0, 6.0, 2.0], [0.0, 0.0, 4.0]]])  # one group, 3 classes
    >>> rate(m, "true_positive_rate").round(3).tolist(), rate(m, "accuracy").round(3).tolist()
    ([[0.833, 0.6, 1.0]], [[0.75]])
    """
    numerator, denominator = rate_masks(name, matrix.shape[-1])
    return divide(masked_sums(matrix, numerator), masked_sums(matrix, denominator))


def effective_fraction(matrix: np.ndarray, matrix_sq: np.ndarray | None, name: str) -> tuple[np.ndarray, np.ndarray]:
    """(successes, trials) of a rate for intervals and tests, per group and class.

    The plain counts when unweighted (``matrix_sq`` None); with weights, the weighted proportion times Kish's
    effective size of the denominator's cells, and that size (as the binary engine's ``effective_fraction``).
    """
    numerator, denominator = rate_masks(name, matrix.shape[-1])
    successes, trials = masked_sums(matrix, numerator), masked_sums(matrix, denominator)
    if matrix_sq is None:
        return successes, trials
    n_eff = effective_size(trials, masked_sums(matrix_sq, denominator))
    proportion = np.nan_to_num(divide(successes, trials), nan=0.0)
    return proportion * n_eff, n_eff
