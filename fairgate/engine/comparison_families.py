"""Benjamini-Hochberg within each (metric, slicing) family of group-against-reference comparisons.

Every family lies within one slicing, so a slicing's comparisons are adjusted where it is computed
(``fairgate.engine.slicing.compute_slicing``, beside the other slicings) and adjudication adjusts only what was
not (other kinds, or another significance level).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from fairgate.engine.labels import slicing_label
from fairgate.engine.stats import benjamini_hochberg

#: A rate and its complement (FNR = 1 - TPR, ...) give the same test: only the first of each pair is counted.
COMPLEMENT_OF = {
    "false_negative_rate": "true_positive_rate",
    "true_negative_rate": "false_positive_rate",
    "false_discovery_rate": "positive_predictive_value",
    "false_omission_rate": "negative_predictive_value",
}
#: Properties of the data, not of the model: adjusted within their own family, never counted as model tests.
DESCRIPTIVE = frozenset({"base_rate"})


def adjust_comparisons(comparisons: list[dict[str, Any]], significance_level: float) -> None:
    """Benjamini-Hochberg within each (metric, slicing) family over the judged (sufficient) groups.

    A complement shares its rate's adjusted p-value (counted once); base rates form descriptive families.
    Each comparison records its family (``p_value_family``) and whether it was counted as a test (``tested``).
    """
    families: dict[tuple[str, tuple[str, ...]], list[dict[str, Any]]] = defaultdict(list)
    names: dict[tuple[str, tuple[str, ...]], str] = {}
    for c in comparisons:
        metric = c["metric"]
        family = (metric, tuple(c["slicing"]))
        name = names.get(family)
        if name is None:
            name = names[family] = _family_name(*family)
        c["p_value_family"] = name
        c["p_value_adjusted"], c["significant"], c["tested"] = None, False, False
        if metric not in COMPLEMENT_OF and c.get("sufficient", True) and c["p_value"] is not None:
            families[family].append(c)
    keys: dict[int, tuple[tuple[str, str], ...]] = {}  # per group dict (shared by a slicing's comparisons)

    def group_key(group: dict[str, str]) -> tuple[tuple[str, str], ...]:
        key = keys.get(id(group))
        if key is None:
            key = keys[id(group)] = tuple(sorted(group.items()))
        return key

    adjusted_of: dict[tuple[str, tuple[str, ...], tuple[tuple[str, str], ...]], float] = {}
    for (metric, slicing), members in families.items():
        adjusted = benjamini_hochberg(np.array([c["p_value"] for c in members], dtype=float)).tolist()
        tested, size = metric not in DESCRIPTIVE, len(members)
        for c, p in zip(members, adjusted, strict=True):
            c["p_value_adjusted"], c["significant"], c["tested"], c["p_value_family_size"] = (
                p,
                p < significance_level,
                tested,
                size,
            )
        if metric in _PARTNERS:  # a complement's comparisons read these
            adjusted_of |= {(metric, slicing, group_key(c["group"])): p for c, p in zip(members, adjusted, strict=True)}
    for c in comparisons:
        partner = COMPLEMENT_OF.get(c["metric"])
        if partner is None:
            continue
        key = (partner, tuple(c["slicing"]), group_key(c["group"]))
        if key in adjusted_of:
            c["p_value_adjusted"] = adjusted_of[key]
            c["significant"] = adjusted_of[key] < significance_level
            c["p_value_family"] += f" (the same test as {partner}'s, counted once)"


#: The rates whose complements share their adjusted p-values.
_PARTNERS = frozenset(COMPLEMENT_OF.values())


def _family_name(metric: str, slicing: tuple[str, ...]) -> str:
    """The family a comparison's p-value is adjusted in: its metric (a complement's rate) within its slicing."""
    name = f"{COMPLEMENT_OF.get(metric, metric)} within {slicing_label(slicing)}"
    if metric in DESCRIPTIVE:
        name += " (descriptive: a property of the data, not a test of the model)"
    return name
