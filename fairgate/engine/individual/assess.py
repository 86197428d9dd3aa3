"""Individual fairness of one audit: consistency and counterfactual flips, overall and per group, judged.

:func:`assess_individual` returns the document's additions to ``individual_fairness`` (``consistency``,
``counterfactual``) and the judged entries (``consistency``, ``counterfactual_flip_rate`` per slicing) that the
adjudicator puts into the audit's one Holm family with every other result (:mod:`.levels`). The slicings are the
population and each sensitive attribute; a group smaller than ``intersectional_analysis.min_group_size`` is
reported, not judged.

With ``individual_fairness.sample_people: N`` and more than N people, consistency is estimated from a seeded
simple random sample of N people (:func:`~fairgate.engine.individual.consistency.sample_rows`): every group's n,
value and interval are its sampled people's, and the block's ``sampled`` records the sample.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fairgate.engine.individual.consistency import GroupConsistency, disagreements, sample_rows
from fairgate.engine.individual.counterfactual import GroupFlips
from fairgate.engine.individual.levels import LevelFamily
from fairgate.engine.individual.neighbours import CHUNK_ROWS
from fairgate.engine.stats import z_value
from fairgate.policy.core import Policy
from fairgate.policy.individual import CONSISTENCY, FLIP_RATE, IndividualFairness

Slicing = tuple[str, ...]
Group = dict[str, str]

TIES_NOTE = (
    "Neighbours as AIF360 finds them: scikit-learn's ball tree (leaf size 30, Euclidean) over the people in id "
    "order, queried with the people themselves, so each person counts as one of their own k neighbours; among "
    "people at equal distance the tree keeps those it visits first (with more than k exact duplicates a person's "
    "neighbourhood is k of them, not necessarily including the person)."
)
CONSISTENCY_INTERVAL = "normal per group (people resampled, neighbourhoods fixed), Bonferroni over the groups"
CONSISTENCY_METHOD = "normal (people resampled, neighbourhoods fixed)"
SAMPLED_METHOD = (
    "normal over the sampled people (covers the sampling; people resampled, neighbourhoods over everyone fixed)"
)
FLIP_INTERVAL = "Wilson per group (score test), Bonferroni over the groups"


@dataclass(frozen=True)
class IndividualInputs:
    """The audited people in one order, with their features, decisions and attribute values.

    ``features`` (n x p), 0/1 ``decisions`` as given, sensitive ``attributes`` (text, None where missing) and,
    optionally, the ``counterfactual`` decisions with the sensitive attribute flipped.
    """

    features: np.ndarray
    feature_names: list[str]
    decisions: np.ndarray
    attributes: dict[str, np.ndarray]
    counterfactual: np.ndarray | None = None
    counterfactual_attribute: str | None = None


@dataclass(frozen=True)
class IndividualResult:
    """The document's additions to ``individual_fairness`` and the entries the gate judges."""

    block: dict[str, Any]
    entries: list[dict[str, Any]] = field(default_factory=list)


def assess_individual(inputs: IndividualInputs, policy: Policy, *, n_jobs: int | None = None) -> IndividualResult:
    """Consistency (always) and counterfactual flips (when given), per slicing, with the judged entries."""
    section = policy.individual_fairness
    if section is None:
        raise ValueError("the policy has no individual_fairness section")
    slicings: list[Slicing] = [(), *((name,) for name in inputs.attributes)]
    people = inputs.decisions.size
    sampled = sample_rows(people, section.sample_people, section.seed)
    # Sampled people's terms are exact (neighbours among everyone) and the sample is simple random, so a group's
    # sampled mean term is unbiased for its full mean, with variance sd^2 / m (at most: the finite-population
    # factor 1 - m / n is left out, erring wide). That is the variance GroupConsistency's interval already uses
    # with n = m, the sampled count: the same interval covers the sampling error as well as the people's.
    terms = disagreements(
        inputs.features,
        inputs.decisions,
        k=section.k,
        scaling=section.scaling,
        n_jobs=n_jobs,
        chunk=CHUNK_ROWS,
        rows=sampled,
    )
    block: dict[str, Any] = {"consistency": None, "counterfactual": None}
    entries: list[dict[str, Any]] = []
    consistency_groups, flip_groups = [], []
    judged = policy.individual_rules()
    for slicing in slicings:
        groups, codes = _groups(slicing, inputs.attributes, policy)
        term_codes = codes if sampled is None else codes[sampled]
        measured = GroupConsistency.of(terms, term_codes, len(groups), section.k)
        consistency_groups += _consistency_rows(slicing, groups, measured, policy)
        if CONSISTENCY in judged:
            entries.append(_consistency_entry(slicing, groups, measured, policy))
        if inputs.counterfactual is not None:
            flips = GroupFlips.of(
                inputs.decisions, inputs.counterfactual, codes, len(groups), _favorable_decision(policy)
            )
            flip_groups += _flip_rows(slicing, groups, flips, policy)
            if FLIP_RATE in judged:
                entries.append(_flip_entry(slicing, groups, flips, policy))
    block["consistency"] = _consistency_block(consistency_groups, inputs, section, sampled, people)
    if inputs.counterfactual is not None:
        whole = flip_groups[0]
        block["counterfactual"] = {
            **{key: value for key, value in whole.items() if key not in ("slicing", "group", "sufficient")},
            "attribute": inputs.counterfactual_attribute,
            "interval_method": "Wilson",
            "groups": flip_groups[1:],
        }
    return IndividualResult(block, entries)


