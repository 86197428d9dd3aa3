"""Group metrics of a regression model from weighted moment sums.

Every function takes the sums of one or more groups as arrays shaped ``(..., G)`` (the point estimate, or a
leading axis of bootstrap replicates) and returns one value per group; an undefined value is NaN (null in JSON).
Names follow scikit-learn: ``mean_absolute_error``, ``mean_squared_error``, ``root_mean_squared_error``,
``r2_score``; the residual is prediction - label, so a positive ``mean_residual`` means over-prediction.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fairgate.engine.regression.columns import (
    ABS_RESIDUAL,
    LABEL_SQ,
    LABEL_SUM,
    PRED_LABEL,
    PRED_SQ,
    PRED_SUM,
    RESIDUAL_SQ,
    SUMS,
    WEIGHT,
)

#: The group metrics, in the order of the result. The loss metrics are those bounded group loss takes a max of.
GROUP_METRICS = (
    "mean_prediction",
    "mean_label",
    "mean_residual",
    "mean_absolute_error",
    "mean_squared_error",
    "root_mean_squared_error",
    "r2_score",
)
LOSSES = ("mean_absolute_error", "mean_squared_error", "root_mean_squared_error")


@dataclass(frozen=True)
class Sums:
    """Weighted sums per group (``columns.SUMS``), predictions and labels shifted by ``shift``.

    ``values`` has shape ``(..., G, len(SUMS))``.
    """

    values: np.ndarray
    shift: float

    def __getitem__(self, name: str) -> np.ndarray:
        column: np.ndarray = self.values[..., SUMS.index(name)]
        return column


def group_metrics(sums: Sums) -> dict[str, np.ndarray]:
    """Every metric of ``GROUP_METRICS`` per group; NaN where a group has no weight (R^2: no label variance).

    >>> # Two rows of one group: predictions 1 and 3, labels 2 and 2 (unshifted, weight 1 each).
    >>> s = Sums(np.array([[2.0, 4.0, 4.0, 10.0, 8.0, 8.0, 2.0, 2.0]]), shift=0.0)
    >>> {k: round(float(v[0]), 3) for k, v in group_metrics(s).items()}  # doctest: +NORMALIZE_WHITESPACE
    {'mean_prediction': 2.0, 'mean_label': 2.0, 'mean_residual': 0.0, 'mean_absolute_error': 1.0,
     'mean_squared_error': 1.0, 'root_mean_squared_error': 1.0, 'r2_score': nan}
    """
    weight = sums[WEIGHT]
    with np.errstate(divide="ignore", invalid="ignore"):
        defined = weight > 0
        safe = np.where(defined, weight, 1.0)
        mean_p = sums[PRED_SUM] / safe
        mean_y = sums[LABEL_SUM] / safe
        mse = np.clip(sums[RESIDUAL_SQ] / safe, 0.0, None)
        # Sum of squares of labels about their (weighted) mean: sklearn's r2_score denominator.
        total = sums[LABEL_SQ] - sums[LABEL_SUM] * mean_y
        # Relative to the squares' scale, a total this small is rounding noise: the labels are constant.
        constant = total <= 1e-12 * np.abs(sums[LABEL_SQ]) + np.finfo(float).tiny
        r2 = 1.0 - sums[RESIDUAL_SQ] / np.where(constant, 1.0, total)
    metrics = {
        "mean_prediction": mean_p + sums.shift,
        "mean_label": mean_y + sums.shift,
        "mean_residual": mean_p - mean_y,
        "mean_absolute_error": sums[ABS_RESIDUAL] / safe,
        "mean_squared_error": mse,
        "root_mean_squared_error": np.sqrt(mse),
        "r2_score": np.where(constant, np.nan, r2),
    }
    return {name: np.where(defined, value, np.nan) for name, value in metrics.items()}


def metric_variances(sums: Sums, covariance: np.ndarray) -> dict[str, np.ndarray]:
    """The delta-method variance of every group metric, from the covariance of the group's sums.

    Each metric is a smooth function of the sums; its gradient is taken by central differences (a step
    relative to each sum's size), and ``grad' covariance grad`` is its variance. ``sums.values`` is
    ``(..., G, k)`` and ``covariance`` ``(..., G, k, k)``. This studentises the bootstrap (bootstrap-t, as the
    binary rates are by their analytic variances): each replicate carries its own standard error.

    >>> s = Sums(np.array([[4.0, 8.0, 6.0, 20.0, 10.0, 14.0, 4.0, 4.0]]), shift=0.0)
    >>> cov = np.zeros((1, 8, 8)); cov[0, 1, 1] = 4.0  # only the predictions' sum varies
    >>> round(float(metric_variances(s, cov)["mean_prediction"][0]), 6)  # 4 / 4^2
    0.25
    """
    values = sums.values
    steps = 1e-6 * (np.abs(values) + 1.0)
    gradients: dict[str, list[np.ndarray]] = {}
    for j in range(values.shape[-1]):
        up, down = values.copy(), values.copy()
        up[..., j] += steps[..., j]
        down[..., j] -= steps[..., j]
        high, low = group_metrics(Sums(up, sums.shift)), group_metrics(Sums(down, sums.shift))
        for name in high:
            gradients.setdefault(name, []).append((high[name] - low[name]) / (2.0 * steps[..., j]))
    out = {}
    for name, parts in gradients.items():
        gradient = np.stack(parts, axis=-1)
        out[name] = np.einsum("...i,...ij,...j->...", gradient, covariance, gradient)
    return out


def prediction_variance(sums: Sums) -> np.ndarray:
    """The weighted (population) variance of the predictions in each group, from the sums; NaN without weight."""
    weight = sums[WEIGHT]
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = sums[PRED_SUM] / weight
        variance: np.ndarray = np.clip(sums[PRED_SQ] / weight - mean**2, 0.0, None)
    return np.where(weight > 0, variance, np.nan)


def prediction_label_covariance(sums: Sums) -> np.ndarray:
    """The weighted covariance of predictions and labels in each group; NaN without weight."""
    weight = sums[WEIGHT]
    with np.errstate(divide="ignore", invalid="ignore"):
        covariance: np.ndarray = sums[PRED_LABEL] / weight - (sums[PRED_SUM] / weight) * (sums[LABEL_SUM] / weight)
    return np.where(weight > 0, covariance, np.nan)
