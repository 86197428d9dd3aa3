"""Intervals for the change of a max - min gap (or a min / max ratio) between two models on the same people.

A gap is the largest of the pairwise differences between groups; its estimate is biased upward, most where the
groups are close. The percentile interval of the paired replicates' change (candidate gap - baseline gap)
inherits both biases and misses a real worsening from below. Instead, one simultaneous family holds, on the
paired replicates and with the audit's studentised max-t critical value (``fairgate.engine.stats.pair_family``):

* every pairwise difference of the baseline's group values,
* every pairwise difference of the candidate's,
* every pairwise difference of the per-group *changes* (candidate - baseline; narrow when the models agree).

When the family covers (probability at least its level), each model's gap lies in its folded interval
[L, U] (the audit's ``summary_bounds``) and the change of the gap is bounded by the largest change of a pair
(``|max|a + e| - max|a|| <= max|e|``), so the change lies in
``[max(L_c - U_b, -M), min(U_c - L_b, M)]`` with M the upper end of the largest pairwise change. For a ratio the
same holds on the log scale; the change of the ratio then lies within +-(1 - exp(-M)).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from fairgate.engine.metrics import GroupCounts, GroupMetric, Rate
from fairgate.engine.stats import Component, PairFamily, pair_family
from fairgate.engine.summaries import MetricValues, summary_bounds, summary_component

_ROLES = ("baseline", "candidate")
# Per-group change variance floor: a group where both models decide alike has an exactly known change (0).
_KNOWN = 1e-18


@dataclass(frozen=True)
class ChangeFamily:
    """The joint family of one summary metric's change; :meth:`interval` at any level."""

    family: PairFamily
    summary: str
    bases: tuple[str, ...]
    values: tuple[float, float]  # the baseline's and the candidate's summary
    n_components: int  # components per model (bases)
    # The largest pairwise change when no replicate moves it (the models decide alike in every judged group).
    exact_change: float | None = None

    def interval(self, level: float) -> tuple[float, float]:
        """The change's interval with joint coverage ``level`` (the family's critical value at that level)."""
        critical = self.family.critical(level)
        k = self.n_components
        (low_b, high_b), (low_c, high_c) = (
            summary_bounds(self.family, critical, self.summary, self.bases, value, members)
            for value, members in zip(self.values, (range(k), range(k, 2 * k)), strict=True)
        )
        _, largest = self.family.member_bounds(critical, range(2 * k, 3 * k))
        largest = largest if self.exact_change is None else self.exact_change
        cap = largest if self.summary == "difference" else 1.0 - float(np.exp(-largest))
        point = self.values[1] - self.values[0]
        low, high = max(low_c - high_b, -cap), min(high_c - low_b, cap)
        return min(low, point), max(high, point)


def change_family(
    by_model: Mapping[str, GroupCounts],
    bases: tuple[str, ...],
    summary: str,
    judged: np.ndarray,
    values: tuple[float, float],
) -> ChangeFamily | None:
    """The family of a summary metric's change over the judged groups; None when it cannot be built.

    ``by_model`` holds each model's group counts, the point estimate at index 0 of the leading axis and the
    paired replicates after it. Groups where either model's value is undefined take no part, as in the summary.
    None with fewer than two such groups, or a pair whose standard error is not positive.
    """
    if not all(np.isfinite(v) for v in values):
        return None
    per_model = {role: [_values(by_model[role], base) for base in bases] for role in _ROLES}
    # The groups the summary reads: judged, with a value for both models (as ``difference`` skips undefined ones).
    defined = np.logical_and.reduce([np.isfinite(v.value) for role in _ROLES for v in per_model[role]])
    index = np.flatnonzero(judged & defined)
    if index.size < 2:
        return None
    components = {role: [summary_component(v, index, summary) for v in per_model[role]] for role in _ROLES}
    if any(not np.isfinite(c.value).all() for role in _ROLES for c in components[role]):
        return None
    changes = [_change(b, c) for b, c in zip(components["baseline"], components["candidate"], strict=True)]
    family = pair_family([*components["baseline"], *components["candidate"], *changes])
    if family is None:
        return None
    still = all(np.array_equal(c.replicates, np.broadcast_to(c.value, c.replicates.shape)) for c in changes)
    exact = max(float(np.ptp(c.value)) for c in changes) if still else None
    return ChangeFamily(family, summary, bases, values, len(bases), exact)


def _values(counts: GroupCounts, base: str) -> MetricValues:
    """One model's group metric: the value (index 0) and replicates, with successes and trials for a rate."""
    metric = GroupMetric.registry[base]()
    computed = metric.compute(counts)
    nan = np.full(computed.shape[1], np.nan)
    if not isinstance(metric, Rate):
        return MetricValues(computed[0], nan, nan, computed[1:])
    successes, trials = metric.fraction(counts)
    return MetricValues(
        computed[0], nan, nan, computed[1:], trials[0], (successes[0], trials[0]), (successes[1:], trials[1:])
    )


def _change(baseline: Component, candidate: Component) -> Component:
    """The per-group change candidate - baseline as a component.

    Pairs of groups are disjoint people, so a pair's variance is the sum of its groups' bootstrap variances (of
    the paired change, small when the models agree).
    """
    replicates = candidate.replicates - baseline.replicates
    variance = np.maximum(_spread(replicates), _KNOWN)
    return Component(candidate.value - baseline.value, replicates, variance, None)


def _spread(replicates: np.ndarray) -> np.ndarray:
    defined = np.where(np.isfinite(replicates), replicates, np.nan)
    with np.errstate(invalid="ignore"):
        variance = np.nanvar(defined, axis=0, ddof=1) if defined.shape[0] > 1 else np.zeros(defined.shape[1])
    return np.nan_to_num(variance, nan=0.0)
