"""Group thresholds (Hardt et al. 2016) and their frontier: exactness, held-out behaviour, Fairlearn side by side.

COMPAS: score = decile / 10, favourable label 0 (not flagged), groups = the three largest races (Native
American, Asian and Other are too small to fit thresholds on half of them). Generated data: three groups with
different base rates and score shifts, large enough that sampling slack is small.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from sklearn.base import BaseEstimator

import fairgate
from fairgate.mitigation.frontier import frontier
from fairgate.mitigation.rates import CostMatrix, GroupPerformance, Performance, performance_of
from fairgate.mitigation.rules import ThresholdRules
from fairgate.mitigation.thresholds import ThresholdFit, fit_thresholds

COMPAS_CSV = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "compas" / "compas-scores-two-years.csv"
LARGEST_RACES = ["African-American", "Caucasian", "Hispanic"]
Data = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # scores, y_true, groups, y_pred


@contextlib.contextmanager
def quiet_oracle() -> Iterator[None]:
    """Fairlearn's and pandas' own deprecation noise must not trip ``-W error``; our code runs outside."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@pytest.fixture(scope="module")
def compas() -> Data:
    raw = pl.read_csv(COMPAS_CSV)
    assert "decile_score_duplicated_0" in raw.columns  # the first decile_score column is the score
    frame = raw.filter(pl.col("race").is_in(LARGEST_RACES))
    assert frame.height == 6787
    return (
        (frame["decile_score"] / 10).to_numpy(),
        frame["two_year_recid"].to_numpy(),
        frame["race"].to_numpy(),
        frame["score_text"].is_in(["Medium", "High"]).cast(pl.Int64).to_numpy(),
    )


def generated(seed: int, n: int) -> Data:
    """Three groups, unequal sizes and base rates; the model scores group g2 lower at equal truth."""
    rng = np.random.default_rng(seed)
    groups = rng.choice(["g0", "g1", "g2"], size=n, p=[0.5, 0.3, 0.2])
    base = np.select([groups == "g0", groups == "g1"], [0.5, 0.35], 0.25)
    y = (rng.random(n) < base).astype(np.int64)
    shift = np.select([groups == "g0", groups == "g1"], [0.0, -0.05], -0.2)
    scores = 1 / (1 + np.exp(-(2.2 * y - 1.1 + shift * 4 + rng.normal(0, 1.0, n))))
    return scores, y, groups, (scores > 0.5).astype(np.int64)


def expected_performance(fit: ThresholdFit, data: Data, rows: np.ndarray) -> Performance:
    """The rule's expected performance on ``rows`` (its randomisation averaged out), as realised rates."""
    scores, y, groups, _ = data
    probability = fit.favourable_probability(scores[rows], groups[rows])
    favourable = y[rows] == fit.favorable_label
    rates = {}
    for name in fit.rules:
        member = groups[rows] == name
        pos, neg = member & favourable, member & ~favourable
        rates[name] = (int(pos.sum()), int(neg.sum()), probability[pos].mean(), probability[neg].mean())

    return Performance({k: GroupPerformance(p, q, float(t), float(f)) for k, (p, q, t, f) in rates.items()})


# ------------------------------------------------------------------------------------------- exactness
@pytest.mark.parametrize("constraint", ["equal_opportunity", "equalized_odds"])
@pytest.mark.parametrize(
    "objective", ["accuracy", "balanced_accuracy", CostMatrix(fp=1.0, fn=3.0)], ids=["acc", "bal", "cost"]
)
def test_the_rules_realise_the_optimised_rates(constraint: Any, objective: Any) -> None:
    """The per-row probabilities of the written rules reproduce the LP's rates, and the gap is within tolerance."""
    data = generated(1, 20_000)
    rows = np.ones(data[0].size, dtype=bool)
    fit = fit_thresholds(*data[:3], y_pred=data[3], constraint=constraint, tolerance=0.03, objective=objective)
    realised = expected_performance(fit, data, rows)
    for name, group in fit.after.groups.items():
        assert realised.groups[name].tpr == pytest.approx(group.tpr, abs=1e-9)
        assert realised.groups[name].fpr == pytest.approx(group.fpr, abs=1e-9)
    assert fit.before.gap(constraint) > 0.1  # there was something to mitigate
    assert fit.achieved_gap <= 0.03 + 1e-7
    assert fit.accuracy_cost["overall"] == pytest.approx(fit.before.accuracy - fit.after.accuracy)
    document = fit.to_dict()
    assert set(document["groups"]) == {"g0", "g1", "g2"}
    assert document["achieved_gap"] == fit.achieved_gap


