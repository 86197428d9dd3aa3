"""Label-free estimation: label-dependent fairness metrics estimated from the scores before the labels arrive.

Confidence-based performance estimation (CBPE) per group: under calibration, a person with favourable score s
has the favourable truth with probability s, so a group's expected confusion counts follow from its scores
(expected true positives = the sum of the selected people's scores, expected positives = the sum of all scores).
Calibration is not taken on trust: the last labelled audit of the model (the *reference*) keeps each group's
reliability bins (``curves.calibration``). There the group's calibration is tested (a Hosmer-Lemeshow
chi-square over the bins); a group that fails it gets no estimate (``insufficient_data`` with the reason). A group
that passes is recalibrated by the straight line its reference residuals (observed minus mean score per bin)
fit (calibration in the large and slope), and the line's uncertainty joins the interval:

* calibration: the covariance of the line's two coefficients, carried through each rate by the delta method;
* sampling: the labels still to come are Bernoulli draws around the estimated probabilities (binomial variance
  per cell, an upper bound of the exact sum of s(1 - s)), also by the delta method.

The estimand is the rate the labels will show for these very people. Groups are independent, so the group
estimates and their standard errors enter the same pairwise family (``stats.PairFamily``) as measured rates:
intervals and the gate's tests are the usual ones. Assumption: the score-to-outcome relation of each group is
the same as in the reference audit (no concept drift since).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from fairgate.engine.columns import BIN, PRED, SCORE_SUM, WEIGHT
from fairgate.engine.cube import Cube
from fairgate.engine.labels import group_key, reason_label, slicing_label
from fairgate.engine.metrics import SummaryOf, policy_metric
from fairgate.engine.slicing import slicing_groups
from fairgate.engine.stats import Component, pair_family
from fairgate.engine.summaries import as_number, summary_bounds
from fairgate.engine.text import fmt, fmt_count, p_is, policy_labels
from fairgate.policy.core import Policy
from fairgate.policy.labels import DEFAULT_LABEL_RULES

METHOD = "cbpe_recalibrated"
METHOD_TEXT = (
    "confidence-based performance estimation: expected confusion counts from the scores, recalibrated per group "
    "by the reference audit's reliability bins (calibration in the large and slope); intervals add the "
    "calibration's uncertainty to the sampling error of the labels to come"
)
#: The group rates estimated from scores, in the order of a group estimate's vector.
ESTIMATED_RATES = ("true_positive_rate", "false_positive_rate", "positive_predictive_value")
#: A bin enters the calibration test on its own when its expected events and non-events reach this many.
MIN_EXPECTED = 5.0


def estimable(metric: str) -> bool:
    """Whether a policy metric is a difference or ratio of rates that can be estimated from calibrated scores.

    >>> estimable("equal_opportunity_difference"), estimable("demographic_parity_difference")
    (True, False)
    """
    summary = policy_metric(metric)
    return isinstance(summary, SummaryOf) and set(summary.bases) <= set(ESTIMATED_RATES)


@dataclass(frozen=True)
class Recalibration:
    """One group's calibration in the reference audit: the residual line and the test, or why none.

    The probability of the favourable truth at mean score m is m + offset + slope * (m - centre); ``covariance``
    is that of (offset, slope). ``reason`` is set when the group's rates cannot be estimated.
    """

    offset: float = 0.0
    slope: float = 0.0
    centre: float = 0.0
    covariance: np.ndarray | None = None
    chi_square: float | None = None
    df: int | None = None
    p_value: float | None = None
    reason: str | None = None

    def probability(self, mean_score: np.ndarray) -> np.ndarray:
        """The recalibrated probability of the favourable truth at each mean score, within [0, 1]."""
        return np.asarray(np.clip(mean_score + self.offset + self.slope * (mean_score - self.centre), 0.0, 1.0))


def recalibration(bins: Sequence[Mapping[str, Any]], alpha: float, min_events: int, what: str) -> Recalibration:
    """Test one group's calibration on its reference reliability bins and fit its residual line.

    ``bins``: the reference audit's ``curves.calibration`` bins of the group (``n``, ``mean_score``,
    ``fraction_positive``); ``what`` names the group and the reference in reasons.
    """
    n = np.array([float(b.get("n") or 0.0) for b in bins])
    mean = np.array([np.nan if b.get("mean_score") is None else float(b["mean_score"]) for b in bins])
    rate = np.array([np.nan if b.get("fraction_positive") is None else float(b["fraction_positive"]) for b in bins])
    used = (n > 0) & np.isfinite(mean) & np.isfinite(rate)
    n, mean, rate = n[used], mean[used], rate[used]
    positives, expected = float((n * rate).sum()), float((n * mean).sum())
    if min(positives, n.sum() - positives) < min_events:
        return Recalibration(
            reason=f"{what} has {fmt_count(positives)} favourable and {fmt_count(n.sum() - positives)} unfavourable "
            f"truths (fewer than min_events={min_events}): its calibration cannot be checked"
        )
    chi_square, df = _hosmer_lemeshow(n, n * rate, n * mean)
    p_value = float(special.chdtrc(df, chi_square))  # chi2.sf, as scipy computes it
    if p_value < alpha:
        return Recalibration(
            chi_square=chi_square,
            df=df,
            p_value=p_value,
            reason=f"the scores of {what} are not calibrated (Hosmer-Lemeshow chi-square {fmt(chi_square, 1)} on "
            f"{df} bins, {p_is(p_value)} < {alpha:g}; observed {fmt_count(positives)} favourable truths, scores "
            f"expected {fmt_count(expected)}): its label-dependent rates cannot be estimated from the scores",
        )
    offset, slope, centre, covariance = _residual_line(n, rate, mean)
    return Recalibration(offset, slope, centre, covariance, chi_square, df, p_value)


def _bin_variance(n: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """The binomial variance of a bin's count of favourable truths under calibration (at least 1/4 of a person)."""
    return np.asarray(np.maximum(n * mean * (1.0 - mean), 0.25))


