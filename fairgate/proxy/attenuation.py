"""Attenuation of proxy-weighted disparities, and its correction through the mixing matrix (pure NumPy).

When group membership is inferred (BISG and the like), the rate of a group computed with posterior weights,
r_b = sum_i p_ib y_i / sum_i p_ib, mixes the true groups' rates: r = Q mu, where Q[b, a] is the share of the
weight of inferred group b held by people truly in group a. Rows of Q sum to 1, so every observed gap is a
weighted average of true gaps and shrinks toward zero (Chen, Kallus, Mao, Svacha & Udell 2019, "Fairness under
unawareness"). With two groups the observed difference is exactly (Q[0, 0] - Q[1, 0]) times the true one.

When the posteriors are calibrated (P(A = a | name, place) = p_ia) and the outcome does not depend on the
proxy's inputs once the true group is known, Q follows from the posteriors alone: E[p_ib 1{A = a}] =
E[p_ib p_ia], so the mixing matrix is M[a, b] = E[p_b | A = a] = sum_i p_ia p_ib / sum_i p_ia and
Q[b, a] = sum_i p_ia p_ib / sum_i p_ib. Solving r = Q mu is then the least-squares regression of the outcome
on the posterior vector without intercept, mu = (P'P)^{-1} P'y. More generally, for audit weights W that are
any function of the proxy's inputs (posteriors, or most-likely indicators), E[W'y] = E[W'P] mu and
mu = (W'P)^{-1} W'y, with a sandwich covariance that resamples persons (each person is one row here).

Rates with a denominator (TPR = E[y yhat | a] / E[y | a]) correct numerator and denominator means and take
the ratio (delta method). Gap summaries (max - min, min / max) get simultaneous max-t intervals over all
pairwise differences (log-ratios for ratios), folded into the range, so they keep their coverage where
groups are equal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np
import polars as pl

from fairgate.engine.stats import PairFamily, z_value
from fairgate.policy.core import Policy

# Per-person outcome columns whose group means the corrected rates are built from.
_MEANS = ("y_pred", "y_true_and_pred", "y_true", "not_true_and_pred", "not_true")
# Rate -> (numerator mean, denominator mean or None for the whole group).
RATES: dict[str, tuple[str, str | None]] = {
    "selection_rate": ("y_pred", None),
    "true_positive_rate": ("y_true_and_pred", "y_true"),
    "false_positive_rate": ("not_true_and_pred", "not_true"),
}
# Policy metrics that can be corrected: name -> (summary, bases).
CORRECTABLE: dict[str, tuple[str, tuple[str, ...]]] = {
    "demographic_parity_difference": ("difference", ("selection_rate",)),
    "demographic_parity_ratio": ("ratio", ("selection_rate",)),
    "disparate_impact_ratio": ("ratio", ("selection_rate",)),
    "equal_opportunity_difference": ("difference", ("true_positive_rate",)),
    "equal_opportunity_ratio": ("ratio", ("true_positive_rate",)),
    "equalized_odds_difference": ("difference", ("true_positive_rate", "false_positive_rate")),
    "equalized_odds_ratio": ("ratio", ("true_positive_rate", "false_positive_rate")),
}
# The identifiability rule. The correction inverts the mixing matrix M (rows: true groups, columns: inferred
# groups, each row summing to 1); its condition number kappa (largest / smallest singular value: 1 for a proxy
# that never errs, infinite for one that does not separate the groups) bounds how far a relative error in M (a
# miscalibration of the posteriors, or their noise) is amplified in the corrected rates. Above MAX_CONDITION a
# 1% error in M can move the corrected rates by more than 10%, as much as the gaps policies judge: the correction
# is then not identifiable and the results on the inferred attribute cannot pass.
MAX_CONDITION = 10.0
_MAX_T_DRAWS = 20_000
_CHUNK = 100_000

STATEMENT = (
    "Disparities computed with inferred (proxy) group membership are attenuated: each inferred group mixes "
    "people of every true group, so gaps between groups shrink toward zero (Chen, Kallus et al. 2019). The "
    "corrected estimates undo the mixing through the misclassification matrix estimated from the posteriors; "
    "they are valid when the posteriors are calibrated and the outcome does not depend on the proxy's inputs "
    "(name, place) once the true group is known. Otherwise the true disparity is only bounded, and the "
    "uncorrected value understates it."
)


@dataclass(frozen=True)
class CorrectedMeans:
    """Per-group means of several per-person columns, corrected for mixing, with their joint covariance.

    ``means`` is (groups x columns); ``covariance`` is over ``means.ravel(order="F")`` (column-major: all
    groups of the first column, then the next).
    """

    means: np.ndarray
    covariance: np.ndarray


def mixing_matrix(posteriors: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """M[a, b] = E[w_b | A = a] under calibration: sum_i p_ia w_ib / sum_i p_ia (w = p by default).

    Rows sum to 1 when the weights of each person sum to 1.

    >>> p = np.array([[0.9, 0.1], [0.2, 0.8]])
    >>> mixing_matrix(p).round(3).tolist()
    [[0.773, 0.227], [0.278, 0.722]]
    """
    posteriors = np.asarray(posteriors, dtype=float)
    weights = posteriors if weights is None else np.asarray(weights, dtype=float)
    joint = posteriors.T @ weights
    totals = posteriors.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        mixing: np.ndarray = joint / totals[:, None]
        return mixing


def corrected_means(posteriors: np.ndarray, values: np.ndarray, weights: np.ndarray | None = None) -> CorrectedMeans:
    """True-group means of ``values`` (persons x columns): mu = (W'P)^{-1} W'Y, with a sandwich covariance.

    With W = P (the default) this is least squares of each column on the posterior vector, no intercept.
    The covariance is the heteroscedasticity-robust sandwich (HC1): persons are the independent units.
    """
    posteriors = np.asarray(posteriors, dtype=float)
    weights = posteriors if weights is None else np.asarray(weights, dtype=float)
    values = np.asarray(values, dtype=float).reshape(posteriors.shape[0], -1)
    n, k = posteriors.shape
    bread = np.linalg.inv(weights.T @ posteriors)  # (W'P)^{-1}
    means = bread @ (weights.T @ values)  # (k, columns)
    residuals = values - posteriors @ means  # (n, columns)
    columns = values.shape[1]
    meat = np.zeros((columns * k, columns * k))
    for start in range(0, n, _CHUNK):  # in chunks: the per-person scores of a million people are large
        part = slice(start, start + _CHUNK)
        # Per-person scores, one block of k per column: w_i * e_ij (column-major over (column, group)).
        scores = (weights[part, None, :] * residuals[part, :, None]).reshape(-1, columns * k)
        meat += scores.T @ scores
    meat *= n / max(n - k, 1)
    full_bread = np.kron(np.eye(columns), bread)
    return CorrectedMeans(means, full_bread @ meat @ full_bread.T)


def corrected_rates(
    posteriors: np.ndarray, y_pred: np.ndarray, y_true: np.ndarray | None, weights: np.ndarray | None = None
) -> tuple[dict[str, np.ndarray], np.ndarray, list[str]]:
    """Corrected selection rate (and TPR, FPR when labels are given) per true group, with joint covariance.

    Returns the rates by name (each of length groups), the covariance of their concatenation in the order
    of the returned names, and those names.
    """
    y_pred = np.asarray(y_pred, dtype=float)
    names = ["selection_rate"] if y_true is None else list(RATES)
    if y_true is None:
        columns = {"y_pred": y_pred}
    else:
        y_true = np.asarray(y_true, dtype=float)
        columns = {
            "y_pred": y_pred,
            "y_true_and_pred": y_true * y_pred,
            "y_true": y_true,
            "not_true_and_pred": (1.0 - y_true) * y_pred,
            "not_true": 1.0 - y_true,
        }
    order = [c for c in _MEANS if c in columns]
    fitted = corrected_means(posteriors, np.column_stack([columns[c] for c in order]), weights)
    k = fitted.means.shape[0]
    rates, jacobian_rows = {}, []
    for name in names:
        numerator, denominator = RATES[name]
        top = fitted.means[:, order.index(numerator)]
        block = np.zeros((k, fitted.means.size))
        top_at = order.index(numerator) * k
        if denominator is None:
            rates[name] = top
            block[:, top_at : top_at + k] = np.eye(k)
        else:
            bottom = fitted.means[:, order.index(denominator)]
            bottom_at = order.index(denominator) * k
            with np.errstate(divide="ignore", invalid="ignore"):
                rates[name] = top / bottom
                block[:, top_at : top_at + k] = np.diag(1.0 / bottom)
                block[:, bottom_at : bottom_at + k] = np.diag(-top / bottom**2)
        jacobian_rows.append(block)
    jacobian = np.vstack(jacobian_rows)
    return rates, jacobian @ fitted.covariance @ jacobian.T, names


def naive_rates(weights: np.ndarray, y_pred: np.ndarray, y_true: np.ndarray | None) -> dict[str, np.ndarray]:
    """The weighted rates per inferred group, as the audit computes them (the attenuated estimates)."""
    weights = np.asarray(weights, dtype=float)
    y_pred = np.asarray(y_pred, dtype=float)

    def rate(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio: np.ndarray = (weights.T @ numerator) / (weights.T @ denominator)
            return ratio

    out = {"selection_rate": rate(y_pred, np.ones_like(y_pred))}
    if y_true is not None:
        y_true = np.asarray(y_true, dtype=float)
        out["true_positive_rate"] = rate(y_true * y_pred, y_true)
        out["false_positive_rate"] = rate((1.0 - y_true) * y_pred, 1.0 - y_true)
    return out


def folded_gap(
    estimates: np.ndarray, covariance: np.ndarray, families: Sequence[slice], *, summary: str, level: float, seed: int
) -> tuple[float, float, float]:
    """A gap summary over groups and its simultaneous interval.

    Max-min (or min/max) of each family, worst over families, from max-t intervals of all pairwise differences
    (log-ratios) folded into the range: the bounds of :func:`corrected_family` at ``level``, the same family the
    gate judges.

    ``estimates`` concatenates the families' per-group values; ``covariance`` is their joint covariance.
    Returns (value, ci_low, ci_high); NaN where undefined (a ratio needs positive rates).
    """
    family = corrected_family(estimates, covariance, [f.stop - f.start for f in families], summary=summary, seed=seed)
    if family is None:
        return float("nan"), float("nan"), float("nan")
    low, high = family.bounds(family.critical(level))
    point = float(np.max(family.gap))
    if summary == "ratio":
        return float(np.exp(-point)), float(np.exp(-high)), float(np.exp(-low))
    return point, low, high


def corrected_family(
    estimates: np.ndarray, covariance: np.ndarray, sizes: Sequence[int], *, summary: str, seed: int
) -> PairFamily | None:
    """The simultaneous pairwise family of corrected group rates, in the shape the gate judges.

    ``estimates`` concatenates ``len(sizes)`` components (e.g. TPR then FPR) over their groups; ``covariance``
    is their joint (sandwich, delta-method) covariance. Pair gaps are differences, or differences of logarithms
    for a ``ratio``; the max-t null is drawn from the normal law of the pair gaps (seeded), as the bootstrap's
    is for measured rates. None where a ratio's rate is not positive or a pair has no positive variance.
    """
    estimates = np.asarray(estimates, dtype=float)
    if not np.all(np.isfinite(estimates)) or (summary == "ratio" and not np.all(estimates > 0)):
        return None
    values = np.log(estimates) if summary == "ratio" else estimates
    scale = np.diag(1.0 / estimates) if summary == "ratio" else np.eye(estimates.size)
    pairs, start = [], 0
    for size in sizes:
        pairs += [(start + i, start + j) for i, j in combinations(range(size), 2)]
        start += size
    contrast = np.zeros((len(pairs), estimates.size))
    for row, (i, j) in enumerate(pairs):
        contrast[row, i], contrast[row, j] = 1.0, -1.0
    gap_cov = contrast @ scale @ covariance @ scale.T @ contrast.T
    se = np.sqrt(np.clip(np.diag(gap_cov), 0.0, None))
    if not pairs or not np.all(np.isfinite(se)) or not np.all(se > 0):
        return None
    correlation = gap_cov / np.outer(se, se)
    draws = np.random.default_rng(seed).multivariate_normal(
        np.zeros(len(pairs)), correlation, size=_MAX_T_DRAWS, method="eigh"
    )
    null = np.sort(np.abs(draws).max(axis=1))
    return PairFamily(np.abs(contrast @ values), se, null, tuple(sizes))


def max_t_critical(covariance: np.ndarray, level: float, seed: int) -> float:
    """The level quantile of max_j |Z_j| / sd_j for Z ~ N(0, covariance), by seeded simulation.

    >>> abs(max_t_critical(np.eye(1), 0.95, 0) - 1.96) < 0.1  # one component: the normal quantile
    True
    """
    sd = np.sqrt(np.clip(np.diag(covariance), 0.0, None))
    keep = sd > 0
    if not keep.any():
        return z_value(level)
    correlation = covariance[np.ix_(keep, keep)] / np.outer(sd[keep], sd[keep])
    draws = np.random.default_rng(seed).multivariate_normal(
        np.zeros(int(keep.sum())), correlation, size=_MAX_T_DRAWS, method="eigh"
    )
    return float(np.quantile(np.abs(draws).max(axis=1), level))


def attenuation_report(
    posteriors: np.ndarray,
    groups: Sequence[str],
    *,
    y_pred: np.ndarray,
    y_true: np.ndarray | None = None,
    metrics: Sequence[str] = ("demographic_parity_difference",),
    weights: np.ndarray | None = None,
    confidence_level: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """The attenuation statement and the corrected estimates, as the audit document's ``attenuation`` block.

    ``posteriors`` is (persons x groups), calibrated P(group | proxy inputs); ``weights`` the audit's
    membership weights per person and group (default: the posteriors, i.e. probabilistic mode); ``y_pred`` and
    ``y_true`` the favourable-outcome indicators per person. Metrics outside :data:`CORRECTABLE` are listed
    with the reason they are not corrected.
    """
    posteriors = np.asarray(posteriors, dtype=float)
    weights_used = posteriors if weights is None else np.asarray(weights, dtype=float)
    mixing = mixing_matrix(posteriors, weights_used)
    report: dict[str, Any] = {
        # Known membership (one-hot posteriors) mixes nothing; anything else shrinks gaps.
        "attenuated": not np.allclose(mixing, np.eye(mixing.shape[0]), atol=1e-9),
        "statement": STATEMENT,
        "groups": list(groups),
        "n_people": int(posteriors.shape[0]),
        "mixing_matrix": _rounded(mixing),
        "prevalence": _rounded(posteriors.mean(axis=0)),
        "metrics": [],
    }
    problem = _ill_posed(posteriors, weights_used, mixing)
    report["condition_number"] = _number(_condition(mixing)) if posteriors.ndim == 2 else None
    report["max_condition_number"] = MAX_CONDITION
    report["identifiable"] = problem is None
    naive = naive_rates(weights_used, y_pred, y_true)
    corrected: tuple[dict[str, np.ndarray], np.ndarray, list[str]] | None = None
    if problem is None:
        corrected = corrected_rates(posteriors, y_pred, y_true, weights_used)
    z = z_value(confidence_level)
    for metric in metrics:
        report["metrics"].append(
            _metric_entry(metric, list(groups), naive, corrected, problem, confidence_level, z, seed)
        )
    return report


def _ill_posed(posteriors: np.ndarray, weights: np.ndarray, mixing: np.ndarray) -> str | None:
    """Why the correction cannot be made (None when it can): too few people, bad posteriors, or the rule above."""
    if posteriors.ndim != 2 or posteriors.shape[1] < 2 or posteriors.shape[0] <= posteriors.shape[1]:
        return "needs more people than groups, and at least two groups"
    if not np.all(np.isfinite(posteriors)) or np.any(posteriors < 0):
        return "posteriors must be finite and non-negative"
    condition = _condition(mixing)
    if not np.isfinite(np.linalg.cond(weights.T @ posteriors)) or not condition <= MAX_CONDITION:
        return (
            f"the correction is not identifiable: the mixing matrix's condition number is {condition:.3g}, above "
            f"{MAX_CONDITION:g} (the proxy does not separate the groups enough to undo the mixing)"
        )
    return None


def _condition(mixing: np.ndarray) -> float:
    """The mixing matrix's condition number (infinite where it has undefined entries: a group without weight)."""
    if not np.all(np.isfinite(mixing)):
        return float("inf")
    return float(np.linalg.cond(mixing))


def _metric_entry(
    metric: str,
    groups: list[str],
    naive: dict[str, np.ndarray],
    corrected: tuple[dict[str, np.ndarray], np.ndarray, list[str]] | None,
    problem: str | None,
    level: float,
    z: float,
    seed: int,
) -> dict[str, Any]:
    entry: dict[str, Any] = {"metric": metric}
    if metric not in CORRECTABLE:
        return entry | {"corrected": None, "attenuation_factor": None, "reason": "no mixing correction for it"}
    summary, bases = CORRECTABLE[metric]
    if any(b not in naive for b in bases):
        return entry | {"corrected": None, "attenuation_factor": None, "reason": "needs labels (y_true)"}
    naive_value = _summarise(np.concatenate([naive[b] for b in bases]), [len(groups)] * len(bases), summary)
    entry["naive_value"] = _number(naive_value)
    if corrected is None:
        return entry | {"corrected": None, "attenuation_factor": None, "reason": problem}
    rates, covariance, names = corrected
    k = len(groups)
    index = np.concatenate([np.arange(names.index(b) * k, (names.index(b) + 1) * k) for b in bases])
    families = [slice(i * k, (i + 1) * k) for i in range(len(bases))]
    estimates = np.concatenate([rates[b] for b in bases])
    joint = covariance[np.ix_(index, index)]
    value, low, high = folded_gap(estimates, joint, families, summary=summary, level=level, seed=seed)
    se = np.sqrt(np.clip(np.diag(covariance), 0.0, None))
    entry["corrected"] = {
        "value": _number(value),
        "ci_low": _number(low),
        "ci_high": _number(high),
        "by_group": {
            base: {
                g: {
                    "value": _number(rates[base][i]),
                    "ci_low": _number(rates[base][i] - z * se[names.index(base) * k + i]),
                    "ci_high": _number(rates[base][i] + z * se[names.index(base) * k + i]),
                    "naive_value": _number(naive[base][i]),
                }
                for i, g in enumerate(groups)
            }
            for base in bases
        },
        # What the gate judges (fairgate/proxy/judged.py): the covariance of the by-group values, bases outer.
        "covariance": joint.tolist(),
    }
    entry["attenuation_factor"] = _factor(naive_value, value, summary)
    return entry


def _summarise(values: np.ndarray, sizes: list[int], summary: str) -> float:
    """max-min (worst over families) or min/max (worst over families) of concatenated group values."""
    out, start = [], 0
    for size in sizes:
        part = values[start : start + size]
        part = part[np.isfinite(part)]  # a group without weight (or without positives) is left out
        start += size
        if part.size < 2:
            return float("nan")
        high, low = float(np.max(part)), float(np.min(part))
        out.append(high - low if summary == "difference" else (low / high if high > 0 else float("nan")))
    return max(out) if summary == "difference" else min(out)


def _factor(naive: float, corrected: float, summary: str) -> float | None:
    """How much of the corrected gap the naive estimate shows: naive / corrected gap (log scale for ratios)."""
    if summary == "ratio":
        if not (naive > 0 and corrected > 0) or corrected == 1.0:
            return None
        naive, corrected = -np.log(naive), -np.log(corrected)
    if not np.isfinite(naive) or not np.isfinite(corrected) or corrected <= 0:
        return None
    return _number(naive / corrected)


def _number(value: Any) -> float | None:
    number = float(value)
    return number if np.isfinite(number) else None


def _rounded(array: np.ndarray) -> list[Any]:
    return np.round(np.asarray(array, dtype=float), 6).tolist()  # type: ignore[no-any-return]


# ------------------------------------------------------------------------------------- from the proxy stage
def proxy_attenuation(
    frame: pl.DataFrame, probabilities: np.ndarray, groups: Sequence[str], policy: Policy
) -> dict[str, Any]:
    """The ``attenuation`` block of the proxy summary, from the people before expansion (row i = person i).

    ``probabilities`` is (persons x groups) in the order of ``groups`` (the audit's labels). Membership
    weights follow ``policy.proxy.mode``: the posteriors (probabilistic), or the most-likely group when its
    probability reaches the cut (most_likely; people below it carry no weight). A weight column already in
    the data (survey weights) multiplies them. Outcomes that are missing or not binary leave the correction
    out with the reason (validation reports the data error itself).
    """
    config = policy.proxy
    assert config is not None
    probabilities = np.asarray(probabilities, dtype=float)
    outcomes = _favourable_outcomes(frame, policy)
    if isinstance(outcomes, str):
        return {"attenuated": True, "statement": STATEMENT, "groups": list(groups), "metrics": [], "reason": outcomes}
    y_pred, y_true = outcomes
    weights = probabilities
    if config.mode == "most_likely":
        best = probabilities.max(axis=1, keepdims=True)
        weights = ((probabilities == best) & (best >= config.confidence_cut - 1e-12)).astype(float)
        weights /= np.maximum(weights.sum(axis=1, keepdims=True), 1.0)  # ties: split, as one person
    column = policy.columns.weight
    if column is not None and column in frame.columns:
        weights = weights * frame[column].cast(pl.Float64).fill_null(0.0).to_numpy()[:, None]
    report = attenuation_report(
        probabilities,
        groups,
        y_pred=y_pred,
        y_true=y_true,
        metrics=[m.name for m in policy.metrics],
        weights=weights,
        confidence_level=policy.reporting.confidence_level,
        seed=policy.statistics.seed,
    )
    return report | {"mode": config.mode}


def _favourable_outcomes(frame: pl.DataFrame, policy: Policy) -> tuple[np.ndarray, np.ndarray | None] | str:
    """Favourable-outcome indicators (y_pred, y_true) per person, or why they cannot be read."""
    columns = policy.columns
    favourable = float(policy.favorable_label)
    if columns.y_pred in frame.columns:
        raw_pred = frame[columns.y_pred].cast(pl.Float64, strict=False)
    elif columns.score in frame.columns:
        score = frame[columns.score].cast(pl.Float64, strict=False)
        raw_pred = (score >= columns.decision_threshold).cast(pl.Float64)
    else:
        return f"no predictions ({columns.y_pred!r}) or scores ({columns.score!r}) to correct"
    raw_true = frame[columns.y_true].cast(pl.Float64, strict=False) if columns.y_true in frame.columns else None
    for name, series in (("predictions", raw_pred), ("labels", raw_true)):
        if series is not None and (series.null_count() or not series.is_in([0.0, 1.0]).all()):
            return f"{name} are missing or not 0/1, so the correction is left out"
    y_pred = (raw_pred.to_numpy() == favourable).astype(float)
    y_true = None if raw_true is None else (raw_true.to_numpy() == favourable).astype(float)
    return y_pred, y_true