def test_equal_opportunity_rules_are_one_threshold_or_two() -> None:
    """Equal opportunity sits on the upper ROC hull: each group needs at most Hardt's two-threshold randomisation."""
    data = generated(2, 20_000)
    fit = fit_thresholds(*data[:3], y_pred=data[3], tolerance=0.0)
    for rule in fit.rules.values():
        assert len(rule.thresholds) <= 2
        assert (rule.threshold is None) == (rule.randomisation is not None)
        if rule.randomisation is not None:
            low, high, p_high = rule.randomisation
            assert low < high
            assert 0 < p_high < 1


def test_a_symmetric_cost_matrix_is_accuracy_and_a_costly_miss_selects_more() -> None:
    data = generated(3, 20_000)
    accuracy = fit_thresholds(*data[:3], y_pred=data[3], tolerance=0.02)
    unit_costs = fit_thresholds(*data[:3], y_pred=data[3], tolerance=0.02, objective=CostMatrix(fp=1.0, fn=1.0))
    costly_miss = fit_thresholds(*data[:3], y_pred=data[3], tolerance=0.02, objective=CostMatrix(fp=1.0, fn=5.0))
    assert unit_costs.after.accuracy == pytest.approx(accuracy.after.accuracy, abs=1e-9)
    for name in accuracy.rules:
        assert costly_miss.after.groups[name].tpr > accuracy.after.groups[name].tpr


# ----------------------------------------------------------------------------------- held-out behaviour
def _sampling_slack(performance: Performance, z: float) -> float:
    """z standard errors of the TPR gap between the two extreme groups when a rule fit on one half is used on
    the other: each half's TPR estimate has variance p(1 - p)/n_g, so their difference has twice that."""
    rates = performance.groups
    high = max(rates, key=lambda k: rates[k].tpr)
    low = min(rates, key=lambda k: rates[k].tpr)
    variance = sum(2 * rates[k].tpr * (1 - rates[k].tpr) / rates[k].positives for k in (high, low))
    return z * float(np.sqrt(variance))


def test_compas_held_out_equal_opportunity_and_the_engine_agrees(compas: Data) -> None:
    """Fit on one half of COMPAS, re-audit the other half with the engine: the TPR gap is under the tolerance
    (plus 3 standard errors of the held-out/fit difference; the max-min over three groups is biased upward)."""
    scores, y, groups, y_pred = compas
    tolerance = 0.05
    fit_rows = np.random.default_rng(0).random(y.size) < 0.5
    held = ~fit_rows
    fit = fit_thresholds(
        scores[fit_rows], y[fit_rows], groups[fit_rows], y_pred=y_pred[fit_rows], tolerance=tolerance, favorable_label=0
    )
    mitigated = fit.apply(scores[held], groups[held], np.random.default_rng(1))
    before = performance_of(y[held], y_pred[held], groups[held], favorable_label=0)
    after = performance_of(y[held], mitigated, groups[held], favorable_label=0)
    slack = _sampling_slack(after, z=3.0)
    assert slack < 0.1  # the bound still means something
    assert before.tpr_gap > tolerance + slack  # the audited model fails it on the same rows
    assert after.tpr_gap <= tolerance + slack
    # The engine's own re-audit of the mitigated half measures the same gap (same favourable recoding).
    policy = fairgate.Policy.from_mapping(
        {
            "fairness_checker": {
                "favorable_label": 0,
                "sensitive_attributes": [{"name": "race"}],
                "metrics": [{"name": "equal_opportunity_difference", "threshold": 0.1}],
                "intersectional_analysis": {"min_group_size": 1},
                "statistics": {"n_bootstrap": 0},
            }
        },
        source="test-policy",
    )
    frame = pl.DataFrame({"race": groups[held], "y_true": y[held], "y_pred": mitigated, "score": scores[held]})
    result = fairgate.audit(frame, policy).to_dict()["results"]
    (judged,) = [r for r in result if r["metric"] == "equal_opportunity_difference" and r["slicing"] == ["race"]]
    assert judged["value"] == pytest.approx(after.tpr_gap, abs=1e-12)
    # The accuracy price, per group too, is reported.
    assert set(fit.accuracy_cost) == {"overall", *LARGEST_RACES}
    assert abs(fit.accuracy_cost["overall"]) < 0.05


