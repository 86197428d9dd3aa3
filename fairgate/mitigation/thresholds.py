"""Post-processing thresholds (Hardt, Price & Srebro 2016): per-group, possibly randomised, decision thresholds.

From the scores already audited, the labels and one group per row, :func:`fit_thresholds` finds per group a rule
"favourable decision when the favourable score is above t" - or a random choice between two (rarely three)
thresholds where the group's ROC hull requires it - that maximises the objective (accuracy, balanced accuracy or
a :class:`CostMatrix`) subject to

- ``equal_opportunity``: the true positive rates of all groups within ``tolerance`` of each other;
- ``equalized_odds``: the true positive rates and the false positive rates each within ``tolerance``.

How: each group's achievable (FPR, TPR) points are the convex hull of its ROC points (randomising between two
thresholds reaches any point of a chord). The objective and the constraints are linear in those points, so one
small linear programme (HiGHS, via SciPy) over the hull vertices of all groups gives the exact optimum. The ROC
points come from one sort of the rows by (group, score): 1M rows take well under a second.

Conventions, as in the engine: "positive" is the favourable label; scores are P(y = 1) and are read as the
favourable score ``1 - score`` when the favourable label is 0 (COMPAS). Thresholds are on the favourable-score
scale, and :meth:`ThresholdFit.apply` returns raw 0/1 labels (``favorable_label`` where the decision is
favourable), ready to be re-audited in place of ``y_pred``.

Public API (used by ``tasks/mitigation/thresholds.py``; a mitigation flow calls that task):
``fit_thresholds(scores, y_true, groups, *, y_pred, constraint, tolerance, objective, favorable_label)``
-> :class:`ThresholdFit` (``rules``, ``before``, ``after``, ``achieved_gap``, ``accuracy_cost``, ``apply``,
``favourable_probability``, ``to_dict`` = the thresholds file, ``decision`` = the
:class:`~fairgate.mitigation.rules.ThresholdRules` a deployment applies, also read back from the file with
``ThresholdRules.from_dict``); :class:`ThresholdProblem` prepares the ROC hulls once for repeated solves
(``fit_prepared``, the frontier in :mod:`fairgate.mitigation.frontier`); ``constraint_for_metric`` maps a
policy metric to its constraint.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> groups = rng.choice(["a", "b"], size=4000)
>>> y = rng.random(4000) < np.where(groups == "a", 0.6, 0.3)
>>> scores = np.clip(0.4 * y + rng.normal(0.3, 0.2, 4000) - 0.15 * (groups == "b"), 0, 1)
>>> fit = fit_thresholds(scores, y, groups, y_pred=scores > 0.5, tolerance=0.01)
>>> round(fit.before.tpr_gap, 3), round(fit.achieved_gap, 3), round(fit.accuracy_cost["overall"], 4)
(0.246, 0.01, 0.0018)
>>> fit.rules["a"].threshold is not None, fit.rules["b"].randomisation is not None
(True, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse

from fairgate.mitigation.rates import (
    CONSTRAINTS,
    Constraint,
    CostMatrix,
    GroupPerformance,
    Objective,
    Performance,
    favourable_truth,
    group_codes,
    performance_of,
)
from fairgate.mitigation.rules import GroupRule, ThresholdRules, favourable_scores

# LP weights below this are solver noise, not a randomisation anyone should apply.
_WEIGHT_FLOOR = 1e-9

#: Policy metrics (engine names) that group thresholds can bring within a tolerance, and the constraint each is.
METRIC_CONSTRAINTS: dict[str, Constraint] = {
    "equal_opportunity_difference": "equal_opportunity",
    "true_positive_rate_difference": "equal_opportunity",
    "equalized_odds_difference": "equalized_odds",
}


def constraint_for_metric(metric: str) -> Constraint:
    """The threshold constraint that bounds a policy metric; ``ValueError`` naming the supported ones otherwise.

    >>> constraint_for_metric("equalized_odds_difference")
    'equalized_odds'
    """
    if metric not in METRIC_CONSTRAINTS:
        raise ValueError(
            f"group thresholds bound {sorted(METRIC_CONSTRAINTS)}; {metric!r} is not one of them "
            "(for selection-rate metrics use reweighing or constrained retraining)"
        )
    return METRIC_CONSTRAINTS[metric]


@dataclass(frozen=True)
class GroupHull:
    """A group's class counts and the vertices of the convex hull of its ROC points (with their thresholds)."""

    positives: int
    negatives: int
    fpr: np.ndarray
    tpr: np.ndarray
    thresholds: np.ndarray

    def upper_chain(self) -> np.ndarray:
        """Indices of the vertices on the upper (concave) hull, by increasing FPR."""
        order = np.lexsort((-self.tpr, self.fpr))
        chain: list[int] = []
        for i in order:
            while len(chain) >= 2:
                a, b = chain[-2], chain[-1]
                cross = (self.fpr[b] - self.fpr[a]) * (self.tpr[i] - self.tpr[a]) - (self.tpr[b] - self.tpr[a]) * (
                    self.fpr[i] - self.fpr[a]
                )
                if cross < 0:
                    break
                chain.pop()
            if chain and self.fpr[chain[-1]] == self.fpr[i]:
                continue  # same FPR, lower TPR: not on the upper hull
            chain.append(int(i))
        return np.array(chain)