def _favorable_decision(policy: Policy) -> int:
    return int(policy.favorable_label)


# ----------------------------------------------------------------------------------------------- groups
def _consistency_block(
    groups: list[dict[str, Any]],
    inputs: IndividualInputs,
    section: IndividualFairness,
    sampled: np.ndarray | None,
    people: int,
) -> dict[str, Any]:
    """The document's consistency block: everyone's value first, then each group's (``groups`` in that order)."""
    overall = groups[0]
    block = {
        **{key: overall[key] for key in ("value", "ci_low", "ci_high", "n")},
        "k": section.k,
        "scaling": section.scaling,
        "features": list(inputs.feature_names),
        "neighbours": TIES_NOTE,
        "interval_method": CONSISTENCY_METHOD if sampled is None else SAMPLED_METHOD,
        "groups": groups[1:],
    }
    if sampled is not None:  # absent for everyone: the document is then exactly the unsampled one
        block["sampled"] = {"people_sampled": int(sampled.size), "people": people, "seed": section.seed}
    return block


def _groups(slicing: Slicing, attributes: dict[str, np.ndarray], policy: Policy) -> tuple[list[Group], np.ndarray]:
    """The slicing's groups (declared values first, then the others sorted) and each person's group code."""
    n = len(next(iter(attributes.values()))) if attributes else 0
    if not slicing:
        return [{}], np.zeros(n, dtype=np.int64)
    (name,) = slicing
    values = attributes[name]
    present = {str(v) for v in values if v is not None}
    declared = policy.attribute(name).declared_values or []
    order = [v for v in declared if v in present] + sorted(present - set(declared))
    lookup = {value: i for i, value in enumerate(order)}
    codes = np.fromiter((-1 if v is None else lookup[str(v)] for v in values), dtype=np.int64, count=len(values))
    return [{name: value} for value in order], codes


def _sufficient(n: np.ndarray, policy: Policy) -> np.ndarray:
    return np.asarray(n >= policy.intersectional_analysis.min_group_size)


# ----------------------------------------------------------------------------------------------- consistency
def _consistency_rows(
    slicing: Slicing, groups: list[Group], measured: GroupConsistency, policy: Policy
) -> list[dict[str, Any]]:
    low, high = measured.interval(z_value(policy.reporting.confidence_level))
    sufficient = _sufficient(measured.n, policy)
    return [
        {
            "slicing": list(slicing),
            "group": group,
            "n": int(measured.n[i]),
            "value": _num(measured.value[i]),
            "ci_low": _num(low[i]),
            "ci_high": _num(high[i]),
            "sufficient": bool(sufficient[i]),
        }
        for i, group in enumerate(groups)
    ]


def _consistency_entry(
    slicing: Slicing, groups: list[Group], measured: GroupConsistency, policy: Policy
) -> dict[str, Any]:
    use = _judged(CONSISTENCY, slicing, groups, _sufficient(measured.n, policy) & (measured.n > 1), policy)
    entry = _entry(CONSISTENCY, slicing, groups, use, policy)
    if not use.any():
        return entry | _no_group(policy)
    value = measured.value[use]
    # Judged on the negated scale (larger is worse), as the adjudicator's "minimum" summary reads it.
    family = LevelFamily(-value, measured.se[use], measured.n[use], "normal")
    low, high = family.bounds(family.critical(policy.reporting.confidence_level))
    kept = [g for g, u in zip(groups, use, strict=True) if u]
    return entry | {
        "value": float(value.min()),
        "ci_low": max(0.0, -high),
        "ci_high": min(1.0, -low),
        "worst_group": kept[int(np.argmin(value))] if slicing else None,
        "best_group": kept[int(np.argmax(value))] if slicing else None,
        "interval_method": CONSISTENCY_INTERVAL,
        "_family": family,
        "_summary": "minimum",
    }