@pytest.mark.parametrize("constraint", ["equal_opportunity", "equalized_odds"])
def test_generated_held_out_gap_is_within_tolerance(constraint: Any) -> None:
    """200k rows: fit on half, draw randomised decisions on the other half; the realised gap(s) stay within
    the tolerance plus 4 standard errors of the fit/held-out difference (about 0.025 here)."""
    data = scores, y, groups, y_pred = generated(4, 200_000)
    fit_rows = np.random.default_rng(5).random(y.size) < 0.5
    held = ~fit_rows
    tolerance = 0.02
    fit = fit_thresholds(
        scores[fit_rows],
        y[fit_rows],
        groups[fit_rows],
        y_pred=y_pred[fit_rows],
        constraint=constraint,
        tolerance=tolerance,
    )
    after = performance_of(y[held], fit.apply(scores[held], groups[held], np.random.default_rng(6)), groups[held])
    slack = _sampling_slack(after, z=4.0)
    assert slack < 0.03
    assert after.tpr_gap <= tolerance + slack
    if constraint == "equalized_odds":
        assert after.fpr_gap <= tolerance + slack
    before = performance_of(y[held], y_pred[held], groups[held])
    assert before.gap(constraint) > 0.1
    # Decisions drawn at random average to the rule's expected rates (the randomisation is what was fitted).
    expected = expected_performance(fit, data, held)
    for name, group in after.groups.items():
        assert group.tpr == pytest.approx(expected.groups[name].tpr, abs=4 * np.sqrt(0.25 / group.positives))


# ------------------------------------------------------------------------------------ Fairlearn side by side
class ScoreColumn(BaseEstimator):  # type: ignore[misc]
    """A fitted 'estimator' whose prediction is the score column: Fairlearn thresholds the audited scores."""

    def fit(self, features: Any, labels: Any) -> ScoreColumn:
        self.fitted_ = True
        return self

    def predict(self, features: Any) -> np.ndarray:
        return np.asarray(features)[:, 0]


def fairlearn_expected(data: Data, constraints: str, objective: str, tol: float | None, favourable: int) -> Performance:
    """ThresholdOptimizer on the favourable-recoded scores and labels; its exact expected rates (``_pmf_predict``)."""
    from fairlearn.postprocessing import ThresholdOptimizer

    scores, y, groups, _ = data
    favourable_score = 1 - scores if favourable == 0 else scores
    truth = (y == favourable).astype(int)
    with quiet_oracle():
        optimizer = ThresholdOptimizer(
            estimator=ScoreColumn().fit(None, None),
            constraints=constraints,
            objective=objective,
            prefit=True,
            predict_method="predict",
            tol=tol,
        )
        optimizer.fit(favourable_score[:, None], truth, sensitive_features=groups)
        probability = optimizer._pmf_predict(favourable_score[:, None], sensitive_features=groups)[:, 1]

    rates = {}
    for name in np.unique(groups):
        pos, neg = (groups == name) & (truth == 1), (groups == name) & (truth == 0)
        rates[str(name)] = GroupPerformance(
            int(pos.sum()), int(neg.sum()), float(probability[pos].mean()), float(probability[neg].mean())
        )
    return Performance(rates)


FAIRLEARN_CASES = [
    ("compas", "equal_opportunity", "true_positive_rate_parity", "accuracy", 0.02),
    ("compas", "equal_opportunity", "true_positive_rate_parity", "accuracy", 0.0),
    ("compas", "equal_opportunity", "true_positive_rate_parity", "balanced_accuracy", 0.0),
    ("compas", "equalized_odds", "equalized_odds", "accuracy", 0.0),
    ("generated", "equal_opportunity", "true_positive_rate_parity", "accuracy", 0.01),
    ("generated", "equalized_odds", "equalized_odds", "accuracy", 0.0),
]