def _hull_of(
    scores: np.ndarray, positive_counts: np.ndarray, negative_counts: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ROC hull vertices (FPR, TPR, threshold) of one group from its ascending unique scores and class counts."""
    pos, neg = positive_counts[::-1].cumsum(), negative_counts[::-1].cumsum()  # from the highest score down
    tpr = np.concatenate([[0.0], pos / pos[-1]])
    fpr = np.concatenate([[0.0], neg / neg[-1]])
    descending = scores[::-1]
    # Midpoints between adjacent scores: a held-out score between two fitted ones is decided as its neighbours.
    thresholds = np.concatenate([[np.inf], (descending[:-1] + descending[1:]) / 2, [-np.inf]])
    points = np.column_stack([fpr, tpr])
    from scipy.spatial import ConvexHull, QhullError  # when fitting only: an audit imports this module

    try:
        vertices = ConvexHull(points).vertices
    except QhullError:  # collinear: every point on the diagonal, the hull is its two ends
        vertices = np.array([0, len(points) - 1])
    return fpr[vertices], tpr[vertices], thresholds[vertices]


@dataclass(frozen=True)
class ThresholdProblem:
    """The data of a threshold fit prepared once: groups, their ROC hulls, the favourable label."""

    names: list[str]
    hulls: list[GroupHull]
    favorable_label: int

    @classmethod
    def prepare(
        cls,
        scores: Sequence[float] | np.ndarray,
        y_true: Sequence[Any] | np.ndarray,
        groups: Sequence[Any] | np.ndarray,
        *,
        favorable_label: int = 1,
    ) -> ThresholdProblem:
        """Sort the rows by (group, score) once and build each group's ROC hull.

        Raises ``ValueError`` for non-finite scores, non-binary labels, fewer than two groups, or a group
        without both outcomes (its rates, and so the constraint, would be undefined).
        """
        truth = favourable_truth(y_true, favorable_label)
        favourable_score = favourable_scores(scores, favorable_label, truth.size)
        names, codes = group_codes(groups, truth.size)
        if len(names) < 2:
            raise ValueError(f"thresholds need at least two groups to equalise; found {names}")
        unique_scores, score_codes = np.unique(favourable_score, return_inverse=True)
        cells, cell_of_row = np.unique(codes * unique_scores.size + score_codes, return_inverse=True)
        positives = np.bincount(cell_of_row, weights=truth, minlength=cells.size)
        totals = np.bincount(cell_of_row, minlength=cells.size)
        cell_group, cell_score = np.divmod(cells, unique_scores.size)
        bounds = np.searchsorted(cell_group, np.arange(len(names) + 1))
        hulls = []
        for g, name in enumerate(names):
            part = slice(bounds[g], bounds[g + 1])
            pos, neg = positives[part], totals[part] - positives[part]
            if pos.sum() == 0 or neg.sum() == 0:
                missing = "favourable" if pos.sum() == 0 else "unfavourable"
                raise ValueError(
                    f"group {name!r} has no rows with the {missing} truth; its error rates are undefined. "
                    "Merge it with another group or leave it out of the mitigation"
                )
            fpr, tpr, thresholds = _hull_of(unique_scores[cell_score[part]], pos, neg)
            hulls.append(GroupHull(int(pos.sum()), int(neg.sum()), fpr, tpr, thresholds))
        return cls(names, hulls, favorable_label)

    @classmethod
    def from_counts(
        cls,
        names: Sequence[str],
        scores: np.ndarray,
        positives: np.ndarray,
        negatives: np.ndarray,
        *,
        favorable_label: int = 1,
    ) -> ThresholdProblem:
        """Prepared from counts instead of rows (the what-if explorer's cells).

        ``scores``: the ascending favourable scores shared by the groups; ``positives``/``negatives``: one row of
        counts per group (favourable and unfavourable truth at each score). Every group needs both outcomes.
        """
        hulls = []
        for name, pos, neg in zip(names, positives, negatives, strict=True):
            kept = (pos + neg) > 0
            if pos.sum() == 0 or neg.sum() == 0:
                raise ValueError(f"group {name!r} lacks one of the outcomes; its error rates are undefined")
            fpr, tpr, thresholds = _hull_of(scores[kept], pos[kept], neg[kept])
            hulls.append(GroupHull(int(pos.sum()), int(neg.sum()), fpr, tpr, thresholds))
        return cls(list(names), hulls, favorable_label)

    def solve(
        self, constraint: Constraint = "equal_opportunity", tolerance: float = 0.0, objective: Objective = "accuracy"
    ) -> tuple[dict[str, GroupRule], Performance]:
        """The optimal rules and their expected performance on the prepared data (one linear programme)."""
        _check_options(constraint, tolerance, objective)
        sizes = [h.fpr.size for h in self.hulls]
        offsets = np.concatenate([[0], np.cumsum(sizes)])
        n_lambda, n_floors = int(offsets[-1]), 1 if constraint == "equal_opportunity" else 2
        utility = self._vertex_utility(objective)
        cost = np.concatenate([-utility, np.zeros(n_floors)])  # linprog minimises
        # Sparse constraint rows (hulls can have thousands of vertices, intersections dozens of groups).
        eq_rows: list[np.ndarray] = []
        eq_cols: list[np.ndarray] = []
        ub_rows: list[np.ndarray] = []
        ub_cols: list[np.ndarray] = []
        ub_values: list[np.ndarray] = []
        bounds_ub: list[float] = []
        for g, hull in enumerate(self.hulls):
            columns = np.arange(offsets[g], offsets[g + 1])
            eq_rows.append(np.full(columns.size, g))
            eq_cols.append(columns)
            rates = [hull.tpr] if n_floors == 1 else [hull.tpr, hull.fpr]
            for k, rate in enumerate(rates):
                # floor_k <= rate_g <= floor_k + tolerance, as two "<=" rows: floor - rate <= 0, rate - floor <= tol.
                for sign, bound in ((-1.0, 0.0), (1.0, tolerance)):
                    row = len(bounds_ub)
                    ub_rows += [np.full(columns.size + 1, row)]
                    ub_cols += [np.append(columns, n_lambda + k)]
                    ub_values += [np.append(sign * rate, -sign)]
                    bounds_ub.append(bound)
        width = n_lambda + n_floors
        a_eq = sparse.csr_array(
            (np.ones(n_lambda), (np.concatenate(eq_rows), np.concatenate(eq_cols))), shape=(len(self.hulls), width)
        )
        a_ub = sparse.csr_array(
            (np.concatenate(ub_values), (np.concatenate(ub_rows), np.concatenate(ub_cols))),
            shape=(len(bounds_ub), width),
        )
        from scipy.optimize import linprog  # when fitting only: an audit imports this module

        result = linprog(
            cost,
            A_ub=a_ub,
            b_ub=np.array(bounds_ub),
            A_eq=a_eq,
            b_eq=np.ones(len(self.hulls)),
            bounds=(0.0, 1.0),
            method="highs",
        )
        if not result.success:  # the diagonal (random decisions) is always feasible; this is a solver fault
            raise RuntimeError(f"the threshold linear programme failed: {result.message}")
        rules, groups = {}, {}
        for g, (name, hull) in enumerate(zip(self.names, self.hulls, strict=True)):
            weights = np.clip(result.x[offsets[g] : offsets[g + 1]], 0.0, None)
            rules[name], fpr, tpr = _rule_from_weights(hull, weights / weights.sum())
            groups[name] = GroupPerformance(hull.positives, hull.negatives, tpr, fpr)
        return rules, Performance(groups)

    def _vertex_utility(self, objective: Objective) -> np.ndarray:
        """Each hull vertex's contribution to the objective (accuracy, balanced accuracy or minus cost)."""
        n = sum(h.positives + h.negatives for h in self.hulls)
        all_pos = sum(h.positives for h in self.hulls)
        all_neg = sum(h.negatives for h in self.hulls)
        if objective == "accuracy":
            tp, fn, fp, tn = 1 / n, 0.0, 0.0, 1 / n
        elif objective == "balanced_accuracy":
            tp, fn, fp, tn = 0.5 / all_pos, 0.0, 0.0, 0.5 / all_neg
        else:
            assert isinstance(objective, CostMatrix)
            tp, fn, fp, tn = (-objective.tp / n, -objective.fn / n, -objective.fp / n, -objective.tn / n)
        return np.concatenate(
            [
                h.positives * (tp * h.tpr + fn * (1 - h.tpr)) + h.negatives * (fp * h.fpr + tn * (1 - h.fpr))
                for h in self.hulls
            ]
        )


def _rule_from_weights(hull: GroupHull, weights: np.ndarray) -> tuple[GroupRule, float, float]:
    """The group's rule and its (FPR, TPR); a point on the upper hull uses its two neighbouring vertices."""
    fpr, tpr = float(weights @ hull.fpr), float(weights @ hull.tpr)
    chain = hull.upper_chain()
    upper_fpr, upper_tpr = hull.fpr[chain], hull.tpr[chain]
    if abs(np.interp(fpr, upper_fpr, upper_tpr) - tpr) <= 1e-9:
        right = int(np.clip(np.searchsorted(upper_fpr, fpr), 1, chain.size - 1))
        left = right - 1
        span = upper_fpr[right] - upper_fpr[left]
        p_right = (fpr - upper_fpr[left]) / span if span > 0 else 0.0
        mixture = {int(chain[left]): 1.0 - p_right, int(chain[right]): p_right}
    else:  # strictly inside the hull (equalized odds): keep the LP's own mixture of vertices
        mixture = {int(i): float(w) for i, w in enumerate(weights)}
    kept = {i: w for i, w in mixture.items() if w > _WEIGHT_FLOOR}
    total = sum(kept.values())
    rule = GroupRule(
        thresholds=tuple(float(hull.thresholds[i]) for i in kept),
        probabilities=tuple(float(w / total) for w in kept.values()),
    )
    return rule, fpr, tpr


def _check_options(constraint: str, tolerance: float, objective: Objective) -> None:
    if constraint not in CONSTRAINTS:
        raise ValueError(f"constraint must be one of {CONSTRAINTS}, not {constraint!r}")
    if not (np.isfinite(tolerance) and 0.0 <= tolerance <= 1.0):
        raise ValueError(f"tolerance must be a number in [0, 1], not {tolerance!r}")
    if not isinstance(objective, CostMatrix) and objective not in ("accuracy", "balanced_accuracy"):
        raise ValueError(f"objective must be 'accuracy', 'balanced_accuracy' or a CostMatrix, not {objective!r}")


@dataclass(frozen=True)
class ThresholdFit:
    """The fitted rules, the performance before (the audited predictions) and after (expected, fit data)."""

    constraint: Constraint
    tolerance: float
    objective: Objective
    favorable_label: int
    rules: dict[str, GroupRule]
    before: Performance
    after: Performance

    @property
    def achieved_gap(self) -> float:
        """The constrained disparity after mitigation (expected, on the fit data)."""
        return self.after.gap(self.constraint)

    @property
    def accuracy_cost(self) -> dict[str, float]:
        """Accuracy before minus after, overall (key ``"overall"``) and per group; negative is a gain."""
        cost = {"overall": self.before.accuracy - self.after.accuracy}
        cost.update({name: self.before.groups[name].accuracy - g.accuracy for name, g in self.after.groups.items()})
        return cost

    @property
    def decision(self) -> ThresholdRules:
        """The rules alone (what a thresholds file holds), to apply to new rows."""
        return ThresholdRules(self.rules, self.favorable_label)

    def favourable_probability(
        self, scores: Sequence[float] | np.ndarray, groups: Sequence[Any] | np.ndarray
    ) -> np.ndarray:
        """Each row's probability of the favourable decision (see :meth:`ThresholdRules.favourable_probability`)."""
        return self.decision.favourable_probability(scores, groups)

    def apply(
        self,
        scores: Sequence[float] | np.ndarray,
        groups: Sequence[Any] | np.ndarray,
        rng: np.random.Generator,
    ) -> np.ndarray:
        """Mitigated 0/1 predictions (raw labels) for new rows (see :meth:`ThresholdRules.apply`)."""
        return self.decision.apply(scores, groups, rng)

    def to_dict(self) -> dict[str, Any]:
        """The thresholds file: method, options, rules per group, performance before and after."""
        objective = self.objective if isinstance(self.objective, str) else {"cost_matrix": vars(self.objective)}
        return {
            "method": "group_thresholds",
            "reference": "Hardt, Price & Srebro (2016), Equality of Opportunity in Supervised Learning",
            "constraint": self.constraint,
            "tolerance": self.tolerance,
            "objective": objective,
            "favorable_label": self.favorable_label,
            "score_scale": "favourable score: score, or 1 - score when the favourable label is 0",
            "decision": "favourable when the favourable score is strictly above the group's threshold",
            "groups": {name: rule.to_dict() for name, rule in self.rules.items()},
            "before": self.before.to_dict(self.constraint),
            "after_expected": self.after.to_dict(self.constraint),
            "achieved_gap": self.achieved_gap,
            "accuracy_cost": self.accuracy_cost,
        }


def fit_thresholds(
    scores: Sequence[float] | np.ndarray,
    y_true: Sequence[Any] | np.ndarray,
    groups: Sequence[Any] | np.ndarray,
    *,
    y_pred: Sequence[Any] | np.ndarray,
    constraint: Constraint = "equal_opportunity",
    tolerance: float = 0.0,
    objective: Objective = "accuracy",
    favorable_label: int = 1,
) -> ThresholdFit:
    """Per-group thresholds maximising ``objective`` with the ``constraint``'s gap at most ``tolerance``.

    Parameters
    ----------
    scores
        The model's score per row, P(y = 1) (flipped internally when ``favorable_label`` is 0).
    y_true, y_pred
        Raw 0/1 truth and the audited predictions (the "before" performance).
    groups
        The sensitive group of each row (one attribute, or an intersection joined into one value).
    constraint, tolerance
        ``equal_opportunity`` bounds the TPR gap, ``equalized_odds`` the TPR and the FPR gaps.
    objective
        ``"accuracy"``, ``"balanced_accuracy"`` or a :class:`CostMatrix` (mean cost minimised).
    favorable_label
        The favourable label (policy ``favorable_label``).

    Returns
    -------
    ThresholdFit
        Rules per group, performance before and (expected) after, the achieved gap and the accuracy cost.
    """
    problem = ThresholdProblem.prepare(scores, y_true, groups, favorable_label=favorable_label)
    return fit_prepared(
        problem, y_true, groups, y_pred=y_pred, constraint=constraint, tolerance=tolerance, objective=objective
    )


def fit_prepared(
    problem: ThresholdProblem,
    y_true: Sequence[Any] | np.ndarray,
    groups: Sequence[Any] | np.ndarray,
    *,
    y_pred: Sequence[Any] | np.ndarray,
    constraint: Constraint = "equal_opportunity",
    tolerance: float = 0.0,
    objective: Objective = "accuracy",
) -> ThresholdFit:
    """:func:`fit_thresholds` on a prepared problem (the frontier solves one problem many times)."""
    before = performance_of(y_true, y_pred, groups, favorable_label=problem.favorable_label)
    rules, after = problem.solve(constraint, tolerance, objective)
    return ThresholdFit(constraint, tolerance, objective, problem.favorable_label, rules, before, after)