# ----------------------------------------------------------------------------------------------- flips
def _flip_rows(slicing: Slicing, groups: list[Group], flips: GroupFlips, policy: Policy) -> list[dict[str, Any]]:
    z = z_value(policy.reporting.confidence_level)
    low, high = flips.interval(flips.flips, z)
    sufficient = _sufficient(flips.n, policy)
    rows = []
    for i, group in enumerate(groups):
        row: dict[str, Any] = {
            "slicing": list(slicing),
            "group": group,
            "n": int(flips.n[i]),
            "flips": int(flips.flips[i]),
            "flip_rate": _num(flips.rate[i]),
            "ci_low": _num(low[i]),
            "ci_high": _num(high[i]),
            "sufficient": bool(sufficient[i]),
        }
        for direction, count in (("to_favorable", flips.to_favorable), ("to_unfavorable", flips.to_unfavorable)):
            d_low, d_high = flips.interval(count, z)
            with np.errstate(divide="ignore", invalid="ignore"):
                share = count[i] / flips.n[i]
            row[direction] = {
                "n": int(count[i]),
                "rate": _num(share),
                "ci_low": _num(d_low[i]),
                "ci_high": _num(d_high[i]),
            }
        rows.append(row)
    return rows


def _flip_entry(slicing: Slicing, groups: list[Group], flips: GroupFlips, policy: Policy) -> dict[str, Any]:
    use = _judged(FLIP_RATE, slicing, groups, _sufficient(flips.n, policy) & (flips.n > 0), policy)
    entry = _entry(FLIP_RATE, slicing, groups, use, policy)
    if not use.any():
        return entry | _no_group(policy)
    rate = flips.rate[use]
    family = LevelFamily(
        rate, np.zeros(rate.size), flips.n[use].astype(float), "wilson", flips.flips[use].astype(float)
    )
    low, high = family.bounds(family.critical(policy.reporting.confidence_level))
    kept = [g for g, u in zip(groups, use, strict=True) if u]
    return entry | {
        "value": float(rate.max()),
        "ci_low": low,
        "ci_high": high,
        "worst_group": kept[int(np.argmax(rate))] if slicing else None,
        "best_group": kept[int(np.argmin(rate))] if slicing else None,
        "interval_method": FLIP_INTERVAL,
        "_family": family,
        "_summary": "maximum",
    }


# ----------------------------------------------------------------------------------------------- entries
def _judged(metric: str, slicing: Slicing, groups: list[Group], eligible: np.ndarray, policy: Policy) -> np.ndarray:
    """The eligible groups that no override excludes from this check's judgement."""
    excluded = policy.rule_for(metric, slicing).excluded_groups
    kept: np.ndarray = eligible & np.array([not _matches_any(g, excluded) for g in groups], dtype=bool)
    return kept


def _entry(metric: str, slicing: Slicing, groups: list[Group], use: np.ndarray, policy: Policy) -> dict[str, Any]:
    rule = policy.rule_for(metric, slicing)
    excluded = [g for g in groups if _matches_any(g, rule.excluded_groups)]
    return {
        "metric": metric,
        "slicing": list(slicing),
        "value": None,
        "ci_low": None,
        "ci_high": None,
        "n_groups_judged": int(use.sum()),
        "insufficient_groups": [g for g, u in zip(groups, use, strict=True) if not u and g not in excluded],
        "excluded_groups": excluded,
        "override_reasons": rule.override_reasons,
    }


def _no_group(policy: Policy) -> dict[str, Any]:
    size = policy.intersectional_analysis.min_group_size
    return {"reason": f"no group has min_group_size={size} people", "_family": None}


def _matches_any(group: Group, patterns: Sequence[Group]) -> bool:
    return any(all(group.get(k) == v for k, v in pattern.items()) for pattern in patterns)


def _num(value: Any) -> float | None:
    number = float(value)
    return number if np.isfinite(number) else None