@pytest.mark.parametrize(("source", "constraint", "fl_constraint", "objective", "tolerance"), FAIRLEARN_CASES)
def test_side_by_side_with_fairlearn(
    compas: Data, source: str, constraint: Any, fl_constraint: str, objective: Any, tolerance: float
) -> None:
    """Our constraint is met at least as tightly as ThresholdOptimizer's (up to its 1/grid_size grid step) and
    our objective is at least Fairlearn's; accuracy within 0.5 percentage points or better."""
    data, favourable = (compas, 0) if source == "compas" else (generated(7, 30_000), 1)
    ours = fit_thresholds(
        *data[:3],
        y_pred=data[3],
        constraint=constraint,
        tolerance=tolerance,
        objective=objective,
        favorable_label=favourable,
    )
    fl_objective = {"accuracy": "accuracy_score", "balanced_accuracy": "balanced_accuracy_score"}[objective]
    fl_tol = tolerance if constraint == "equal_opportunity" and tolerance > 0 else None
    theirs = fairlearn_expected(data, fl_constraint, fl_objective, fl_tol, favourable)
    grid_step = 1 / 1000  # ThresholdOptimizer's default grid_size: its rates land on this grid
    assert ours.achieved_gap <= tolerance + 1e-7
    assert ours.achieved_gap <= theirs.gap(constraint) + grid_step
    assert ours.after.objective_value(objective) >= theirs.objective_value(objective) - 1e-9
    assert ours.after.accuracy >= theirs.accuracy - 0.005


# ------------------------------------------------------------------------------------------------ frontier
def test_compas_frontier_is_pareto_and_starts_at_parity(compas: Data) -> None:
    scores, y, groups, y_pred = compas
    curve = frontier(scores, y, groups, y_pred=y_pred, steps=11, favorable_label=0)
    tolerances = [p.tolerance for p in curve.points]
    assert tolerances[0] == 0.0
    assert tolerances[-1] == pytest.approx(curve.current.gap)
    assert curve.current.gap > 0.2
    for point in curve.points:
        assert point.gap <= point.tolerance + 1e-7
    accuracies = [p.accuracy for p in curve.points]
    # A looser tolerance only enlarges the feasible set: the best accuracy never falls.
    assert all(a <= b + 1e-12 for a, b in itertools.pairwise(accuracies))
    # The audited rule (one threshold on the decile) is feasible at its own gap, so the frontier's end beats it.
    assert curve.points[-1].accuracy >= curve.current.accuracy - 1e-12
    front = curve.pareto
    assert front[0].gap <= 1e-7
    assert all(a.gap < b.gap and a.accuracy < b.accuracy for a, b in itertools.pairwise(front))
    for point in curve.points:  # every sweep point is matched or beaten by a front point
        assert any(p.gap <= point.gap and p.accuracy >= point.accuracy for p in front)
    assert curve.to_dict()["pareto"][0]["tolerance"] == 0.0


# ---------------------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s, y, g: (s, y, np.full(g.size, "only")), "at least two groups"),
        (lambda s, y, g: (s, np.where(g == "g2", 1, y), g), "group 'g2' has no rows with the unfavourable truth"),
        (lambda s, y, g: (np.where(np.arange(s.size) == 3, np.nan, s), y, g), "scores must be finite"),
        (lambda s, y, g: (s, np.where(np.arange(y.size) == 3, 2, y), g), "labels must be 0 or 1"),
    ],
)
def test_bad_input_is_named(change: Any, message: str) -> None:
    scores, y, groups, y_pred = generated(8, 2_000)
    with pytest.raises(ValueError, match=message):
        fit_thresholds(*change(scores, y, groups), y_pred=y_pred)


def test_bad_options_and_unknown_groups_are_named() -> None:
    scores, y, groups, y_pred = generated(9, 2_000)
    with pytest.raises(ValueError, match="constraint must be one of"):
        fit_thresholds(scores, y, groups, y_pred=y_pred, constraint="demographic_parity")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tolerance must be a number"):
        fit_thresholds(scores, y, groups, y_pred=y_pred, tolerance=-0.1)
    fit = fit_thresholds(scores, y, groups, y_pred=y_pred)
    with pytest.raises(ValueError, match=r"groups \['g9'\] have no fitted threshold"):
        fit.apply(scores[:3], np.array(["g0", "g9", "g1"]), np.random.default_rng(0))


