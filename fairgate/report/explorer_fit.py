"""The what-if explorer's fitted group thresholds: the mitigation's threshold programme on the page's own cells.

For a slicing whose judged groups are few enough (:data:`MAX_FITTED_GROUPS`), the post-processing linear
programme (:mod:`fairgate.mitigation.thresholds`, Hardt, Price & Srebro 2016) is solved on the page's counts
along the accuracy-fairness frontier (the sweep of :func:`fairgate.mitigation.frontier.frontier_of`, its Pareto
points), for the constraint of the policy's first metric that thresholds can bound (equal opportunity or
equalized odds). Each Pareto point
becomes one button: per group, the page threshold that gives the fitted rule's decisions on the page's score
cells. A fitted rule randomised between two thresholds (where a group's ROC hull needs it) cannot be one page
threshold: the page applies the threshold the rule uses more often, and the button names those groups.

Weighted pages are not fitted (the programme counts rows). The caveat on the page is the mitigation advice's own
text for group-specific thresholds (``fairgate/data/mitigation_advice.yaml``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from fairgate.mitigation.advice import advice_text
from fairgate.mitigation.frontier import FrontierPoint, pareto_front
from fairgate.mitigation.rates import Constraint, GroupPerformance, Performance
from fairgate.mitigation.rules import GroupRule
from fairgate.mitigation.thresholds import METRIC_CONSTRAINTS, ThresholdProblem
from fairgate.policy.core import Policy

MAX_FITTED_GROUPS = 50  # more judged groups: no buttons (the programme grows with groups x score cells)
FRONTIER_STEPS = 11


def fitted_thresholds(slicing: Mapping[str, Any], policy: Policy) -> dict[str, Any] | None:
    """The frontier's Pareto points with their page thresholds for one slicing of the page data, or None."""
    metric = next((m.name for m in policy.metrics if m.name in METRIC_CONSTRAINTS), None)
    groups = [
        g
        for g in slicing["groups"]
        if g["sufficient"] and "positive_sq" not in g and sum(g["positive"]) > 0 and sum(g["negative"]) > 0
    ]
    if metric is None or not 2 <= len(groups) <= MAX_FITTED_GROUPS or any("positive_sq" in g for g in groups):
        return None
    constraint = METRIC_CONSTRAINTS[metric]
    raw = np.asarray(slicing["scores"], dtype=float)
    favourable_one = policy.favorable_label == 1
    order = slice(None) if favourable_one else slice(None, None, -1)  # ascending favourable scores
    names = [g["name"] for g in groups]
    positives = np.array([g["positive"] for g in groups], dtype=float)
    negatives = np.array([g["negative"] for g in groups], dtype=float)
    favourable_scores = raw if favourable_one else 1.0 - raw
    problem = ThresholdProblem.from_counts(
        names, favourable_scores[order], positives[:, order], negatives[:, order], favorable_label=1
    )
    audited = _performance_at(raw, positives, negatives, names, policy, favourable_one)
    current = _point(min(audited.gap(constraint), 1.0), audited, constraint)
    # The frontier's sweep (fairgate.mitigation.frontier), keeping each solve's rules for its button.
    solved = {}
    for tolerance in np.linspace(0.0, current.tolerance, FRONTIER_STEPS):
        rules, performance = problem.solve(constraint, float(tolerance), "accuracy")
        solved[_point(float(tolerance), performance, constraint)] = rules
    points = []
    for point in pareto_front(list(solved)):
        rules = solved[point]
        thresholds = {name: page_threshold(raw, _likeliest(rule), favourable_one) for name, rule in rules.items()}
        randomised = [name for name, rule in rules.items() if rule.threshold is None]
        points.append(point.to_dict() | {"thresholds": thresholds, "randomised": randomised})
    return {
        "metric": metric,
        "constraint": constraint,
        "gap_label": _gap_label(constraint),
        "groups": names,
        "current": current.to_dict(),
        "points": points,
        "caveat": advice_text()["techniques"]["group_specific_thresholds"]["how"],
    }


def _point(tolerance: float, performance: Performance, constraint: Constraint) -> FrontierPoint:
    return FrontierPoint(tolerance, performance.gap(constraint), performance.accuracy, performance.accuracy)


def _gap_label(constraint: Constraint) -> str:
    return "TPR gap" if constraint == "equal_opportunity" else "larger of the TPR and FPR gaps"


def _likeliest(rule: GroupRule) -> float:
    """The rule's threshold, or the one a randomised rule uses more often."""
    return rule.thresholds[int(np.argmax(rule.probabilities))]


def page_threshold(raw: np.ndarray, threshold: float, favourable_one: bool) -> float:
    """The page threshold giving the favourable decision to the cells whose favourable score exceeds ``threshold``.

    ``raw``: the page's ascending score grid. With favourable label 1 the page decides favourably at ``score >= t``
    (the favourable cells are the highest), with 0 at ``score < t`` (the lowest).

    >>> grid = np.array([0.1, 0.2, 0.3])
    >>> page_threshold(grid, 0.15, True), page_threshold(grid, 0.75, False), page_threshold(grid, -math.inf, True)
    (0.2, 0.3, 0.1)
    """
    favourable = (raw if favourable_one else 1.0 - raw) > threshold
    count = int(favourable.sum())
    index = raw.size - count if favourable_one else count
    return float(raw[index]) if index < raw.size else math.nextafter(float(raw[-1]), math.inf)


def _performance_at(
    raw: np.ndarray,
    positives: np.ndarray,
    negatives: np.ndarray,
    names: list[str],
    policy: Policy,
    favourable_one: bool,
) -> Performance:
    """The groups' TPR and FPR at the audited threshold, on the page's cells."""
    t = policy.columns.decision_threshold
    chosen = raw >= t if favourable_one else raw < t
    groups = {}
    for name, pos, neg in zip(names, positives, negatives, strict=True):
        p, n = float(pos.sum()), float(neg.sum())
        groups[name] = GroupPerformance(int(p), int(n), float(pos[chosen].sum()) / p, float(neg[chosen].sum()) / n)
    return Performance(groups)
