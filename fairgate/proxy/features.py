"""Proxy features: how strongly each model input predicts each sensitive attribute, and the strong-proxy flag.

Measures: Cramer's V, the correlation ratio, mutual information and a held-out predictive check.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from fairgate.errors import DataError
from fairgate.policy.core import Policy
from fairgate.policy.proxy import ProxyFeatures
from fairgate.proxy.posterior import PERSON, most_likely


def _codes(series: pl.Series) -> tuple[np.ndarray, int]:
    """Integer codes 0..k-1 for a categorical series (null is a category of its own)."""
    text = series.cast(pl.String).fill_null("\x00null")
    codes = text.rank("dense").cast(pl.Int64).to_numpy() - 1
    return codes, int(codes.max()) + 1 if codes.size else 0


def _contingency(x: np.ndarray, kx: int, y: np.ndarray, ky: int) -> np.ndarray:
    return np.bincount(x * ky + y, minlength=kx * ky).reshape(kx, ky).astype(float)


def cramers_v(table: np.ndarray) -> float | None:
    """Cramer's V of a contingency table (no bias correction), as ``scipy.stats.contingency.association``.

    >>> cramers_v(np.array([[10, 0], [0, 10]]))
    1.0
    """
    table = np.asarray(table, dtype=float)
    table = table[table.sum(axis=1) > 0][:, table.sum(axis=0) > 0]
    n = table.sum()
    k = min(table.shape) - 1 if table.ndim == 2 and table.size else 0
    if n == 0 or k <= 0:
        return None
    expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / n
    chi2 = float(((table - expected) ** 2 / expected).sum())
    return math.sqrt(min(1.0, chi2 / (n * k)))


def correlation_ratio(categories: np.ndarray, values: np.ndarray) -> float | None:
    """Correlation ratio eta: sqrt(between-category sum of squares / total sum of squares).

    >>> round(correlation_ratio(np.array([0, 0, 1, 1]), np.array([1.0, 1.0, 3.0, 3.0])), 6)
    1.0
    """
    values = np.asarray(values, dtype=float)
    ok = np.isfinite(values)
    categories, values = np.asarray(categories)[ok], values[ok]
    if values.size == 0:
        return None
    total = float(((values - values.mean()) ** 2).sum())
    if total == 0:
        return None
    _, inverse = np.unique(categories, return_inverse=True)
    counts = np.bincount(inverse)
    means = np.bincount(inverse, weights=values) / counts
    between = float((counts * (means - values.mean()) ** 2).sum())
    return math.sqrt(min(1.0, between / total))


def mutual_information(table: np.ndarray) -> float:
    """Mutual information (nats) of a contingency table, as ``sklearn.metrics.mutual_info_score``."""
    table = np.asarray(table, dtype=float)
    n = table.sum()
    if n == 0:
        return 0.0
    pxy = table / n
    px, py = pxy.sum(axis=1, keepdims=True), pxy.sum(axis=0, keepdims=True)
    nz = pxy > 0
    return float(max(0.0, (pxy[nz] * np.log(pxy[nz] / (px @ py)[nz])).sum()))


def _entropy(counts: np.ndarray) -> float:
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log(p)).sum())


def predictive_check(
    x: np.ndarray, kx: int, y: np.ndarray, ky: int, *, folds: int = 5, seed: int = 0
) -> dict[str, float]:
    """Held-out balanced accuracy of predicting ``y`` from ``x`` alone with a per-value frequency classifier.

    Each fold is predicted from the other folds' counts: the class maximising P(value | class) (which is what
    maximises balanced accuracy); values never seen in training predict the majority class. The baseline is
    the majority-class predictor, whose balanced accuracy is 1/K. Memorising a high-cardinality feature
    (a PIN code with a handful of people each) gains nothing here, unlike in Cramer's V.
    """
    n = x.size
    fold = np.random.default_rng(seed).permutation(n) % folds
    predicted = np.empty(n, dtype=np.int64)
    for f in range(folds):
        train, test = fold != f, fold == f
        counts = _contingency(x[train], kx, y[train], ky)
        class_totals = counts.sum(axis=0)
        majority = int(np.argmax(class_totals))
        likelihood = counts / np.where(class_totals > 0, class_totals, 1.0)
        best = np.argmax(likelihood, axis=1)
        seen = counts.sum(axis=1) > 0
        best[~seen] = majority
        predicted[test] = best[x[test]]
    recalls = [float((predicted[y == k] == k).mean()) for k in range(ky) if (y == k).any()]
    present = len(recalls)
    return {
        "balanced_accuracy": float(np.mean(recalls)) if recalls else float("nan"),
        "baseline_balanced_accuracy": 1.0 / present if present else float("nan"),
    }


def _is_numeric(series: pl.Series, bins: int) -> bool:
    return series.dtype.is_numeric() and series.dtype != pl.Boolean and series.n_unique() > bins


def _quantile_bins(series: pl.Series, bins: int) -> np.ndarray:
    values = series.cast(pl.Float64).to_numpy()
    finite = values[np.isfinite(values)]
    edges = np.unique(np.quantile(finite, np.linspace(0, 1, bins + 1)[1:-1])) if finite.size else np.array([])
    codes = np.searchsorted(edges, values, side="right")
    codes[~np.isfinite(values)] = edges.size + 1  # missing values: their own bin
    return codes


@dataclass(frozen=True)
class _Settings:
    cramers_v_threshold: float
    correlation_ratio_threshold: float
    min_balanced_accuracy_lift: float
    folds: int
    numeric_bins: int
    seed: int


@dataclass(frozen=True)
class _Target:
    """One sensitive attribute as integer codes (rows where it is null left out), with its entropy."""

    name: str
    codes: np.ndarray
    k: int
    entropy: float


def proxy_feature_strength(
    features: pl.DataFrame,
    attributes: pl.DataFrame,
    *,
    cramers_v_threshold: float = 0.3,
    correlation_ratio_threshold: float = 0.3,
    min_balanced_accuracy_lift: float = 0.05,
    folds: int = 5,
    numeric_bins: int = 10,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """How strongly each model input predicts each sensitive attribute, with a flag for strong proxies.

    Categorical features (text, booleans, numbers with at most ``numeric_bins`` distinct values) get Cramer's
    V; numeric ones the correlation ratio, and are cut into ``numeric_bins`` quantile bins for the mutual
    information and the predictive check. A feature is flagged when its association reaches the threshold
    AND its held-out balanced accuracy beats the majority baseline by ``min_balanced_accuracy_lift``:
    association alone overstates high-cardinality features, prediction alone ignores effect size.
    Rows whose attribute is null are left out of that attribute's measures.
    """
    if features.height != attributes.height:
        raise DataError(
            f"features ({features.height} rows) and attributes ({attributes.height} rows) must describe the "
            "same people in the same order"
        )
    settings = _Settings(
        cramers_v_threshold, correlation_ratio_threshold, min_balanced_accuracy_lift, folds, numeric_bins, seed
    )
    out: list[dict[str, Any]] = []
    for attribute in attributes.columns:
        keep = attributes[attribute].is_not_null()
        y, ky = _codes(attributes[attribute].filter(keep))
        target = _Target(attribute, y, ky, _entropy(np.bincount(y).astype(float)) if y.size else 0.0)
        for feature in features.columns:
            out.append(_feature_strength(feature, features[feature].filter(keep), target, settings))
    return out


def _feature_strength(feature: str, column: pl.Series, target: _Target, s: _Settings) -> dict[str, Any]:
    """One (feature, attribute) row of :func:`proxy_feature_strength`."""
    y, ky = target.codes, target.k
    numeric = _is_numeric(column, s.numeric_bins)
    x, kx, strength, measure, threshold = _association(column, numeric, y, ky, s)
    table = _contingency(x, kx, y, ky) if y.size else np.zeros((1, 1))
    mi = mutual_information(table)
    check = (
        predictive_check(x, kx, y, ky, folds=s.folds, seed=s.seed)
        if y.size
        else {"balanced_accuracy": float("nan"), "baseline_balanced_accuracy": float("nan")}
    )
    lift = check["balanced_accuracy"] - check["baseline_balanced_accuracy"]
    return {
        "feature": feature,
        "attribute": target.name,
        "kind": "numeric" if numeric else "categorical",
        "measure": measure,
        "value": strength,
        "cramers_v": None if numeric else strength,
        "correlation_ratio": strength if numeric else None,
        "mutual_information": mi,
        "normalized_mutual_information": mi / target.entropy if target.entropy > 0 else None,
        "balanced_accuracy": _finite_or_none(check["balanced_accuracy"]),
        "baseline_balanced_accuracy": _finite_or_none(check["baseline_balanced_accuracy"]),
        "balanced_accuracy_lift": _finite_or_none(lift),
        "threshold": threshold,
        "n": int(y.size),
        "flag": bool(
            strength is not None
            and strength >= threshold
            and math.isfinite(lift)
            and lift >= s.min_balanced_accuracy_lift
        ),
    }


def _association(
    column: pl.Series, numeric: bool, y: np.ndarray, ky: int, s: _Settings
) -> tuple[np.ndarray, int, float | None, str, float]:
    """The feature's codes and their count, its association with ``y``, the measure's name and threshold."""
    if numeric:
        x = _quantile_bins(column, s.numeric_bins)
        kx = int(x.max()) + 1 if x.size else 0
        strength = correlation_ratio(y, column.cast(pl.Float64).to_numpy())
        return x, kx, strength, "correlation_ratio", s.correlation_ratio_threshold
    x, kx = _codes(column)
    strength = cramers_v(_contingency(x, kx, y, ky)) if y.size else None
    return x, kx, strength, "cramers_v", s.cramers_v_threshold


def _finite_or_none(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def policy_proxy_features(
    frame: pl.DataFrame, posterior: pl.DataFrame, policy: Policy, labels: dict[str, str]
) -> list[dict[str, Any]]:
    """Proxy-feature strengths of the policy's ``proxy_features.columns``.

    Measured against the declared attributes present in ``frame`` and the inferred attribute's most likely
    group (``posterior``: long rows).
    """
    config = policy.proxy
    assert config is not None
    assert config.proxy_features is not None
    settings: ProxyFeatures = config.proxy_features
    missing = [c for c in settings.columns if c not in frame.columns]
    if missing:
        raise DataError(
            f"proxy_features.columns names {missing}, missing from the aligned input; columns present: "
            f"{frame.columns}. Add them to the attributes file or fix the names"
        )
    if not settings.columns:
        return []
    attributes = {a: frame[a] for a in policy.attribute_names if a in frame.columns}
    inferred = most_likely(posterior).sort(PERSON)["most_likely"].replace(labels)
    attributes[f"{config.attribute_name} (inferred)"] = inferred
    return proxy_feature_strength(
        frame.select(settings.columns),
        pl.DataFrame(attributes),
        cramers_v_threshold=settings.cramers_v_threshold,
        correlation_ratio_threshold=settings.correlation_ratio_threshold,
        min_balanced_accuracy_lift=settings.min_balanced_accuracy_lift,
        folds=settings.folds,
        numeric_bins=settings.numeric_bins,
        seed=settings.seed,
    )