# ----------------------------------------------------------------------------------------- thresholds file
@pytest.mark.parametrize("constraint", ["equal_opportunity", "equalized_odds"])
def test_the_thresholds_file_round_trips(compas: Data, constraint: Any) -> None:
    """Written as JSON and read back, the rules make the same decisions (deployment applies the file)."""
    scores, y, groups, y_pred = compas
    fit = fit_thresholds(scores, y, groups, y_pred=y_pred, constraint=constraint, favorable_label=0)
    loaded = ThresholdRules.from_dict(json.loads(json.dumps(fit.to_dict())))
    assert loaded.favorable_label == 0
    np.testing.assert_allclose(
        loaded.favourable_probability(scores, groups), fit.favourable_probability(scores, groups)
    )
    rng_a, rng_b = np.random.default_rng(3), np.random.default_rng(3)
    np.testing.assert_array_equal(loaded.apply(scores, groups, rng_a), fit.apply(scores, groups, rng_b))


@pytest.mark.parametrize(
    ("groups_entry", "message"),
    [
        ({"a": {"threshold": "high"}}, "a threshold must be a finite number"),
        ({"a": {"t_low": 0.2, "t_high": 0.4, "p_high": 1.5}}, "p_high must be a probability"),
        ({"a": {"mixture": [{"threshold": 0.2, "probability": 0.3}]}}, "sum to 1"),
        ({"a": {"cutoff": 0.2}}, "got keys \\['cutoff'\\]"),
    ],
)
def test_a_malformed_thresholds_file_is_named(groups_entry: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ThresholdRules.from_dict({"groups": groups_entry, "favorable_label": 1})


# --------------------------------------------------------------------------------------------- optimality
@pytest.mark.parametrize("seed", range(5))
def test_no_pair_of_deterministic_thresholds_beats_the_programme(seed: int) -> None:
    """Brute force on coarse scores (8 levels, 2 groups): every feasible pair of plain thresholds is at most as
    accurate as the LP's (possibly randomised) optimum, and the best such pair is matched when it is feasible."""
    rng = np.random.default_rng(100 + seed)
    n = 3000
    groups = rng.choice(["a", "b"], size=n, p=[0.6, 0.4])
    y = (rng.random(n) < np.where(groups == "a", 0.5, 0.3)).astype(np.int64)
    scores = np.clip(np.round((y * 0.3 + rng.random(n) * 0.7 - 0.1 * (groups == "b")) * 8) / 8, 0, 1)
    tolerance = 0.05
    fit = fit_thresholds(scores, y, groups, y_pred=(scores > 0.5).astype(int), tolerance=tolerance)
    levels = np.concatenate([[-np.inf], np.unique(scores)])
    best = 0.0
    for t_a, t_b in itertools.product(levels, levels):
        decided = np.where(groups == "a", scores > t_a, scores > t_b).astype(int)
        performance = performance_of(y, decided, groups)
        if performance.tpr_gap <= tolerance:
            best = max(best, performance.accuracy)
    assert fit.achieved_gap <= tolerance + 1e-7
    assert fit.after.accuracy >= best - 1e-12


@pytest.mark.parametrize("constraint", ["equal_opportunity", "equalized_odds"])
def test_a_group_with_one_score_value_is_randomised_onto_the_diagonal(constraint: Any) -> None:
    """A group the model cannot rank (one score for all) can only reach the diagonal TPR = FPR, by randomising
    between deciding nobody and everybody favourably; the others are matched to it."""
    rng = np.random.default_rng(10)
    n = 4000
    groups = rng.choice(["ranked", "flat"], size=n)
    y = (rng.random(n) < 0.4).astype(np.int64)
    scores = np.where(groups == "flat", 0.5, np.clip(0.3 * y + rng.random(n) * 0.7, 0, 1))
    fit = fit_thresholds(scores, y, groups, y_pred=(scores > 0.4).astype(int), constraint=constraint)
    flat = fit.after.groups["flat"]
    assert flat.tpr == pytest.approx(flat.fpr, abs=1e-9)
    assert set(fit.rules["flat"].thresholds) <= {np.inf, -np.inf}
    assert fit.achieved_gap <= 1e-7
