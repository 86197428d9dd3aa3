"""Simultaneous one-sided inference on the worst of several group levels, judged like a binary summary.

An individual-fairness check bounds a *level* in every group (each group's consistency at least ``t``; each group's
counterfactual flip rate at most ``t``), not a gap between groups. :class:`LevelFamily` gives the adjudicator the
interface of :class:`fairgate.engine.stats.PairFamily` on a "larger is worse" scale (a flip rate as it is; a
consistency negated), so these checks enter the audit's one Holm family like every other judged result:

* ``p_beyond(t)``: one-sided p-value of "some group lies beyond ``t``": Bonferroni over the groups,
  min(1, G x min_g p_g), valid however the groups' estimates depend on each other;
* ``bounds(critical(level))``: the interval of the worst group's level, simultaneous over the groups (each
  group's two-sided interval at level 1 - (1 - level) / G, the worst bounds taken);
* ``detectable(t, level)``: the level a group would need to show a violation with 80% power.

Per group, a consistency is a mean of per-person disagreements in [0, 1]: a normal (CLT) interval and z-test with
the sample standard deviation. A flip rate is a proportion: the Wilson interval, and the exact binomial test
(one-sided; the score test the Wilson interval inverts exceeds its level when flips are rare).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import stats as _scipy_stats

from fairgate.engine.stats import wilson_interval, z_value

Method = Literal["normal", "wilson"]


@dataclass(frozen=True)
class LevelFamily:
    """The levels of G groups on a larger-is-worse scale, with what their intervals need.

    ``value`` (G,) the levels; ``se`` (G,) their standard errors (``normal``); ``successes`` and ``n`` (G,) the
    counts of a proportion (``wilson``: ``value`` = successes / n).
    """

    value: np.ndarray
    se: np.ndarray
    n: np.ndarray
    method: Method
    successes: np.ndarray | None = None

    @property
    def sizes(self) -> tuple[int, ...]:
        """The number of groups (one component)."""
        return (int(self.value.size),)

    def critical(self, level: float) -> float:
        """The two-sided normal quantile at ``level`` Bonferroni-split over the groups.

        >>> round(LevelFamily(np.zeros(2), np.ones(2), np.ones(2), "normal").critical(0.95), 3)
        2.241
        """
        return z_value(1.0 - (1.0 - level) / max(self.value.size, 1))

    def bounds(self, critical: float) -> tuple[float, float]:
        """The worst group's interval: (largest lower bound, largest upper bound) at the critical value."""
        low, high = self.intervals(critical)
        return float(np.max(low)), float(np.max(high))

    def intervals(self, critical: float) -> tuple[np.ndarray, np.ndarray]:
        """Each group's two-sided interval at the critical value."""
        if self.method == "wilson":
            assert self.successes is not None
            return wilson_interval(self.successes, self.n, critical)
        return self.value - critical * self.se, self.value + critical * self.se

    def p_beyond(self, threshold: float) -> float:
        """One-sided p-value of "some group's level exceeds ``threshold``" (Bonferroni over the groups).

        >>> family = LevelFamily(np.array([0.10, 0.30]), np.array([0.05, 0.05]), np.array([100, 100]), "normal")
        >>> round(family.p_beyond(0.2), 4)  # 2 x P(Z > 2)
        0.0455
        """
        return float(min(1.0, self.value.size * float(np.min(self._p_each(threshold)))))

    def _p_each(self, threshold: float) -> np.ndarray:
        if self.method == "normal":
            with np.errstate(divide="ignore", invalid="ignore"):
                z = (self.value - threshold) / self.se
            # A group without spread (every person alike) is beyond exactly when its value is.
            z = np.where(self.se > 0, z, np.where(self.value > threshold, np.inf, -np.inf))
            return np.asarray(_scipy_stats.norm.sf(z), dtype=float)
        assert self.successes is not None
        if threshold <= 0.0:  # a true rate of 0 gives no flips: any flip is proof
            return np.where(self.successes > 0, 0.0, 1.0)
        if threshold >= 1.0:
            return np.ones(self.value.size)
        # The exact binomial tail P(X >= flips | rate = threshold): the score test that the Wilson interval
        # inverts exceeds its level for rare flips (skewed counts), which an audit-wide Holm family cannot carry.
        flips = np.rint(self.successes)
        return np.asarray(_scipy_stats.binom.sf(flips - 1, np.rint(self.n), threshold), dtype=float)

    def beyond_bound(self, p: float) -> float:
        """The largest threshold whose :meth:`p_beyond` is at most ``p``: the worst group's one-sided lower bound.

        Per group at p / G (Bonferroni): the normal bound, or for a proportion the exact (Clopper-Pearson) one
        that the binomial tail inverts.

        >>> family = LevelFamily(np.array([0.10, 0.30]), np.array([0.05, 0.05]), np.array([100, 100]), "normal")
        >>> round(family.beyond_bound(0.0455), 3)
        0.2
        """
        each = min(1.0, p / max(self.value.size, 1))
        if self.method == "normal":
            return float(np.max(self.value - float(_scipy_stats.norm.isf(each)) * self.se))
        assert self.successes is not None
        flips = np.rint(self.successes)
        bounds = np.where(
            flips > 0, _scipy_stats.beta.ppf(each, np.maximum(flips, 1), np.rint(self.n) - flips + 1), 0.0
        )
        return float(np.max(bounds))

    def detectable(self, threshold: float, level: float, power: float = 0.8) -> float:
        """The level the noisiest group would show with ``power`` at one-sided ``level``: t + (c + z_power) se."""
        if self.method == "normal":
            se = float(np.max(self.se))
        else:  # the proportion's standard error near the threshold, at least that of one person in n
            q = np.clip(np.maximum(threshold, self.value), 1.0 / self.n, 0.5)
            se = float(np.max(np.sqrt(q * (1.0 - q) / self.n)))
        return threshold + (self.critical(level) + float(_scipy_stats.norm.ppf(power))) * se
