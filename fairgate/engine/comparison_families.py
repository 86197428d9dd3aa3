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
    families: dict[tuple[str, tuple[str, ...]], list[int]] = defaultdict(list)
    labels: dict[tuple[str, ...], str] = {}
    for i, c in enumerate(comparisons):
        metric, slicing = c["metric"], tuple(c["slicing"])
        label = labels.get(slicing)
        if label is None:
            label = labels[slicing] = slicing_label(slicing)
        c["p_value_family"] = f"{COMPLEMENT_OF.get(metric, metric)} within {label}"
        if metric in DESCRIPTIVE:
            c["p_value_family"] += " (descriptive: a property of the data, not a test of the model)"
        c["p_value_adjusted"], c["significant"], c["tested"] = None, False, False
        if metric not in COMPLEMENT_OF and c.get("sufficient", True) and c["p_value"] is not None:
            families[(metric, slicing)].append(i)
    keys: dict[int, tuple[tuple[str, str], ...]] = {}  # per group dict (shared by a slicing's comparisons)

    def group_key(group: dict[str, str]) -> tuple[tuple[str, str], ...]:
        key = keys.get(id(group))
        if key is None:
            key = keys[id(group)] = tuple(sorted(group.items()))
        return key

    adjusted_of: dict[tuple[str, tuple[str, ...], tuple[tuple[str, str], ...]], float] = {}
    for (metric, slicing), members in families.items():
        adjusted = benjamini_hochberg(np.array([comparisons[i]["p_value"] for i in members], dtype=float))
        for i, p in zip(members, adjusted.tolist(), strict=True):
            c = comparisons[i]
            c["p_value_adjusted"], c["significant"] = p, p < significance_level
            c["tested"] = metric not in DESCRIPTIVE
            c["p_value_family_size"] = len(members)
            adjusted_of[(metric, slicing, group_key(c["group"]))] = p
    for c in comparisons:
        partner = COMPLEMENT_OF.get(c["metric"])
        if partner is None:
            continue
        key = (partner, tuple(c["slicing"]), group_key(c["group"]))
        if key in adjusted_of:
            c["p_value_adjusted"] = adjusted_of[key]
            c["significant"] = adjusted_of[key] < significance_level
            c["p_value_family"] += f" (the same test as {partner}'s, counted once)"