def _hosmer_lemeshow(n: np.ndarray, observed: np.ndarray, expected: np.ndarray) -> tuple[float, int]:
    """Sum over bins of (observed - expected)^2 / variance; bins with few expected events are pooled into one."""
    alone = (expected >= MIN_EXPECTED) & (n - expected >= MIN_EXPECTED)
    parts = [(n[alone], observed[alone], expected[alone])]
    if (~alone).any():
        pooled_n, pooled_e = n[~alone].sum(), expected[~alone].sum()
        parts.append((np.array([pooled_n]), np.array([observed[~alone].sum()]), np.array([pooled_e])))
    chi_square, df = 0.0, 0
    for size, obs, exp in parts:
        variance = _bin_variance(size, exp / np.where(size > 0, size, 1.0))
        chi_square += float(((obs - exp) ** 2 / variance).sum())
        df += int(size.size)
    return chi_square, max(df, 1)


def _residual_line(n: np.ndarray, rate: np.ndarray, mean: np.ndarray) -> tuple[float, float, float, np.ndarray]:
    """Weighted least squares of the bins' residual rate on their centred mean score, and its covariance."""
    weight = n**2 / _bin_variance(n, mean)  # 1 / variance of each bin's residual rate
    centre = float((n * mean).sum() / n.sum())
    design = np.column_stack([np.ones_like(mean), mean - centre])
    if n.size < 3 or float(np.ptp(mean)) < 1e-9:  # a line needs spread: calibration in the large only
        design = design[:, :1]
    information = design.T @ (weight[:, None] * design)
    covariance = np.linalg.inv(information)
    coefficients = covariance @ design.T @ (weight * (rate - mean))
    full = np.zeros((2, 2))
    full[: design.shape[1], : design.shape[1]] = covariance
    slope = float(coefficients[1]) if coefficients.size > 1 else 0.0
    return float(coefficients[0]), slope, centre, full


@dataclass(frozen=True)
class GroupEstimate:
    """One group's estimated rates (``ESTIMATED_RATES``), their covariance and the expected event counts."""

    value: np.ndarray  # (3,)
    covariance: np.ndarray  # (3, 3)
    events: np.ndarray  # (3,): expected positives, expected negatives, people selected


