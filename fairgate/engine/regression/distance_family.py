"""Judging a distance between prediction distributions: the histogram's bound plus the DKW band for sampling.

The cube's histograms give each group's Kolmogorov-Smirnov (KS) and Wasserstein-1 (W1) distance to the rest (or
to the reference) within a *deterministic* interval [low, high] (``distribution``). What the gate needs is the
distance between the populations the groups were drawn from, so sampling is added with the
Dvoretzky-Kiefer-Wolfowitz inequality in Massart's form: P(sup |F_n - F| > e) <= 2 exp(-2 n e^2), for any F and
any n, not only asymptotically. With probability 1 - alpha, each of the two samples' empirical CDFs lies within
e_i = sqrt(log(4 G / alpha) / (2 n_i)) of its population's for every one of G compared groups (alpha split over
the 2 G samples), so by the triangle inequality

- KS: |D_sample - D_population| <= e_a + e_b;
- W1: |W_sample - W_population| <= (e_a + e_b) * L, where L is the length of the range holding both
  populations' predictions: ``regression.histogram_range`` when the policy fixes it, otherwise the audited data's
  range of predictions (an assumption, stated in the document: fix the range when predictions are unbounded).

That is a finite-sample, distribution-free interval (conservative: DKW is tight only for one sample, and
Bonferroni over groups ignores their correlation), and the gate's one-sided test of "the largest distance exceeds
the threshold" inverts it: p = min(1, 4 G exp(-m^2)) with m = max_g (low_g - threshold) / s_g and
s_g = (1/sqrt(2 n_a) + 1/sqrt(2 n_b)) (* L). Identical groups therefore fail with probability at most alpha
whatever the threshold, the data or the group sizes (n are Kish effective sizes when weighted: approximate there).

``DistanceFamily`` offers this through the ``PairFamily`` interface ``fairgate.engine.adjudicate`` judges with.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from fairgate.engine.stats import PairFamily

METHOD = (
    "histogram bound (exact) widened by the Dvoretzky-Kiefer-Wolfowitz band of both samples, "
    "Bonferroni over the groups compared (finite-sample, distribution-free)"
)


@dataclass(frozen=True)
class DistanceFamily(PairFamily):
    """The distances of G groups, each known within ``[low, high]`` from the histograms, and their DKW scale.

    ``scale`` (G,) is (1/sqrt(2 n_a) + 1/sqrt(2 n_b)) times the range length for W1; ``cap`` the largest
    possible distance (1 for KS). ``gap``/``se`` (the ``PairFamily`` fields) hold the upper ends and scales.

    >>> family = DistanceFamily.of(np.array([0.30]), np.array([0.32]), np.array([500.0]), np.array([5000.0]))
    >>> round(family.critical(0.95), 3), [round(b, 3) for b in family.bounds(family.critical(0.95))]
    (2.093, [0.213, 0.407])
    >>> family.p_beyond(0.1) < 1e-3, family.p_beyond(0.3)
    (True, 1.0)
    """

    low: np.ndarray = field(default_factory=lambda: np.zeros(0))
    high: np.ndarray = field(default_factory=lambda: np.zeros(0))
    cap: float = math.inf

    @classmethod
    def of(
        cls, low: np.ndarray, high: np.ndarray, n: np.ndarray, n_other: np.ndarray, *, length: float = 1.0
    ) -> DistanceFamily:
        """The family of groups with histogram bounds ``low``/``high`` and effective sizes ``n`` vs ``n_other``."""
        scale = (1.0 / np.sqrt(2.0 * n) + 1.0 / np.sqrt(2.0 * n_other)) * length
        cap = 1.0 if length == 1.0 else math.inf
        return cls(high, scale, None, (max(2, low.size),), low=low, high=high, cap=cap)

    @property
    def groups(self) -> int:
        """How many groups the family compares (its Bonferroni factor)."""
        return int(self.low.size)

    def critical(self, level: float) -> float:
        """The DKW multiplier: sqrt(log(4 G / (1 - level)))."""
        return math.sqrt(math.log(4.0 * self.groups / (1.0 - level)))

    def bounds(self, critical: float) -> tuple[float, float]:
        """The interval of the largest distance: [max(0, max(low - c s)), min(cap, max(high + c s))]."""
        lower = max(0.0, float(np.max(self.low - critical * self.se)))
        return lower, min(self.cap, float(np.max(self.high + critical * self.se)))

    def p_beyond(self, threshold: float) -> float:
        """One-sided p-value of "some group's distance exceeds ``threshold``" (inverts ``bounds``)."""
        margin = float(np.max((self.low - threshold) / self.se))
        if margin <= 0:
            return 1.0
        return min(1.0, 4.0 * self.groups * math.exp(-(margin**2)))

    def beyond_bound(self, p: float) -> float:
        """The largest threshold whose :meth:`p_beyond` is at most ``p`` (the lower bound the test inverts)."""
        if not 0.0 < p < 1.0:
            return 0.0 if p <= 0.0 else float(np.max(self.low))
        margin = math.sqrt(max(0.0, math.log(4.0 * self.groups / p)))
        return max(0.0, float(np.max(self.low - margin * self.se)))

    def detectable(self, threshold: float, level: float, power: float = 0.8) -> float:
        """A distance the test finds with at least ``power``: threshold + the histogram's and both DKW margins."""
        miss = math.sqrt(math.log(4.0 / (1.0 - power)))
        return threshold + float(np.max((self.critical(level) + miss) * self.se + (self.high - self.low)))
