"""Group decision rules: per group, a threshold on the favourable score or a random choice between thresholds.

What a thresholds file holds and a deployment applies: :class:`ThresholdRules` (read back with
:meth:`ThresholdRules.from_dict`) gives each row its probability of the favourable decision and draws the
decisions. Fitted by :mod:`fairgate.mitigation.thresholds`.

>>> rules = ThresholdRules({"a": GroupRule((0.5,), (1.0,)), "b": GroupRule((0.3, 0.6), (0.25, 0.75))}, 1)
>>> rules.favourable_probability([0.55, 0.55, 0.7], ["a", "b", "b"]).tolist()
[1.0, 0.25, 1.0]
>>> rules.rules["b"].to_dict()
{'t_low': 0.3, 't_high': 0.6, 'p_high': 0.75}
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class GroupRule:
    """One group's decision rule: favourable when the favourable score exceeds a threshold drawn at random.

    ``thresholds[i]`` is used with probability ``probabilities[i]``; ``inf`` never and ``-inf`` always gives
    the favourable decision. One threshold is a deterministic rule; two are Hardt et al.'s randomisation.
    """

    thresholds: tuple[float, ...]
    probabilities: tuple[float, ...]

    @property
    def threshold(self) -> float | None:
        """The single threshold of a deterministic rule, else None."""
        return self.thresholds[0] if len(self.thresholds) == 1 else None

    @property
    def randomisation(self) -> tuple[float, float, float] | None:
        """``(t_low, t_high, p_high)`` for a rule randomised between two thresholds, else None."""
        if len(self.thresholds) != 2:
            return None
        (low, _), (high, p_high) = sorted(zip(self.thresholds, self.probabilities, strict=True))
        return low, high, p_high

    def to_dict(self) -> dict[str, Any]:
        """JSON form: ``threshold``, or ``t_low``/``t_high``/``p_high``, or a general ``mixture``."""
        if (single := self.threshold) is not None:
            return {"threshold": _json_float(single)}
        if (pair := self.randomisation) is not None:
            low, high, p_high = pair
            return {"t_low": _json_float(low), "t_high": _json_float(high), "p_high": p_high}
        return {
            "mixture": [
                {"threshold": _json_float(t), "probability": p}
                for t, p in zip(self.thresholds, self.probabilities, strict=True)
            ]
        }


def _json_float(value: float) -> float | str:
    """A threshold for the file: 12 significant digits (0.35, not 0.3499999999999999), infinities as strings."""
    return float(f"{value:.12g}") if np.isfinite(value) else ("inf" if value > 0 else "-inf")


def _read_threshold(value: Any, where: str) -> float:
    if value in ("inf", "-inf"):
        return float(value)
    if isinstance(value, bool) or not isinstance(value, int | float) or not np.isfinite(value):
        raise ValueError(f"{where}: a threshold must be a finite number, 'inf' or '-inf'; got {value!r}")
    return float(value)


def rule_from_dict(entry: dict[str, Any], where: str = "thresholds") -> GroupRule:
    """The rule written by :meth:`GroupRule.to_dict`; ``ValueError`` naming the entry when it is malformed."""
    if set(entry) == {"threshold"}:
        return GroupRule((_read_threshold(entry["threshold"], where),), (1.0,))
    if set(entry) == {"t_low", "t_high", "p_high"}:
        p_high = entry["p_high"]
        if isinstance(p_high, bool) or not isinstance(p_high, int | float) or not 0.0 <= p_high <= 1.0:
            raise ValueError(f"{where}: p_high must be a probability in [0, 1]; got {p_high!r}")
        low, high = _read_threshold(entry["t_low"], where), _read_threshold(entry["t_high"], where)
        return GroupRule((low, high), (1.0 - float(p_high), float(p_high)))
    if set(entry) == {"mixture"} and isinstance(entry["mixture"], list) and entry["mixture"]:
        parts = entry["mixture"]
        if not all(isinstance(p, dict) and set(p) == {"threshold", "probability"} for p in parts):
            raise ValueError(f"{where}: each mixture entry needs exactly 'threshold' and 'probability'")
        weights = [float(p["probability"]) for p in parts]
        if min(weights) < 0 or abs(sum(weights) - 1.0) > 1e-9:
            raise ValueError(f"{where}: mixture probabilities must be >= 0 and sum to 1; got {weights}")
        return GroupRule(tuple(_read_threshold(p["threshold"], where) for p in parts), tuple(weights))
    raise ValueError(
        f"{where}: expected {{threshold}}, {{t_low, t_high, p_high}} or {{mixture: [...]}}; got keys {sorted(entry)}"
    )


@dataclass(frozen=True)
class ThresholdRules:
    """The rules of every group and the favourable label: what a deployment needs to make the decisions."""

    rules: dict[str, GroupRule]
    favorable_label: int

    @classmethod
    def from_dict(cls, document: dict[str, Any]) -> ThresholdRules:
        """The rules of a thresholds file (``ThresholdFit.to_dict()``, read back from JSON)."""
        groups, label = document.get("groups"), document.get("favorable_label")
        if not isinstance(groups, dict) or not groups or label not in (0, 1):
            raise ValueError("a thresholds file needs 'groups' (group -> rule) and 'favorable_label' (0 or 1)")
        return cls({str(g): rule_from_dict(e, f"thresholds of group {g!r}") for g, e in groups.items()}, int(label))

    def favourable_probability(
        self, scores: Sequence[float] | np.ndarray, groups: Sequence[Any] | np.ndarray
    ) -> np.ndarray:
        """Each row's probability of the favourable decision: the weight of its group's thresholds below it."""
        values = np.asarray(groups).astype(str)
        favourable_score = favourable_scores(scores, self.favorable_label, values.size)
        names = sorted(self.rules)
        present, inverse = np.unique(values, return_inverse=True)
        unknown = [str(p) for p in present if p not in self.rules]
        if unknown:
            raise ValueError(f"groups {unknown} have no fitted threshold; fitted groups are {names}")
        codes = np.searchsorted(names, present)[inverse]
        width = max(len(rule.thresholds) for rule in self.rules.values())
        thresholds, weights = np.full((len(names), width), np.inf), np.zeros((len(names), width))
        for g, name in enumerate(names):
            rule = self.rules[name]
            thresholds[g, : len(rule.thresholds)] = rule.thresholds
            weights[g, : len(rule.probabilities)] = rule.probabilities
        above: np.ndarray = favourable_score[:, None] > thresholds[codes]
        probability: np.ndarray = (weights[codes] * above).sum(axis=1)
        return probability

    def apply(
        self,
        scores: Sequence[float] | np.ndarray,
        groups: Sequence[Any] | np.ndarray,
        rng: np.random.Generator,
    ) -> np.ndarray:
        """Mitigated 0/1 predictions (raw labels) for new rows; ``rng`` draws the randomised decisions.

        Drawing each row's decision with its :meth:`favourable_probability` is the same, row by row, as drawing
        its threshold from the group's randomisation.
        """
        favourable = rng.random(np.asarray(groups).size) < self.favourable_probability(scores, groups)
        label = self.favorable_label
        return np.where(favourable, label, 1 - label).astype(np.int8)


def favourable_scores(scores: Sequence[float] | np.ndarray, favorable_label: int, n: int) -> np.ndarray:
    """The score of the favourable outcome (``1 - score`` when 0 is favourable), checked finite, one per row."""
    values = np.asarray(scores, dtype=float)
    if values.shape != (n,):
        raise ValueError(f"scores must have one value per row ({n}); got shape {values.shape}")
    bad = ~np.isfinite(values)
    if bad.any():
        raise ValueError(f"scores must be finite; found {values[bad][0]!r} in {int(bad.sum())} row(s)")
    flipped: np.ndarray = 1.0 - values if favorable_label == 0 else values
    return flipped
