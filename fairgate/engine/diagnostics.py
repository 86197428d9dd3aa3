"""What a reviewer needs besides pass/fail: base rates and the impossibility theorem, worst-off subgroups,
Simpson's-paradox reversals, and the groups too small to judge."""

from __future__ import annotations

from typing import Any

import numpy as np

from fairgate.engine.metrics import GroupMetric
from fairgate.engine.slicing import SlicingResult
from fairgate.policy.core import Policy

# Criteria that cannot all hold when base rates differ and the classifier is imperfect.
_SEPARATION = {
    "equalized_odds_difference",
    "equalized_odds_ratio",
    "false_positive_rate_difference",
    "false_negative_rate_difference",
    "equal_opportunity_difference",
    "equal_opportunity_ratio",
}
_SUFFICIENCY = {
    "predictive_parity_difference",
    "calibration_difference",
    "positive_predictive_value_difference",
    "false_omission_rate_difference",
    "false_discovery_rate_difference",
}
_INDEPENDENCE = {
    "demographic_parity_difference",
    "demographic_parity_ratio",
    "disparate_impact_ratio",
    "selection_rate_difference",
    "selection_rate_ratio",
}


def base_rates(parts: list[SlicingResult], comparisons: list[dict[str, Any]], policy: Policy) -> list[dict[str, Any]]:
    """Base rates per group of each single attribute, whether they differ significantly, and what that rules out."""
    configured = {m.name for m in policy.metrics}
    out = []
    for part in parts:
        if len(part.slicing) != 1:
            continue
        rates = part.metrics["base_rate"]["value"]
        groups = [
            {"group": g, "base_rate": r, "n": n}
            for g, r, n, ok in zip(part.groups, rates, part.n, part.sufficient, strict=True)
            if ok
        ]
        significant = [
            c
            for c in comparisons
            if c["metric"] == "base_rate" and c["slicing"] == list(part.slicing) and c.get("significant")
        ]
        defined: list[float] = [r for r, ok in zip(rates, part.sufficient, strict=True) if ok and r is not None]
        differ = bool(significant)
        out.append(
            {
                "slicing": list(part.slicing),
                "groups": groups,
                "min": min(defined) if defined else None,
                "max": max(defined) if defined else None,
                "differ": differ,
                "impossibility": _impossibility_note(part.slicing[0], defined, differ, configured),
            }
        )
    return out


def _impossibility_note(attribute: str, rates: list[float], differ: bool, configured: set[str]) -> str:
    if not rates:
        return f"No group of {attribute!r} is large enough to compare base rates."
    span = f"from {min(rates):.1%} to {max(rates):.1%}"
    if not differ:
        return (
            f"Base rates of {attribute!r} range {span}, a difference that is not statistically significant; "
            "the fairness criteria can in principle hold together."
        )
    lines = [
        f"Base rates of {attribute!r} differ significantly ({span}). Unless the model is perfect, "
        "calibration / predictive parity and equal false positive and false negative rates cannot all hold "
        "(Chouldechova 2017; Kleinberg, Mullainathan and Raghavan 2016), and equal selection rates "
        "(demographic parity) cannot hold together with equalized odds or with calibration."
    ]
    chosen = [
        (name, family)
        for family, names in (
            ("separation", _SEPARATION),
            ("sufficiency", _SUFFICIENCY),
            ("independence", _INDEPENDENCE),
        )
        for name in sorted(configured & names)
    ]
    families = {family for _, family in chosen}
    if len(families) >= 2:
        listed = ", ".join(f"{name} ({family})" for name, family in chosen)
        lines.append(
            f"This policy asks for criteria from {len(families)} families at once: {listed}. On this data they "
            "trade off against each other: decide which one the use case must prioritise."
        )
    return " ".join(lines)


def worst_subgroups(parts: list[SlicingResult]) -> list[dict[str, Any]]:
    """Per metric with a direction, the worst-off sufficient intersectional subgroup and its value."""
    out = []
    for name, cls in GroupMetric.registry.items():
        if cls.higher_is_better is None:
            continue
        best: tuple[float, SlicingResult, int] | None = None
        for part in parts:
            if len(part.slicing) < 2 or name not in part.metrics:
                continue
            for i, value in enumerate(part.metrics[name]["value"]):
                if value is None or not part.sufficient[i]:
                    continue
                badness = -value if cls.higher_is_better else value
                if best is None or badness > best[0]:
                    best = (badness, part, i)
        if best is not None:
            _, part, i = best
            out.append(
                {
                    "metric": name,
                    "slicing": list(part.slicing),
                    "group": part.groups[i],
                    "value": part.metrics[name]["value"][i],
                    "n": part.n[i],
                    "direction": "higher_is_better" if cls.higher_is_better else "lower_is_better",
                }
            )
    return out


def simpson_reversals(
    parts: list[SlicingResult], metrics: tuple[str, ...] = ("selection_rate", "true_positive_rate")
) -> list[dict[str, Any]]:
    """Disparities on one attribute whose sign reverses inside every stratum of another attribute.

    For groups a and b of attribute A, the overall difference m(a) - m(b) is compared with m(a, s) - m(b, s)
    in each stratum s of attribute B where both cells are large enough; a flag needs two or more strata.
    """
    singles = {part.slicing[0]: part for part in parts if len(part.slicing) == 1}
    out = []
    for pair in (p for p in parts if len(p.slicing) == 2):
        for position in (0, 1):
            attribute, stratifier = pair.slicing[position], pair.slicing[1 - position]
            single = singles.get(attribute)
            if single is None:
                continue
            for metric in metrics:
                if metric not in single.metrics:
                    continue
                overall = _values_by_key(single, metric, attribute)
                cells = _values_by_key(pair, metric, attribute, stratifier)
                strata = sorted({s for (_, s) in cells})
                levels = sorted(overall)
                for i, a in enumerate(levels):
                    for b in levels[i + 1 :]:
                        total = overall[a] - overall[b]
                        inside = [cells[(a, s)] - cells[(b, s)] for s in strata if (a, s) in cells and (b, s) in cells]
                        if abs(total) < 1e-12 or len(inside) < 2:
                            continue
                        if all(np.sign(d) == -np.sign(total) and abs(d) > 1e-12 for d in inside):
                            out.append(
                                {
                                    "metric": metric,
                                    "attribute": attribute,
                                    "stratified_by": stratifier,
                                    "groups": [a, b],
                                    "overall_difference": total,
                                    "stratum_differences": inside,
                                    "note": (
                                        f"{metric} of {attribute}={a} minus {attribute}={b} is {total:+.3f} overall "
                                        f"but has the opposite sign in every stratum of {stratifier}: the overall "
                                        f"disparity is driven by how {stratifier} is distributed."
                                    ),
                                }
                            )
    return out


def _values_by_key(part: SlicingResult, metric: str, *attributes: str) -> dict[Any, float]:
    out: dict[Any, float] = {}
    for group, value, ok in zip(part.groups, part.metrics[metric]["value"], part.sufficient, strict=True):
        if value is None or not ok:
            continue
        key = tuple(group[a] for a in attributes)
        out[key[0] if len(key) == 1 else key] = value
    return out


def insufficient_groups(parts: list[SlicingResult], policy: Policy) -> list[dict[str, Any]]:
    minimum = policy.intersectional_analysis.min_group_size
    return [
        {"slicing": list(part.slicing), "group": group, "n": n, "min_group_size": minimum}
        for part in parts
        for group, n, ok in zip(part.groups, part.n, part.sufficient, strict=True)
        if not ok
    ]