def estimate_group(weight: np.ndarray, score_sum: np.ndarray, calibration: Recalibration) -> GroupEstimate:
    """The group's TPR, FPR and PPV from its cells: ``weight`` and ``score_sum`` shaped (2, bins), row 1 selected."""
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(weight > 0, score_sum / np.where(weight > 0, weight, 1.0), 0.0)
    q = calibration.probability(mean)
    expected = weight * q
    grad = np.stack([weight, weight * (mean - calibration.centre)])  # d expected / d (offset, slope)
    noise = weight * q * (1.0 - q)  # the labels to come: binomial per cell
    # numpy scalars: a group with no one selected (or no expected event) gives nan, not ZeroDivisionError
    a, p = np.float64(expected[1].sum()), np.float64(expected.sum())
    selected, total = np.float64(weight[1].sum()), np.float64(weight.sum())
    g_a, g_p = grad[:, 1].sum(axis=1), grad.sum(axis=(1, 2))
    v_sel, v_unsel = float(noise[1].sum()), float(noise[0].sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        tpr, fpr, ppv = a / p, (selected - a) / (total - p), a / selected
        gradient = np.array([(g_a - tpr * g_p) / p, (fpr * g_p - g_a) / (total - p), g_a / selected])
        labels = np.array(
            [[(1 - tpr) / p, -tpr / p], [-(1 - fpr) / (total - p), fpr / (total - p)], [1 / selected, 0.0]]
        )
    covariance = calibration.covariance if calibration.covariance is not None else np.zeros((2, 2))
    with np.errstate(invalid="ignore"):  # an undefined rate's row stays nan (refused by _short_events)
        cov = gradient @ covariance @ gradient.T + labels @ np.diag([v_sel, v_unsel]) @ labels.T
    return GroupEstimate(np.array([tpr, fpr, ppv]), cov, np.array([p, total - p, selected]))


def target_cells(cube: Cube, slicing: Sequence[str], declared: list[str] | None = None) -> list[tuple[Any, ...]]:
    """Per group of the slicing (sorted): (group, weight (2, bins), score sums (2, bins)); labels are not read."""
    groups, index = slicing_groups(cube, tuple(slicing), declared)
    bins, cells = cube.calibration_bins, cube.cells
    flat = (index * 2 + cells[PRED].to_numpy()) * bins + cells[BIN].to_numpy()
    size = groups.height * 2 * bins
    weight = np.bincount(flat, weights=cells[WEIGHT].to_numpy(), minlength=size).reshape(-1, 2, bins)
    score = np.bincount(flat, weights=cells[SCORE_SUM].to_numpy(), minlength=size).reshape(-1, 2, bins)
    names = [{k: str(v) for k, v in row.items() if k in slicing} for row in groups.iter_rows(named=True)]
    return [(names[g], weight[g], score[g]) for g in range(groups.height)]


@dataclass(frozen=True)
class Reference:
    """The labelled audit the calibration is taken from: its run id and its reliability bins per group."""

    run_id: str
    curves: dict[tuple[str, str], Mapping[str, Any]]  # (slicing label, group key) -> calibration curve
    missing: str | None = None  # why there is no reference audit (every group is refused with it)

    @classmethod
    def of(cls, document: Mapping[str, Any]) -> Reference:
        """The reference from a labelled audit document (its ``curves.calibration``)."""
        curves = (document.get("curves") or {}).get("calibration") or []
        keyed = {(slicing_label(c["slicing"]), group_key(c["group"])): c for c in curves}
        return cls(str(document.get("run_id")), keyed)

    def calibration(self, slicing: Sequence[str], group: Mapping[str, str], policy: Policy) -> Recalibration:
        """The group's recalibration, or the reason there is none (no bins, suppressed bins, failed test)."""
        if self.missing:
            return Recalibration(reason=self.missing)
        what = f"{reason_label(group, policy_labels(policy))} in the reference audit {self.run_id}"
        curve = self.curves.get((slicing_label(slicing), group_key(group)))
        if curve is None:
            return Recalibration(reason=f"the reference audit {self.run_id} has no reliability bins for {what}")
        if curve.get("suppressed"):
            return Recalibration(reason=f"the reliability bins of {what} are suppressed (small cells)")
        alpha = (policy.labels or DEFAULT_LABEL_RULES).calibration_alpha
        return recalibration(curve["bins"], alpha, policy.statistics.min_events, what)


def estimated_entries(
    cube: Cube, reference: Reference | None, policy: Policy, missing: str = "there is no labelled reference audit"
) -> list[dict[str, Any]]:
    """The policy's estimable metrics on each one-attribute slicing, as result entries for ``judge_results``.

    Each entry is marked ``estimated`` with the method and the reference run; groups whose calibration was
    refused (or whose expected events fall short of ``min_events``) are listed in ``insufficient_groups`` with
    the reasons in ``estimate_reasons``. Without a ``reference``, every group is refused with ``missing``.
    """
    reference = reference or Reference("none", {}, missing)
    if not cube.has_scores:  # expected counts need each person's score, not only the decision
        reference = Reference(
            reference.run_id, {}, f"needs scores: the predictions have no {policy.columns.score!r} column"
        )
    entries = []
    for attribute in policy.sensitive_attributes:
        slicing = (attribute.name,)
        groups = []
        for group, weight, score in target_cells(cube, slicing, attribute.declared_values):
            calibration = reference.calibration(slicing, group, policy)
            estimate = None if calibration.reason else estimate_group(weight, score, calibration)
            groups.append((group, calibration, estimate))
        for rule in policy.metrics:
            if estimable(rule.name):
                entries.append(_entry(rule.name, slicing, groups, reference, policy))
    return entries


def _entry(
    metric_name: str,
    slicing: tuple[str, ...],
    groups: list[tuple[dict[str, str], Recalibration, GroupEstimate | None]],
    reference: Reference,
    policy: Policy,
) -> dict[str, Any]:
    """One estimated result: value, interval and family over the groups with estimates."""
    metric = policy_metric(metric_name)
    assert isinstance(metric, SummaryOf)
    rows = [ESTIMATED_RATES.index(b) for b in metric.bases]
    reasons = {}
    labels = policy_labels(policy)
    usable: list[tuple[dict[str, str], GroupEstimate]] = []
    for group, calibration, estimate in groups:
        short = _short_events(estimate, rows, policy.statistics.min_events)
        if calibration.reason or short or estimate is None:
            reasons[reason_label(group, labels)] = calibration.reason or short or "no estimate"
        else:
            usable.append((group, estimate))
    entry: dict[str, Any] = {
        "metric": metric_name,
        "slicing": list(slicing),
        "estimated": True,
        "estimate_method": METHOD,
        "reference_run_id": None if reference.missing else reference.run_id,
        "n_groups_judged": len(usable),
        "insufficient_groups": [g for g, c, e in groups if reason_label(g, labels) in reasons],
        "estimate_reasons": reasons,
        "value": None,
        "ci_low": None,
        "ci_high": None,
        "interval_method": "normal (delta method over calibration and sampling), studentized range critical value",
    }
    if len(usable) < 2:
        entry["reason"] = f"fewer than 2 groups can be estimated ({len(usable)}): " + "; ".join(reasons.values())
        return entry
    values = {b: np.array([e.value[r] for _, e in usable]) for b, r in zip(metric.bases, rows, strict=True)}
    variances = {b: np.array([e.covariance[r, r] for _, e in usable]) for b, r in zip(metric.bases, rows, strict=True)}
    entry["value"] = as_number(metric.evaluate(values))
    family = pair_family([_component(values[b], variances[b], metric.summary) for b in metric.bases])
    if family is None or entry["value"] is None:
        entry["reason"] = "the estimated rates are undefined or have no spread"
        return entry
    level = policy.reporting.confidence_level
    entry["ci_low"], entry["ci_high"] = summary_bounds(
        family, family.critical(level), metric.summary, metric.bases, entry["value"]
    )
    entry["_family"], entry["_summary"] = family, metric.summary
    base = values[metric.bases[0]]
    entry["max_group"] = usable[int(np.nanargmax(base))][0]
    entry["min_group"] = usable[int(np.nanargmin(base))][0]
    entry["standard_error"] = float(family.se.max())
    return entry


def _component(value: np.ndarray, variance: np.ndarray, summary: str) -> Component:
    """Estimated rates as a family component (log rates, by the delta method, for a ratio)."""
    empty = np.empty((0, value.size))
    if summary == "ratio":
        with np.errstate(divide="ignore", invalid="ignore"):
            return Component(np.log(value), empty, variance / value**2, log=True)
    return Component(value, empty, variance)


def _short_events(estimate: GroupEstimate | None, rows: list[int], min_events: int) -> str | None:
    """Why a group's estimate rests on too few expected people for the metric, if it does."""
    if estimate is None:
        return None
    names = ("expected favourable truths", "expected unfavourable truths", "people selected")
    for r in rows:
        if not (math.isfinite(float(estimate.value[r])) and estimate.events[r] >= min_events):
            return f"{fmt_count(estimate.events[r])} {names[r]} (fewer than min_events={min_events})"
    return None
