"""Counterfactual consistency: does the decision change when only the sensitive attribute does.

The user supplies, for the same people, the model's decisions with the sensitive attribute flipped (the model
re-run on counterfactual inputs). Per group: the share of people whose decision changed (the flip rate), split by
direction (to the favourable decision, to the unfavourable one), each with a Wilson interval.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fairgate.engine.stats import wilson_interval


@dataclass(frozen=True)
class GroupFlips:
    """Per group: people, changed decisions, and how many changed to the favourable decision."""

    n: np.ndarray
    flips: np.ndarray
    to_favorable: np.ndarray

    @classmethod
    def of(
        cls, decisions: np.ndarray, counterfactual: np.ndarray, codes: np.ndarray, n_groups: int, favorable: int
    ) -> GroupFlips:
        """Count per group (``codes``: each person's group 0..G-1, or -1 for none).

        >>> g = GroupFlips.of(np.array([1, 0, 0, 1]), np.array([0, 1, 0, 1]), np.array([0, 0, 1, 1]), 2, 1)
        >>> g.n.tolist(), g.flips.tolist(), g.to_favorable.tolist(), g.to_unfavorable.tolist()
        ([2, 2], [2, 0], [1, 0], [1, 0])
        """
        if decisions.shape != counterfactual.shape:
            raise ValueError("the counterfactual decisions must be one per person, in the same order")
        inside = codes >= 0
        changed = (decisions != counterfactual) & inside
        gained = changed & (counterfactual == favorable)

        def per_group(mask: np.ndarray) -> np.ndarray:
            counts: np.ndarray = np.bincount(codes[mask], minlength=n_groups).astype(np.int64)
            return counts

        return cls(per_group(inside), per_group(changed), per_group(gained))

    @property
    def to_unfavorable(self) -> np.ndarray:
        """Changed decisions that went to the unfavourable one."""
        return np.asarray(self.flips - self.to_favorable)

    @property
    def rate(self) -> np.ndarray:
        """Each group's flip rate (NaN for an empty group)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(self.flips / self.n)

    def interval(self, successes: np.ndarray, z: float) -> tuple[np.ndarray, np.ndarray]:
        """Wilson intervals of successes / n per group."""
        return wilson_interval(successes.astype(float), self.n.astype(float), z)
